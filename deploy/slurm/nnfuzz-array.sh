#!/usr/bin/env bash
# A campaign of N nnfuzz workers as a Slurm job array (docs/scaling.md): array task i is worker
# i. CAMPAIGN must be on storage every node sees (NFS, Lustre, GPFS...): CAMPAIGN/sync is the
# sync directory, CAMPAIGN/data the MNIST files. A requeued task (--requeue, preemption) comes
# back with its id and resumes from its own directory. The command line is the one
# scripts/launch_local.sh and tests/sync_smoke.sh run (tests/check_deploy.py checks it).
#   CAMPAIGN=/shared/nnfuzz sbatch deploy/slurm/nnfuzz-array.sh
#   build/cli/nnfuzz whatsup /shared/nnfuzz/sync
#SBATCH --job-name=nnfuzz-mnist-nan
#SBATCH --array=0-7
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --signal=B:TERM@60
#SBATCH --output=nnfuzz-%A-%a.log
#SBATCH --open-mode=append
# A requeued task's log keeps what it said before (--open-mode=append); it resumes with what is
# left of its budgets (they are the worker's totals, not per start). Without editing this file
# (tests/slurm/slurm_ci.sh runs it so): the array size and resources with sbatch's options
# (sbatch --array=0-1 --mem=1G ...), and from the environment (sbatch passes it on): EXECUTIONS
# (10000000) and MAX_FINDINGS (1) per worker, NNFUZZ_MNIST_NAN (the program, default mnist_nan
# on PATH), NNFUZZ_DATA and NNFUZZ_MODELS (CAMPAIGN/data and CAMPAIGN/models). Arguments after
# the script's name are added to mnist_nan's.
set -euo pipefail
: "${CAMPAIGN:?set CAMPAIGN to a directory on shared storage}"
exec "${NNFUZZ_MNIST_NAN:-mnist_nan}" --data "${NNFUZZ_DATA:-${CAMPAIGN}/data}" \
  --models "${NNFUZZ_MODELS:-${CAMPAIGN}/models}" --executions "${EXECUTIONS:-10000000}" \
  --max-findings "${MAX_FINDINGS:-1}" --sync "${CAMPAIGN}/sync" --worker "${SLURM_ARRAY_TASK_ID}" "$@"
