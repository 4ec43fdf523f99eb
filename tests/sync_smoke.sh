#!/usr/bin/env bash
# Smoke test of a campaign shared through a sync directory (docs/scaling.md): two local workers
# of mnist_nan started by scripts/launch_local.sh on a tiny synthetic data set, `nnfuzz whatsup`'s
# summary, JSON and CSV, a late joiner that imports what they found, a restarted worker that resumes from its
# directory, `nnfuzz merge` (and a worker resuming the merged directory), and the deployment manifests (tests/check_deploy.py: they parse, and run the same
# command line as the launcher below).
#   tests/sync_smoke.sh BUILD_DIR WORK_DIR
set -euo pipefail
build="$1"
work="$2"
ex="${build}/examples"
xp="${build}/experiments"
nnfuzz="${build}/cli/nnfuzz"
here="$(cd "$(dirname "$0")" && pwd)"
rm -rf "${work}"
mkdir -p "${work}"
fail() { echo "sync_smoke.sh: FAIL: $*" >&2; exit 1; }
# nnfuzz's exit status: 0 nothing found, 1 found, 2 an error. ok_status CMD...: runs it, fails on 2.
ok_status() { local rc=0; "$@" || rc=$?; (( rc <= 1 )) || fail "$* exited ${rc}"; return 0; }

"${build}/tests/make_tiny_mnist" "${work}/data" 300 100
"${xp}/mnist_train" --data "${work}/data" --models "${work}/models" --train-steps 200 --recipes tf-nan > /dev/null
sync="${work}/sync"
common=(--models "${work}/models" --train-steps 200 --seeds 3 --sync-interval 0.2)
# DEPLOY-COMMAND (tests/check_deploy.py compares deploy/ with this line)
NNFUZZ_LOG_DIR="${work}/logs" "${here}/../scripts/launch_local.sh" 2 -- "${xp}/mnist_nan" --data "${work}/data" --models "${work}/models" --executions 6000 --max-findings 1 --sync "${sync}" --worker {} --train-steps 200 --seeds 3 --sync-interval 0.2 \
  || fail "launch_local.sh: a worker failed: $(cat "${work}"/logs/*.log)"
for i in 0 1; do
  grep -Eq "^worker ${i}: [0-9]+ executions in [0-9.e+-]+ s; corpus [0-9]+ \(imported [0-9]+, exported [0-9]+\)" \
    "${work}/logs/worker-${i}.log" || fail "worker ${i}: no summary line: $(cat "${work}/logs/worker-${i}.log")"
  [[ -s "${sync}/${i}/stats.json" && -s "${sync}/${i}/corpus.bin" ]] || fail "worker ${i}: no stats.json or corpus.bin"
done
exported=0
for n in $(sed -nE 's/.*exported ([0-9]+)\).*/\1/p' "${work}"/logs/worker-*.log); do exported=$((exported + n)); done
(( exported > 0 )) || fail "the workers exported nothing"

ok_status "${nnfuzz}" whatsup "${sync}" > "${work}/whatsup.txt"
grep -Eq "^campaign ${sync}: 2 workers \(0 alive\), [0-9]+ executions" "${work}/whatsup.txt" || fail "whatsup: $(cat "${work}/whatsup.txt")"
[[ $(grep -Ec '^[01] +done +[0-9]+' "${work}/whatsup.txt") == 2 ]] || fail "whatsup: no line per worker"
rc=0
"${nnfuzz}" whatsup "${sync}" --json > "${work}/whatsup.json" || rc=$?
python3 -c "import json,sys; j=json.load(open(sys.argv[1])); rc=int(sys.argv[2]); assert len(j['workers'])==2 and all(w['status']=='done' for w in j['workers']), j; assert j['executions']==sum(w['executions'] for w in j['workers']), j; assert rc==(1 if j['unique_findings'] else 0), (rc, j['unique_findings'])" \
  "${work}/whatsup.json" "${rc}" || fail "whatsup --json (exit ${rc}): $(cat "${work}/whatsup.json")"
