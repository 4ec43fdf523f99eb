#!/usr/bin/env bash
# A campaign of N nnfuzz workers as a Slurm job array (docs/scaling.md): array task i is worker
# i. CAMPAIGN must be on storage every node sees (NFS, Lustre, GPFS...): CAMPAIGN/sync is the
# sync directory, CAMPAIGN/data the MNIST files. A requeued task (--requeue, preemption) comes
# back with its id and resumes from its own directory. The command line is the one
# scripts/launch_local.sh and tests/sync_smoke.sh run (tests/check_deploy.py checks it).
#   CAMPAIGN=/shared/nnfuzz sbatch deploy/slurm/nnfuzz-array.sh
#   build/experiments/whatsup /shared/nnfuzz/sync
#SBATCH --job-name=nnfuzz-mnist-nan
#SBATCH --array=0-7
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=04:00:00
#SBATCH --requeue
#SBATCH --signal=B:TERM@60
#SBATCH --output=nnfuzz-%A-%a.log
set -euo pipefail
: "${CAMPAIGN:?set CAMPAIGN to a directory on shared storage}"
exec mnist_nan --data "${CAMPAIGN}/data" --models "${CAMPAIGN}/models" --executions 10000000 \
  --sync "${CAMPAIGN}/sync" --worker "${SLURM_ARRAY_TASK_ID}"
