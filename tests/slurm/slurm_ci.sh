#!/usr/bin/env bash
# CI stage: the shipped deploy/slurm/nnfuzz-array.sh, unchanged, on a real Slurm cluster — a
# private single-node one in a temporary directory (tests/slurm/cluster.sh: own munged, non-default
# ports) — with mnist_nan workers on a tiny synthetic data set. The array size and resources come
# from sbatch's options, the budgets, program and data from the environment. Three campaigns:
#   A  2 tasks until MAX_FINDINGS each; the first task with a finding on disk is requeued
#      (scontrol requeue) while it runs: it comes back with its id, says in its log that it
#      resumed (from where, with how many elements, executions and findings), its findings are
#      all still there and its findings budget is its total. Then: every task exited 0, every
#      worker's directory loads and every finding replays (mnist_nan --replay; on another model,
#      the replay fails: not all do), whatsup lists every worker and its totals add up.
#   B  2 tasks with a budget they cannot reach, the whole array cancelled (scancel: SIGTERM)
#      once a finding is on disk: every worker wrote its final checkpoint (corpus.bin at the
#      executions it reported, stats.json finished) and every finding it reported is on disk
#      and replays.
#   C  1 task on a model without NaNs, requeued at 30% of its executions budget: it ends at
#      exactly that budget (the budget is the worker's total, not per start).
# The daemons are stopped and the directory removed at the end, also when a check fails.
# Needs root and slurm-wlm + munge (scripts/setup.sh); NNFUZZ_KEEP=1 keeps the directory.
#   tests/slurm/slurm_ci.sh BUILD_DIR   (its experiments/ drivers and tests/make_tiny_mnist)
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build="$(cd "$1" && pwd)"
here="$(cd "$(dirname "$0")" && pwd)"
script="${here}/../../deploy/slurm/nnfuzz-array.sh"
ex="${build}/experiments"  # the drivers (mnist_nan, mnist_train)
nnfuzz="${build}/cli/nnfuzz"  # whatsup
t_start=${SECONDS}
fail() { echo "slurm_ci.sh: FAIL: $*" >&2; exit 1; }
say() { echo "slurm_ci.sh: [$((SECONDS - t_start)) s] $*"; }
[[ "$(id -u)" -eq 0 ]] || fail "needs root (a Slurm cluster with SlurmUser=root)"
for c in munged slurmctld slurmd sbatch scontrol squeue scancel sinfo python3; do
  command -v "${c}" > /dev/null || fail "${c} not found (scripts/setup.sh installs slurm-wlm and munge)"
done
for f in "${ex}/mnist_nan" "${ex}/mnist_train" "${nnfuzz}" "${build}/tests/make_tiny_mnist"; do
  [[ -x "${f}" ]] || fail "${f} not built"
done

tmp="$(mktemp -d /tmp/nnfuzz-slurm-ci.XXXXXX)"
chmod 755 "${tmp}"  # munged: every directory above its socket searchable by all
# shellcheck source=tests/slurm/cluster.sh
source "${here}/cluster.sh"
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if ((rc != 0)) && [[ -d "${tmp}/cluster/log" ]]; then
    echo "slurm_ci.sh: the cluster's logs (last lines):" >&2
    tail -n 15 "${tmp}"/cluster/log/*.log >&2 2> /dev/null || true
    for l in "${tmp}"/shared/*/nnfuzz-*.log; do [[ -f "${l}" ]] && { echo "--- ${l}" >&2; tail -n 8 "${l}" >&2; }; done
  fi
  cluster_stop
  if [[ "${NNFUZZ_KEEP:-0}" == 1 ]]; then echo "slurm_ci.sh: kept ${tmp}" >&2; else rm -rf "${tmp}"; fi
  ((rc == 0)) && say "OK in $((SECONDS - t_start)) s"
  exit "${rc}"
}
trap finish EXIT
trap 'exit 130' INT TERM

# --- Data, models, cluster ----------------------------------------------------------------
shared="${tmp}/shared"  # what a cluster's shared storage would hold
"${build}/tests/make_tiny_mnist" "${shared}/data" 300 100 > /dev/null
# tf-nan at 4000 steps with multi-scale noise (--sigma-range 10) finds NaNs in ~10^5-10^6
# executions; at 200 steps without it, none in millions.
"${ex}/mnist_train" --data "${shared}/data" --models "${shared}/models" --train-steps 4000 --recipes tf-nan > /dev/null
"${ex}/mnist_train" --data "${shared}/data" --models "${shared}/models" --train-steps 200 --recipes tf-nan > /dev/null
nan_flags=(--train-steps 4000 --sigma-range 10 --seeds 3 --sync-interval 0.2)
calm_flags=(--train-steps 200 --seeds 3 --sync-interval 0.2)
export NNFUZZ_MNIST_NAN="${ex}/mnist_nan" NNFUZZ_DATA="${shared}/data" NNFUZZ_MODELS="${shared}/models"
cluster_start "${tmp}/cluster" || fail "the cluster did not start"
say "cluster up: $(sinfo -h -o '%P %D node(s) %c CPUs %T'), ports $(grep -E '^Slurm(ctld|d)Port' "${SLURM_CONF}" | tr '\n' ' ')"