ok_status "${nnfuzz}" whatsup "${sync}" --csv > "${work}/plot.csv"
head -n1 "${work}/plot.csv" | grep -q '^worker,unix_time,seconds,executions,' || fail "whatsup --csv header"
[[ $(grep -Ec '^[01],' "${work}/plot.csv") -ge 2 ]] || fail "whatsup --csv: too few rows"

# A late joiner takes what the two found; a restarted worker resumes from its own directory.
"${xp}/mnist_nan" --data "${work}/data" --executions 1000 --sync "${sync}" --worker late "${common[@]}" \
  > "${work}/late.txt" || fail "late joiner exited non-zero"
grep -Eq '^worker late: .*\(imported [1-9][0-9]*,' "${work}/late.txt" || fail "late joiner imported nothing: $(cat "${work}/late.txt")"
before=$(sed -nE 's/^worker 0: ([0-9]+) executions.*/\1/p' "${work}/logs/worker-0.log")
# --executions is the worker's total: 1000 more than it did, then none left.
"${xp}/mnist_nan" --data "${work}/data" --executions $((before + 1000)) --sync "${sync}" --worker 0 "${common[@]}" \
  > "${work}/restart.txt" || fail "restarted worker exited non-zero"
after=$(sed -nE 's/^worker 0: ([0-9]+) executions.*/\1/p' "${work}/restart.txt")
(( after == before + 1000 )) || fail "worker 0 did not resume: ${before} then ${after} executions"
grep -Eq "^worker 0: resumed from ${sync}/0/corpus.bin: [0-9]+ elements, ${before} executions" "${work}/restart.txt" \
  || fail "worker 0: no resume line: $(cat "${work}/restart.txt")"
"${xp}/mnist_nan" --data "${work}/data" --executions "${after}" --sync "${sync}" --worker 0 "${common[@]}" \
  > "${work}/spent.txt" || fail "worker 0 with its budget spent exited non-zero"
grep -Eq "^worker 0: resumed from .*, ${after} executions, .*its budget is spent" "${work}/spent.txt" \
  || fail "worker 0 with its budget spent: $(cat "${work}/spent.txt")"
# merge: the three workers' corpora and findings as one campaign directory, which a worker resumes.
ok_status "${nnfuzz}" merge "${work}/merged" "${sync}" --radius 0.707 > "${work}/merge.txt"
merged=$(sed -nE 's/^merged 3 campaign\(s\), ([0-9]+) executions, into .*: corpus [1-9][0-9]* of [1-9][0-9]* elements.*/\1/p' \
  "${work}/merge.txt")
grep -q "has no nnfuzz.json" "${work}/merge.txt" || fail "merge of a program's sync directory: $(cat "${work}/merge.txt")"
[[ -n "${merged}" ]] || fail "merge: $(cat "${work}/merge.txt")"
mkdir -p "${work}/sync2" && cp -r "${work}/merged" "${work}/sync2/m"
"${xp}/mnist_nan" --data "${work}/data" --executions $((merged + 1000)) --max-findings 0 --sync "${work}/sync2" --worker m "${common[@]}" \
  > "${work}/merged-resumed.txt" || fail "a worker on the merged directory exited non-zero"
grep -Eq "^worker m: resumed from ${work}/sync2/m/corpus.bin: [0-9]+ elements, ${merged} executions" \
  "${work}/merged-resumed.txt" || fail "the merged directory did not resume: $(cat "${work}/merged-resumed.txt")"
rc=0
"${nnfuzz}" merge "${work}/merged" "${sync}" --radius 0.707 > /dev/null 2> "${work}/merge-again.err" || rc=$?
(( rc == 2 )) || fail "merge into a full directory: exit ${rc}"
grep -q "merge: OUT '${work}/merged' is not empty" "${work}/merge-again.err" \
  || fail "merge into a full directory: $(cat "${work}/merge-again.err")"
# Refused: --sync without --worker.
if "${xp}/mnist_nan" --data "${work}/data" --sync "${sync}" > /dev/null 2> "${work}/refused.err"; then fail "--sync without --worker accepted"; fi
grep -q -- '--sync needs --worker' "${work}/refused.err" || fail "--sync without --worker: $(cat "${work}/refused.err")"

python3 "${here}/check_deploy.py" || fail "deployment manifests"
echo "sync_smoke.sh: OK"
