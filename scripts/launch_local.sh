#!/usr/bin/env bash
# Runs one command as N workers of a campaign on this machine, as a Kubernetes Indexed Job or a
# Slurm array would on many: worker i (0..N-1) gets NNFUZZ_WORKER=i in its environment, and
# every argument "{}" of the command is replaced by i. Each worker's output goes to
# LOGDIR/worker-i.log (LOGDIR: $NNFUZZ_LOG_DIR, default the current directory). Waits for all;
# exits non-zero if any worker did. Ctrl-C / SIGTERM are passed on to the workers.
#
#   scripts/launch_local.sh 4 -- build/experiments/mnist_nan --data data/mnist --executions 1e6 \
#       --sync out/sync --worker {}
#   build/cli/nnfuzz whatsup out/sync
set -euo pipefail
usage() { echo "usage: $0 N -- command [args...]   ('{}' in the args: the worker id 0..N-1)" >&2; exit 2; }
[[ $# -ge 3 && "$1" =~ ^[1-9][0-9]*$ && "$2" == "--" ]] || usage
n="$1"
shift 2
logs="${NNFUZZ_LOG_DIR:-.}"
mkdir -p "${logs}"
pids=()
stop() { for p in "${pids[@]}"; do kill -TERM "${p}" 2> /dev/null || true; done; }
trap stop INT TERM
for ((i = 0; i < n; i++)); do
  args=()
  for a in "$@"; do args+=("${a//\{\}/${i}}"); done
  NNFUZZ_WORKER="${i}" "${args[@]}" > "${logs}/worker-${i}.log" 2>&1 &
  pids+=("$!")
done
rc=0
for ((i = 0; i < n; i++)); do
  if ! wait "${pids[i]}"; then
    echo "launch_local.sh: worker ${i} failed (see ${logs}/worker-${i}.log)" >&2
    rc=1
  fi
done
exit "${rc}"