# --- Helpers ------------------------------------------------------------------------------
# submit CAMPAIGN EXECUTIONS MAX_FINDINGS ARRAY FLAGS...: the shipped script; prints the job id.
submit() {
  local camp="$1" execs="$2" maxf="$3" array="$4"
  shift 4
  mkdir -p "${camp}"
  CAMPAIGN="${camp}" EXECUTIONS="${execs}" MAX_FINDINGS="${maxf}" sbatch --parsable --chdir="${camp}" \
    --array="${array}" --cpus-per-task=1 --mem=1G --time=10 "${script}" "$@" | cut -d';' -f1
}
field() { scontrol -o show job "$1" 2> /dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n1; }  # JOB_TASK KEY
state() { squeue -h -j "$1" -o %T 2> /dev/null | head -n1; }                                       # JOB_TASK
# wait_until SECONDS WHAT COMMAND...: polls every 0.05 s.
wait_until() {
  local limit=$((SECONDS + $1)) what="$2"
  shift 2
  until "$@"; do ((SECONDS < limit)) || fail "timed out waiting for: ${what}"; sleep 0.05; done
}
job_done() { [[ -z "$(squeue -h -j "$1" -t PD,R,CG,S,CF,RQ,RS,SE -o %i 2> /dev/null)" ]]; }
nfindings() { find "$1/findings" -maxdepth 1 -name '*.bin' 2> /dev/null | wc -l; }
stat_num() { python3 -c 'import json, sys; print(int(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1/stats.json" "$2"; }
# The last summary line of a log, as "executions corpus written duplicates repeats" (a finding
# is written, or its input was in the campaign already, or it repeats a bug that has its files).
summary_of() {
  sed -nE 's/^worker [^:]+: ([0-9]+) executions in .*; corpus ([0-9]+) .*; findings [0-9]+ \(([0-9]+) written, ([0-9]+) already in the campaign, ([0-9]+) repeats.*/\1 \2 \3 \4 \5/p' "$1" | tail -n1
}
log_of() { echo "$1/nnfuzz-$2-$3.log"; }  # CAMPAIGN JOB TASK
# replay CAMPAIGN FLAGS...: every worker's directory loads, every finding fires again; prints the
# total of findings.
replay() {
  local camp="$1"
  shift
  "${ex}/mnist_nan" --data "${shared}/data" --models "${shared}/models" "$@" --sync "${camp}/sync" --replay \
    > "${camp}/replay.txt" 2>&1 || fail "replay of ${camp}: $(cat "${camp}/replay.txt")"
  sed -nE 's/^replay: ([0-9]+) workers, ([0-9]+) findings, ([0-9]+) fire again$/\2/p' "${camp}/replay.txt"
}
# check_whatsup CAMPAIGN N: whatsup lists N workers, all done; the per-worker executions and
# findings add up to its totals and to the files on disk.
check_whatsup() {
  local camp="$1" n="$2" out="$1/whatsup.txt" sum_x=0 sum_f=0 files=0 w x f
  local rc=0
  "${nnfuzz}" whatsup "${camp}/sync" > "${out}" || rc=$?  # 0 nothing found, 1 found, 2 an error
  ((rc <= 1)) || fail "nnfuzz whatsup ${camp}/sync exited ${rc}"
  [[ $(grep -Ec '^[0-9]+ +done +[0-9]+' "${out}") == "${n}" ]] || fail "whatsup: not ${n} workers done: $(cat "${out}")"
  while read -r w _ x _ _ _ _ f _; do
    sum_x=$((sum_x + x))
    sum_f=$((sum_f + f))
    files=$((files + $(nfindings "${camp}/sync/${w}")))
  done < <(grep -E '^[0-9]+ +done' "${out}")
  grep -Eq "^campaign ${camp}/sync: ${n} workers \(0 alive\), ${sum_x} executions" "${out}" \
    || fail "whatsup: the workers' executions (${sum_x}) are not the total: $(cat "${out}")"
  grep -Eq "^findings: [0-9]+ unique input\(s\) in ${files} file\(s\)" "${out}" && ((sum_f == files)) \
    || fail "whatsup: findings ${sum_f} by worker, ${files} files on disk: $(cat "${out}")"
  # Bugs: the findings every worker reported (files, duplicates and repeats), by signature.
  local reported=0
  for w in $(grep -Eo '^[0-9]+ +done' "${out}" | cut -d' ' -f1); do
    reported=$((reported + $(stat_num "${camp}/sync/${w}" reported_findings)))
  done
  grep -Eq "^bugs: [0-9]+ signature\(s\), ${reported} finding\(s\) reported" "${out}" \
    || fail "whatsup: the workers reported ${reported} findings, not its bugs' total: $(cat "${out}")"
  echo "${n} workers, ${sum_x} executions, ${files} finding files, ${reported} findings reported"
}
# release JOB_TASK LOG: a requeued job is held (BeginTime) for ~2 min in Slurm 22.05; once its
# first session has ended (its summary line in LOG), let it start 3 s later — sooner, slurmd may
# still be finishing the kill and refuse it ("Job N already killed, do not launch batch job").
release() {
  wait_until 60 "$1 pending again" bash -c "[[ \"\$(squeue -h -j $1 -o %T)\" == PENDING ]]"
  wait_until 60 "$1: its first session's summary" grep -Eq '^worker [^:]+: [0-9]+ executions in ' "$2"
  scontrol update JobId="$1" StartTime=now+3 || fail "scontrol update JobId=$1 StartTime=now+3"
}
# check_task JOB TASK STATE RESTARTS: Slurm's record of an array task.
check_task() {
  local st ec rs
  st="$(field "$1_$2" JobState)" ec="$(field "$1_$2" ExitCode)" rs="$(field "$1_$2" Restarts)"
  [[ "${st}" == "$3" && "${rs}" == "$4" ]] || fail "task $1_$2: ${st}, ${rs} restarts (expected $3, $4)"
  [[ "$3" != COMPLETED || "${ec}" == 0:0 ]] || fail "task $1_$2 exited ${ec}"
}

# --- A: a campaign, one task requeued while it runs ----------------------------------------
A="${shared}/a"
a_max=50000  # findings per task: near the NaN most mutants fire (one bug: counted, not written), ~5,000 per 50,000 executions
jobA="$(submit "${A}" 6000000 "${a_max}" 0-1 "${nan_flags[@]}")"
say "A: job ${jobA} (2 tasks, at most 6000000 executions and ${a_max} findings each)"
victim=""
pick_victim() {
  local t
  for t in 0 1; do
    if [[ "$(state "${jobA}_${t}")" == RUNNING && $(nfindings "${A}/sync/${t}") -ge 1 ]]; then
      victim="${t}"
      return 0
    fi
  done
  job_done "${jobA}" && fail "A: both tasks ended before one could be requeued with a finding on disk"
  return 1
}
wait_until 90 "A: a running task with a finding on disk" pick_victim
vdir="${A}/sync/${victim}"
(cd "${vdir}/findings" && ls -- *.bin) | sort > "${A}/before.txt"
x_before="$(stat_num "${vdir}" executions)"
scontrol requeue "${jobA}_${victim}" || fail "scontrol requeue ${jobA}_${victim}"
say "A: requeued task ${victim} at ${x_before} executions with $(wc -l < "${A}/before.txt") findings on disk"
release "${jobA}_${victim}" "$(log_of "${A}" "${jobA}" "${victim}")"
wait_until 120 "A: the array finished" job_done "${jobA}"
say "A: done"
check_task "${jobA}" "${victim}" COMPLETED 1
check_task "${jobA}" $((1 - victim)) COMPLETED 0
vlog="$(log_of "${A}" "${jobA}" "${victim}")"
grep -q "DUE TO JOB REQUEUE" "${vlog}" || fail "A: no requeue in ${vlog}"
[[ $(grep -c '^worker .* executions in ' "${vlog}") == 2 ]] || fail "A: ${vlog} has not 2 sessions: $(cat "${vlog}")"
sed -n "/^worker ${victim}: resumed from /q;p" "${vlog}" > "${A}/session1.txt"
read -r x1 c1 w1 d1 r1 _ < <(summary_of "${A}/session1.txt") || true
[[ -n "${x1:-}" ]] || fail "A: no summary line before the resume in ${vlog}"
resumed="$(grep -E "^worker ${victim}: resumed from " "${vlog}" || true)"
p1=$((w1 + d1 + r1))  # reported in session 1: written, duplicates, repeats of known bugs
[[ "${resumed}" == "worker ${victim}: resumed from ${vdir}/corpus.bin: ${c1} elements, ${x1} executions, ${w1} findings on disk, ${p1} reported; left: "* ]] \
  || fail "A: the resume line is not '${c1} elements, ${x1} executions, ${w1} findings on disk, ${p1} reported': '${resumed}'"
read -r x2 _ w2 d2 r2 _ < <(summary_of "${vlog}") || true
((x2 > x1 && x2 <= 6000000)) || fail "A: task ${victim}: ${x1} executions, then ${x2}"
comm -23 "${A}/before.txt" <( (cd "${vdir}/findings" && ls -- *.bin) | sort) > "${A}/lost.txt"
[[ ! -s "${A}/lost.txt" ]] || fail "A: findings of task ${victim} lost after the requeue: $(cat "${A}/lost.txt")"
v_files=$(nfindings "${vdir}")
((v_files == w1 + w2 && v_files == $(stat_num "${vdir}" findings))) \
  || fail "A: task ${victim}: ${v_files} findings on disk, ${w1} + ${w2} written, stats.json $(stat_num "${vdir}" findings)"
# Its findings budget is its total: the second session stopped at a_max (duplicates and repeats
# counted), and bugs.bin counts every finding of both sessions.
((x2 == 6000000 || p1 + w2 + d2 + r2 == a_max)) \
  || fail "A: task ${victim} found ${p1} + ${w2} (+${d2} duplicates, ${r2} repeats), budget ${a_max}"
(($(stat_num "${vdir}" reported_findings) == p1 + w2 + d2 + r2)) \
  || fail "A: task ${victim}: stats.json reports $(stat_num "${vdir}" reported_findings) findings, its sessions ${p1} + $((w2 + d2 + r2))"
say "A: task ${victim} came back (Restarts=1): session 1 ended at ${x1} executions, corpus ${c1}, ${w1} findings;" \
  "resumed from them; ended at ${x2} executions, ${v_files} findings (budget ${a_max})"
a_findings="$(replay "${A}" "${nan_flags[@]}")"
for t in 0 1; do
  x="" w=""
  read -r x _ w _ < <(summary_of "$(log_of "${A}" "${jobA}" "${t}")") || true
  grep -Eq "^replay: worker ${t}: corpus [0-9]+ elements at ${x:-none} executions" "${A}/replay.txt" \
    || fail "A: worker ${t}'s corpus.bin is not at its ${x} executions: $(cat "${A}/replay.txt")"
  # Every finding it reported is on disk (the victim: both sessions', checked above).
  ((t == victim || ($(nfindings "${A}/sync/${t}") == w && w == $(stat_num "${A}/sync/${t}" findings)))) \
    || fail "A: worker ${t} reported ${w} findings, $(nfindings "${A}/sync/${t}") on disk"
done
((a_findings == $(nfindings "${A}/sync/0") + $(nfindings "${A}/sync/1") && a_findings > 0)) \
  || fail "A: ${a_findings} findings replayed: $(cat "${A}/replay.txt")"
# The replay can fail: on another model (200 steps, no NaN) the findings do not fire.
if "${ex}/mnist_nan" --data "${shared}/data" --models "${shared}/models" "${calm_flags[@]}" --sync "${A}/sync" --replay \
  > "${A}/replay-other.txt" 2>&1; then
  fail "A: the findings replay on another model: $(tail -n 3 "${A}/replay-other.txt")"
fi
# It reads every finding and says how many fire there: fewer than all of them. (Not necessarily
# none: an input that overflows the NaN model may overflow the calm one too; one of 20 did, once.)
other_fire="$(sed -nE "s/^replay: 2 workers, ${a_findings} findings, ([0-9]+) fire again.*/\1/p" "${A}/replay-other.txt")"
[[ -n "${other_fire}" ]] && ((other_fire < a_findings)) \
  || fail "A: replay on another model: $(tail -n 3 "${A}/replay-other.txt")"
a_whatsup="$(check_whatsup "${A}" 2)"
say "A: every directory loads; all ${a_findings} findings replay (${other_fire} on another model); whatsup: ${a_whatsup}"

# --- B: the whole array cancelled (SIGTERM) mid-run ---------------------------------------
B="${shared}/b"
jobB="$(submit "${B}" 100000000 0 0-1 "${nan_flags[@]}")"
say "B: job ${jobB} (2 tasks, 100000000 executions each, no findings limit)"
b_ready() {
  local t
  for t in 0 1; do [[ "$(state "${jobB}_${t}")" == RUNNING && -s "${B}/sync/${t}/corpus.bin" ]] || return 1; done
  (($(nfindings "${B}/sync/0") + $(nfindings "${B}/sync/1") > 0)) || ((SECONDS > b_limit))
}
b_limit=$((SECONDS + 40))
wait_until 60 "B: both tasks running with a checkpoint" b_ready
t_cancel="$(date +%s.%N)"
scancel "${jobB}" || fail "scancel ${jobB}"
wait_until 60 "B: the array ended" job_done "${jobB}"
slowest=0
for t in 0 1; do
  check_task "${jobB}" "${t}" CANCELLED 0
  d="${B}/sync/${t}"
  blog="$(log_of "${B}" "${jobB}" "${t}")"
  x="" w="" dup="" rpt=""
  read -r x _ w dup rpt _ < <(summary_of "${blog}") || true
  [[ -n "${x:-}" ]] || fail "B: worker ${t} printed no summary after SIGTERM: $(cat "${blog}")"
  (($(stat_num "${d}" finished) == 1 && $(stat_num "${d}" executions) == x)) \
    || fail "B: worker ${t}: stats.json not final (finished $(stat_num "${d}" finished), $(stat_num "${d}" executions) of ${x} executions)"
  ((w == $(nfindings "${d}") && w == $(stat_num "${d}" findings))) \
    || fail "B: worker ${t} wrote ${w} findings, $(nfindings "${d}") on disk"
  (($(stat_num "${d}" reported_findings) == w + dup + rpt)) \
    || fail "B: worker ${t} reported $((w + dup + rpt)) findings, bugs.bin counts $(stat_num "${d}" reported_findings)"
  slowest="$(python3 -c 'import json, sys; print(max(float(sys.argv[2]), json.load(open(sys.argv[1]))["updated_time"] - float(sys.argv[3])))' \
    "${d}/stats.json" "${slowest}" "${t_cancel}")"
  say "B: worker ${t}: final checkpoint at ${x} executions, ${w} finding files on disk, $((w + dup + rpt)) findings counted"
done
b_findings="$(replay "${B}" "${nan_flags[@]}")"
for t in 0 1; do
  x=""
  read -r x _ _ _ < <(summary_of "$(log_of "${B}" "${jobB}" "${t}")") || true
  grep -Eq "^replay: worker ${t}: corpus [0-9]+ elements at ${x:-none} executions" "${B}/replay.txt" \
    || fail "B: worker ${t}'s corpus.bin is not at its ${x} executions: $(cat "${B}/replay.txt")"
done
b_whatsup="$(check_whatsup "${B}" 2)"
say "B: the last final checkpoint $(printf %.2f "${slowest}") s after scancel; all ${b_findings} findings replay; whatsup: ${b_whatsup}"

# --- C: an executions budget across a requeue ---------------------------------------------
C="${shared}/c"
c_budget=2000000
jobC="$(submit "${C}" "${c_budget}" 0 0 "${calm_flags[@]}")"
say "C: job ${jobC} (1 task, ${c_budget} executions)"
c_ready() { [[ "$(state "${jobC}_0")" == RUNNING && -s "${C}/sync/0/stats.json" ]] && (($(stat_num "${C}/sync/0" executions) >= c_budget * 3 / 10)); }
wait_until 60 "C: the task at 30% of its budget" c_ready
scontrol requeue "${jobC}_0" || fail "scontrol requeue ${jobC}_0"
release "${jobC}_0" "$(log_of "${C}" "${jobC}" 0)"
wait_until 120 "C: the task finished" job_done "${jobC}"
check_task "${jobC}" 0 COMPLETED 1
clog="$(log_of "${C}" "${jobC}" 0)"
sed -n "/^worker 0: resumed from /q;p" "${clog}" > "${C}/session1.txt"
read -r x1 c1 _ _ < <(summary_of "${C}/session1.txt") || true
[[ -n "${x1:-}" ]] || fail "C: no summary line before the resume in ${clog}"
grep -Eq "^worker 0: resumed from ${C}/sync/0/corpus.bin: ${c1} elements, ${x1} executions, [0-9]+ findings on disk, [0-9]+ reported; left: $((c_budget - x1)) executions" "${clog}" \
  || fail "C: no resume line for ${c1} elements, ${x1} executions: $(cat "${clog}")"
read -r x2 _ _ _ < <(summary_of "${clog}") || true
((x2 == c_budget && $(stat_num "${C}/sync/0" executions) == c_budget)) \
  || fail "C: ended at ${x2} executions, budget ${c_budget} (requeued at ${x1})"
say "C: requeued at ${x1} executions (corpus ${c1}), resumed, ended at ${x2} = its budget"
