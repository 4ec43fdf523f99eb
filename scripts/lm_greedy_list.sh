#!/usr/bin/env bash
# Applies the greedy blacklist's rule (rule 3, README "Progress toward a word") to the demo-size
# model (H 128, 1,500 training steps) and writes the list to OUT (default
# experiments/char_rnn_blacklist_greedy_h128.txt). Work files in out/lm-greedy-list/.
#   1. candidates: words of letters only, >= 5 letters, >= 20 occurrences in all the fortunes;
#   2. reachable: those the greedy 80-character continuation of some 20-character window of the
#      fortunes (stride 20) says;
#   3. screen: drop those the greedy continuations of the 100 seed prompts or of one
#      50,000-execution random-search run (master seed 2018) say;
#   4. the 10 most frequent remaining (ties: alphabetical order).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${root}/build/experiments/char_rnn"
work="${root}/out/lm-greedy-list"
out="${OUT:-${root}/experiments/char_rnn_blacklist_greedy_h128.txt}"
fortunes="${FORTUNES:-/usr/share/games/fortunes}"
mkdir -p "${work}"
model=(--hidden 128 --train-steps 1500 --jobs "${JOBS:-2}" --temperature 0)
/usr/bin/python3 - "${fortunes}" "${work}" <<'PY'
import collections, os, re, sys
folder, work = sys.argv[1], sys.argv[2]
counts, windows = collections.Counter(), []
for name in sorted(os.listdir(folder)):
    path = os.path.join(folder, name)
    if "." in name or not os.path.isfile(path):
        continue
    for fortune in open(path, encoding="latin-1").read().split("\n%\n"):
        fortune = fortune.strip()
        if not fortune:
            continue
        counts.update(w for w in re.findall(r"[a-z0-9']+", fortune.lower()) if w.isalpha() and len(w) >= 5)
        text = "".join(c for c in re.sub(r"\s+", " ", fortune) if 32 <= ord(c) < 127)
        windows += [text[i:i + 20] for i in range(0, len(text) - 19, 20)]
candidates = sorted((w for w, n in counts.items() if n >= 20), key=lambda w: (-counts[w], w))
open(os.path.join(work, "candidates.txt"), "w").write("\n".join(candidates) + "\n")
open(os.path.join(work, "counts.txt"), "w").write("\n".join(f"{w} {counts[w]}" for w in candidates) + "\n")
open(os.path.join(work, "windows.txt"), "w").write("\n".join(windows) + "\n")
print(f"lm_greedy_list: {len(candidates)} candidates, {len(windows)} windows", file=sys.stderr)
PY
found() {  # the words a char_rnn fuzz table reports found
  sed -n '/^| word | runs | prompt/,/^$/p' "$1" | awk -F'|' 'NR > 2 && NF > 3 { gsub(/ /, "", $2); print $2 }'
}
n_windows=$(wc -l < "${work}/windows.txt")
"${bin}" "${model[@]}" fuzz --blacklist "${work}/candidates.txt" --prompts "${work}/windows.txt" --runs 1 \
  --executions "${n_windows}" --seed 1 --modes random --out "${work}/reach" > "${work}/reach.txt"
found "${work}/reach.txt" | sort -u > "${work}/reachable.txt"
"${bin}" "${model[@]}" fuzz --blacklist "${work}/reachable.txt" --runs 1 --executions 50000 --seed 2018 \
  --modes random --out "${work}/screen" > "${work}/screen.txt"
found "${work}/screen.txt" | sort -u > "${work}/screened.txt"
/usr/bin/python3 - "${work}" "${out}" <<'PY'
import os, sys
work, out = sys.argv[1], sys.argv[2]
counts = dict(l.split() for l in open(os.path.join(work, "counts.txt")))
reach = {l.strip() for l in open(os.path.join(work, "reachable.txt")) if l.strip()}
screened = {l.strip() for l in open(os.path.join(work, "screened.txt")) if l.strip()}
left = sorted(reach - screened, key=lambda w: (-int(counts[w]), w))
print(f"lm_greedy_list: {len(reach)} reachable, {len(screened)} screened out, {len(left)} left", file=sys.stderr)
open(out, "w").write("\n".join(left[:10]) + "\n")
print("\n".join(f"{w} {counts[w]}" for w in left[:10]))
PY
