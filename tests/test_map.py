#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Which test files test each public header of include/nnfuzz: a test file tests the headers it
includes by name (`#include <nnfuzz/...>`); test_<name>.cpp also tests the headers named <name>*.hpp
and the folder <name>/ (test_mutators.cpp: mutators.hpp and mutators/); a header reached only
through an umbrella is named in ALSO below with the test that exercises it. Prints the map as markdown (docs/testing.md holds it between `<!-- test-map -->` markers);
--check exits 1 when a public header (not detail/, not a 0.1 forwarding header) is tested by no
file, or when docs/testing.md's copy is not the map this prints.
Usage: test_map.py [--check] [ROOT]"""
import os, re, sys

args = [a for a in sys.argv[1:] if a != '--check']
check = '--check' in sys.argv[1:]
root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
inc = os.path.join(root, 'include', 'nnfuzz')
sys.path.insert(0, os.path.join(root, 'tests'))
FORWARDING = (r'io/(campaign|sync|idx|text|weights)\.hpp|models/(targets|versions|char_rnn_target)\.hpp|'
              r'text_(mutators|objectives)\.hpp|testing\.hpp|coverage/threshold\.hpp')
# Headers whose tests reach them through an umbrella header, and the test file that exercises them.
ALSO = {
    'feedback.hpp': ['tests/test_samplers.cpp'],       # BatchFeedback, the samplers' feedback()
    'focus.hpp': ['tests/test_text_objectives.cpp'],   # InputFocus, aimed noise
    'fuzz_types.hpp': ['tests/test_fuzzer.cpp'],       # FuzzOptions, Finding, FuzzStats
    'stages.hpp': ['tests/test_sync.cpp', 'tests/test_minimize.cpp'],  # the shipped stages' perform(ctx)
    'version.hpp': ['tests/consumer/app/main.cpp'],    # NNFUZZ_VERSION_* against the installed package
}
headers = []
for d, _, files in os.walk(inc):
    for f in files:
        rel = os.path.relpath(os.path.join(d, f), inc).replace(os.sep, '/')
        if f.endswith('.hpp') and not rel.startswith('detail/') and not re.fullmatch(FORWARDING, rel):
            headers.append(rel)
headers.sort()
tests = {}
tdir = os.path.join(root, 'tests')
for d, _, files in os.walk(tdir):
    for f in files:
        if f.endswith('.cpp'):
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root).replace(os.sep, '/')
            if '/compile_fail/' in rel:
                continue
            text = open(path, encoding='utf-8').read()
            tests[rel] = set(re.findall(r'^\s*#\s*include\s+[<"]nnfuzz/([^>"]+)[>"]', text, re.M))
by_header = {h: [] for h in headers}
for t, incs in sorted(tests.items()):
    stem = os.path.basename(t)[len('test_'):-len('.cpp')] if os.path.basename(t).startswith('test_') else None
    for h in headers:
        named = stem and (os.path.basename(h).startswith(stem) or h.startswith(stem + '/'))
        if h in incs or named or t in ALSO.get(h, []):
            by_header[h].append(t)
lines = ['| header | tested in |', '|---|---|']
for h in headers:
    ts = by_header[h]
    shown = ', '.join(f'`{t}`' for t in ts[:4]) + (f' and {len(ts) - 4} more' if len(ts) > 4 else '')
    lines.append(f'| `{h}` | ' + (shown if ts else '**none**') + ' |')
table = '\n'.join(lines) + '\n'
if not check:
    sys.stdout.write(table)
    sys.exit(0)
errors = [f'{h}: no test file includes it or is named after it' for h in headers if not by_header[h]]
doc = open(os.path.join(root, 'docs', 'testing.md'), encoding='utf-8').read()
m = re.search(r'<!-- test-map -->\n(.*?)<!-- /test-map -->', doc, re.S)
if not m:
    errors.append('docs/testing.md has no <!-- test-map --> block')
elif m.group(1) != table:
    errors.append('docs/testing.md\'s test map is stale: regenerate it with tests/test_map.py')
for e in errors:
    print('test_map.py:', e)
print(f'test_map.py: {len(headers)} public headers, {len(errors)} problem(s)')
sys.exit(1 if errors else 0)
