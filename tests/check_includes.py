#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include graph of include/nnfuzz follows the folders (issue #21, docs/README layout):
  A. a header includes only headers of its own level or lower (levels below);
  B. the core never includes models/, targets/, data/ or adapters/;
  C. only data/idx.hpp includes <zlib.h> (the nnfuzz::data link boundary);
  D. callbacks.hpp, campaign/ and stages.hpp do not include the loop (fuzzer.hpp);
  E. a forwarding header (an earlier release's path, FORWARDING) warns with `#warning` and MSVC's
     `#pragma message`, each naming its old path, and includes only current headers;
     no header includes a forwarding header;
  F. detail/ is two levels: its ground (detail/*.hpp, detail/kernels/) includes only ground
     headers — no public header — and may be included by any header; the loop's internals
     (detail/loop/: hooks, input spaces, policy checks) may include level-1 public headers and are
     included only by fuzzer.hpp and each other.
Exits 1 naming every arrow that breaks a rule.   Usage: check_includes.py [include/nnfuzz]"""
import os, posixpath, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'include', 'nnfuzz')
LEVELS = [  # (level, path pattern); the first match wins
    (0, r'detail/[a-z_]+\.hpp|detail/kernels/.*'),  # detail's ground (rule F)
    (1, r'(input|rng|corpus|fuzz_types|feedback|version|tolerance|focus)\.hpp'),
    (2, r'samplers\.hpp|mutators(\.hpp|/.*)|objectives(\.hpp|/.*)|coverage/.*|detail/loop/.*|models/.*|data/.*|'
        r'adapters/.*|stages\.hpp|callbacks\.hpp|function_model\.hpp|regression/.*'),
    (3, r'fuzzer\.hpp|minimize(_edits)?\.hpp'),
    (4, r'parallel\.hpp|baselines\.hpp|campaign/.*|targets/.*'),
    (5, r'testing/.*|nnfuzz\.hpp'),
]
OUTER = ('models/', 'targets/', 'data/', 'adapters/')
# nnfuzz 0.1's header paths that moved in 0.2: forwarding headers, removed in 0.3 (CONTRIBUTING.md).
FORWARDING = (r'io/(campaign|sync|idx|text|weights)\.hpp|models/(targets|versions|char_rnn_target)\.hpp|'
              r'text_(mutators|objectives)\.hpp|testing\.hpp|coverage/threshold\.hpp')


def level(path):
    for lv, pat in LEVELS:
        if re.fullmatch(pat, path):
            return lv
    raise SystemExit(f'check_includes.py: no level for {path}: add it to LEVELS')


errors = []
for d, _, files in os.walk(root):
    for f in sorted(files):
        if not f.endswith('.hpp'):
            continue
        rel = posixpath.relpath(posixpath.join(d, f), root).replace(os.sep, '/')
        text = open(os.path.join(d, f), encoding='utf-8').read()
        forwarding = re.fullmatch(FORWARDING, rel) is not None
        if forwarding:
            incs = [posixpath.normpath(posixpath.join(posixpath.dirname(rel), i))
                    for i in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M)]
            # Directives as clang-format leaves them: indented after '#', continued with '\'.
            flat = re.sub(r'\s*\\\n\s*', ' ', text)
            quoted = f'"nnfuzz/{re.escape(rel)} is deprecated'
            for name, warn in (('#warning', rf'#\s*warning\s+{quoted}'), ('#pragma message', rf'#\s*pragma\s+message\(\s*{quoted}')):
                if not re.search(warn, flat):
                    errors.append(f'{rel} is a forwarding header but does not warn ({name} "nnfuzz/{rel} is deprecated ...")')
            for to in incs:
                if re.fullmatch(FORWARDING, to):
                    errors.append(f'{rel} forwards to {to}, itself a forwarding header')
                elif not os.path.exists(os.path.join(root, to)):
                    errors.append(f'{rel} includes "{to}", which does not exist')
            continue
        if '<zlib.h>' in text and rel != 'data/idx.hpp':
            errors.append(f'{rel} includes <zlib.h> (only data/idx.hpp may: the nnfuzz::data boundary)')
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            to = posixpath.normpath(posixpath.join(posixpath.dirname(rel), inc))
            if inc.startswith('nnfuzz/'):
                to = inc[len('nnfuzz/'):]
            if not os.path.exists(os.path.join(root, to)):
                errors.append(f'{rel} includes "{inc}", which does not exist')
                continue
            if re.fullmatch(FORWARDING, to):
                errors.append(f'{rel} includes {to}, a deprecated forwarding header')
                continue
            if level(to) > level(rel):
                errors.append(f'{rel} (level {level(rel)}) includes {to} (level {level(to)}): a lower folder '
                              'must not include a higher one')
            if not rel.startswith(OUTER) and rel != 'nnfuzz.hpp' and to.startswith(OUTER):
                errors.append(f'{rel} is core but includes {to}')
            if rel in ('nnfuzz.hpp',) and to.startswith(OUTER):
                errors.append(f'the umbrella nnfuzz.hpp includes {to} (models, targets, data and adapters are '
                              'included by name)')
            if rel.startswith('detail/') and not rel.startswith('detail/loop/') and level(to) != 0:
                errors.append(f'{rel} is in detail/\'s ground but includes {to}: ground headers include only '
                              'detail/*.hpp and detail/kernels/ (loop internals go in detail/loop/)')
            if to.startswith('detail/loop/') and rel != 'fuzzer.hpp' and not rel.startswith('detail/loop/'):
                errors.append(f'{rel} includes {to}: the loop\'s internals are included by fuzzer.hpp only')
            if to == 'fuzzer.hpp' and (rel in ('callbacks.hpp', 'stages.hpp') or rel.startswith('campaign/')):
                errors.append(f'{rel} includes the loop (fuzzer.hpp); include fuzz_types.hpp')
for e in errors:
    print('check_includes.py:', e)
print(f'check_includes.py: {len(errors)} broken rule(s)')
sys.exit(1 if errors else 0)
