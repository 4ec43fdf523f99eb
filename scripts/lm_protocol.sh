#!/usr/bin/env bash
# Issue #23's protocol for the language-model experiment: 10 runs per mode, three master seeds,
# three blacklists (rules 1, 2 and, for greedy decoding, 3), sampled and greedy decoding, 50,000 executions per run, on the demo-size
# model (H 128, 1,500 training steps; trained and cached on first use). One table per
# (list, decoding, master seed) in OUT (default out/lm); scripts/lm_summary.py reads them.
#   RUNS (10), EXEC (50000), MASTERS ("1 2 3"), JOBS (2): runs at once, OUT.
# Fuzzing counts do not depend on the machine's load (one seed gives one run); the executions per
# second do, and compare modes only within one table.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${root}/build/experiments/char_rnn"
out="${OUT:-${root}/out/lm}"
runs="${RUNS:-10}" exec="${EXEC:-50000}" jobs="${JOBS:-2}"
mkdir -p "${out}"
model=(--hidden 128 --train-steps 1500 --jobs "${jobs}")
list1="${root}/experiments/char_rnn_blacklist_h128.txt"
list2="${root}/experiments/char_rnn_blacklist_rare_h128.txt"
one() {  # name, then char_rnn's fuzz arguments
  local name="$1"; shift
  [[ -s "${out}/${name}.txt" ]] && return 0
  echo "lm_protocol: ${name}" >&2
  "${bin}" "${model[@]}" "$@" --runs "${runs}" --executions "${exec}" > "${out}/${name}.part"
  mv "${out}/${name}.part" "${out}/${name}.txt"
}
for m in ${MASTERS:-1 2 3}; do
  one "rule1-sampled-m${m}" fuzz --blacklist "${list1}" --seed "${m}" --modes random,cgf,combination
done
for m in ${MASTERS:-1 2 3}; do
  one "rule2-sampled-m${m}" fuzz --blacklist "${list2}" --seed "${m}" --modes random,cgf,combination
done
# Greedy: the prompt is the whole input (no noise to aim); combination = fitness + tail edits +
# projected coverage.
for m in ${MASTERS:-1 2 3}; do
  one "rule1-greedy-m${m}" --temperature 0 fuzz --blacklist "${list1}" --seed "${m}" --modes random,combination
done
# Rule 3 (README): words greedy decoding can say (scripts/lm_greedy_list.sh makes the list).
list3="${root}/experiments/char_rnn_blacklist_greedy_h128.txt"
for m in ${MASTERS:-1 2 3}; do
  one "rule3-greedy-m${m}" --temperature 0 fuzz --blacklist "${list3}" --seed "${m}" --modes random,cgf,combination
done
for m in ${MASTERS:-1 2 3}; do
  one "rule1-sampled-alone-m${m}" fuzz --blacklist "${list1}" --seed "${m}" --modes fitness,aim,projection,fitness-aim
done
