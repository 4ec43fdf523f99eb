#!/usr/bin/env bash
# Measures campaigns shared through a sync directory (docs/scaling.md) with mnist_nan workers
# started by scripts/launch_local.sh, and prints one table (numbers from the workers' stats.json):
#   1. 1 vs 2 worker processes: summed exec/s (ratio), on a model in which no NaN is found
#      (the `adam` recipe, 500 steps: every execution is fuzzing, none is writing findings);
#   2. the campaign's time to the first NaN (the earliest worker's) at 1, 2 and (time-sliced) 4
#      workers, TensorFuzz's tf-nan model with multi-scale noise, over NAN_REPS seeds (median and
#      range), and findings per minute at 1, 2 and 4 workers (tf-nan, --max-findings 0, a fixed
#      budget of FINDING_EXECUTIONS executions per campaign split between the workers);
#   3. sync overhead: the share of each worker's wall time spent in syncs (export, checkpoint,
#      import, stats), at the default interval (5 s) and at 0.2 s;
#   4. 8, 16 and 32 processes time-sliced on the machine's cores, syncing every 0.5 s: per sync,
#      the milliseconds (all of it, and reading the others' files), the queue files read and the
#      elements offered — the import cost per file read must stay flat as the workers (and the
#      files in the directory) grow.
#   scripts/bench_sync.sh BUILD_DIR [DATA_DIR] [MODELS_DIR]
# Environment: REPS (3), NAN_REPS (10), EXECUTIONS per worker in parts 1 and 3 (2000000),
# FINDING_EXECUTIONS (1000000), OUT (out/bench_sync).
set -euo pipefail
build="$1"
data="${2:-data/mnist}"
models="${3:-out/models}"
reps="${REPS:-3}"
nan_reps="${NAN_REPS:-10}"
find_execs="${FINDING_EXECUTIONS:-1000000}"
execs="${EXECUTIONS:-2000000}"
out="${OUT:-out/bench_sync}"
here="$(cd "$(dirname "$0")" && pwd)"
bin="${build}/experiments/mnist_nan"
rm -rf "${out}"
mkdir -p "${out}"
# The TensorFuzz NaN setting with multi-scale noise (README: 10/10 runs, median ~26k executions).
flags=(--data "${data}" --models "${models}" --sigma-range 4)
plain=(--recipe adam --train-steps 500 --max-findings 0)  # no NaN: pure fuzzing
nan=(--recipe tf-nan --max-findings 1)
for m in "${plain[*]}" "${nan[*]}"; do  # trains the models if missing
  # shellcheck disable=SC2086
  "${bin}" "${flags[@]}" ${m/--max-findings*/} --runs 1 --executions 100 --out "${out}/warmup" > /dev/null
done

campaign() {  # NAME WORKERS INTERVAL EXECUTIONS SEED MODEL-FLAGS...
  local name="$1" n="$2" interval="$3" e="$4" seed="$5"
  shift 5
  NNFUZZ_LOG_DIR="${out}/${name}/logs" "${here}/launch_local.sh" "${n}" -- "${bin}" "${flags[@]}" "$@" \
    --executions "${e}" --seed "${seed}" --sync "${out}/${name}/sync" --worker {} --sync-interval "${interval}" > /dev/null
}
for r in $(seq 1 "${reps}"); do
  campaign "one-${r}" 1 5 "${execs}" "${r}" "${plain[@]}"
  campaign "two-${r}" 2 5 "${execs}" "${r}" "${plain[@]}"
  campaign "fast-${r}" 2 0.2 "${execs}" "${r}" "${plain[@]}"
done
for r in $(seq 1 "${nan_reps}"); do
  for n in 1 2 4; do campaign "nan${n}-${r}" "${n}" 5 1000000 "${r}" "${nan[@]}"; done
done
for n in 1 2 4; do
  campaign "found${n}" "${n}" 5 $((find_execs / n)) 1 --recipe tf-nan --max-findings 0
done
for n in 8 16 32; do campaign "many-${n}" "${n}" 0.5 $((2 * execs / n)) 1 "${plain[@]}"; done

python3 - "${out}" "${reps}" "${nan_reps}" << 'PY'
import glob, json, os, statistics, sys
out, reps, nan_reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def stats(name):
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, name, "sync", "*", "stats.json")))]
def rate(ws): return sum(w["execs_per_sec"] for w in ws)
def first(ws):
    t = [w["first_finding_seconds"] for w in ws if w["first_finding_seconds"] >= 0]
    return min(t) if t else float("nan")
def share(ws): return 100 * sum(w["sync_seconds"] for w in ws) / sum(w["seconds"] for w in ws)
one = [stats("one-%d" % r) for r in range(1, reps + 1)]
two = [stats("two-%d" % r) for r in range(1, reps + 1)]
fast = [stats("fast-%d" % r) for r in range(1, reps + 1)]
r1 = statistics.median(rate(w) for w in one)
r2 = statistics.median(rate(w) for w in two)
print("| measurement | value |\n|---|---|")
print("| 1 worker process, exec/s (median of %d) | %.0f |" % (reps, r1))
print("| 2 worker processes, summed exec/s | %.0f = **%.2fx** |" % (r2, r2 / r1))
for n in (1, 2, 4):
    t = [first(stats("nan%d-%d" % (n, r))) for r in range(1, nan_reps + 1)]
    found = [x for x in t if x == x]
    print("| time to the first NaN, %d worker(s) (s, earliest worker; seeds 1..%d) | median %.3f, range %.3f-%.3f, %d/%d found |" %
          (n, nan_reps, statistics.median(found) if found else float("nan"), min(found or [float("nan")]),
           max(found or [float("nan")]), len(found), nan_reps))
for n in (1, 2, 4):
    ws = stats("found%d" % n)
    wall = max(w["seconds"] for w in ws)
    reported = sum(w["reported_findings"] for w in ws)
    print("| findings per minute, %d worker(s) (tf-nan, --max-findings 0, %.0f executions in all) | %.0f (%d in %.1f s) |" %
          (n, sum(w["executions"] for w in ws), 60 * reported / wall, reported, wall))
print("| sync overhead per worker, interval 5 s / 0.2 s | %.2f%% / %.2f%% of wall time |" %
      (statistics.median(share(w) for w in two), statistics.median(share(w) for w in fast)))
for n in (8, 16, 32):
    ws = stats("many-%d" % n)
    syncs = sum(w["syncs"] for w in ws)
    files = sum(w["files_read"] for w in ws)
    secs = sum(w["sync_seconds"] for w in ws)
    imp = sum(w["import_seconds"] for w in ws)
    cpu = sum(w["import_cpu_seconds"] for w in ws)
    offered = sum(w["offered"] for w in ws)
    print("| %d processes time-sliced: per sync %.2f ms wall (import %.2f ms wall, %.3f ms CPU), %.1f files read,"
          " %.0f elements offered; import CPU %.3f ms per file read; %d queue files in all |" %
          (n, 1000 * secs / syncs, 1000 * imp / syncs, 1000 * cpu / syncs, files / syncs, offered / syncs,
           1000 * cpu / max(files, 1), sum(w["queue_files"] for w in ws)))
PY
