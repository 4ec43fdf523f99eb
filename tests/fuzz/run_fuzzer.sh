#!/usr/bin/env bash
# Runs one libFuzzer harness on a fresh copy of its seed corpus, for ctest (label `fuzz`).
#
# Usage: run_fuzzer.sh <harness> <seed-dir> <work-dir> [libFuzzer options...]
# <work-dir> is emptied and receives corpus/ (the seeds plus whatever the run adds: the seed
# directory is never written to), fuzz.log and, on a crash, the reproducer (crash-*, leak-*,
# timeout-*, oom-*). Exits non-zero on any crash, like the harness. The last line names the
# harness and the number of executions (libFuzzer's stat::number_of_executed_units).
set -euo pipefail

harness="$1" seeds="$2" work="$3"
shift 3
name="$(basename "${harness}")"
[[ -d "${seeds}" ]] || { echo "run_fuzzer: no seed corpus ${seeds}" >&2; exit 1; }

rm -rf "${work}"
mkdir -p "${work}"
cp -R "${seeds}" "${work}/corpus"
seed_count="$(find "${work}/corpus" -type f | wc -l)"

status=0
"${harness}" "$@" -artifact_prefix="${work}/" "${work}/corpus" 2>&1 | tee "${work}/fuzz.log" || status=$?

execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "${work}/fuzz.log" | tail -n 1)"
corpus="$(find "${work}/corpus" -type f | wc -l)"
if [[ "${status}" -ne 0 ]]; then
  echo "run_fuzzer: ${name}: FAILED (exit ${status}) after ${execs:-?} executions; reproducers:"
  find "${work}" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'slow-unit-*' \) \
    -printf '  %p\n' || true
  echo "  replay one with: ${harness} <file>"
  exit "${status}"
fi
echo "run_fuzzer: ${name}: ${execs:-?} executions, corpus ${seed_count} seeds -> ${corpus} files, no crash"
