#!/usr/bin/env bash
# A private single-node Slurm cluster in a directory, for tests (docs/scaling.md, "Slurm"):
# its own munged (own key and socket), slurmctld and slurmd on free non-default ports, every
# state, spool, log and pid file under the directory (which, and its parents, all may search:
# munged insists for its socket). Source it, then:
#   cluster_start DIR      starts the daemons; exports SLURM_CONF; waits until the node is idle
#   cluster_stop           cancels what is left, stops the daemons it started (by their pids)
# Needs root (SlurmUser=root) and Debian's slurm-wlm and munge (scripts/setup.sh). Never meets a
# real cluster: its ports are not Slurm's defaults, its munge key is made here, and the commands
# read only SLURM_CONF.

cluster_dir=""
cluster_pids=()

cluster_log() { echo "cluster.sh: $*" >&2; }

# A TCP port nothing listens on (and not Slurm's 6817/6818).
cluster_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cluster_start() {
  cluster_dir="$1"
  local host cpus mem p1 p2 i
  host="$(hostname -s)"
  cpus="$(nproc)"
  mem=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 - 512))
  ((mem > 8000)) && mem=8000
  p1="$(cluster_free_port)"
  p2="$(cluster_free_port)"
  while [[ "${p2}" == "${p1}" ]]; do p2="$(cluster_free_port)"; done
  mkdir -p "${cluster_dir}"/{munge-key,munge-run,state,spool,log}
  chmod 755 "${cluster_dir}" "${cluster_dir}/munge-run"
  chmod 700 "${cluster_dir}/munge-key"
  # munged: root may run it; it wants its key private and its socket's directory world-searchable.
  dd if=/dev/urandom of="${cluster_dir}/munge-key/munge.key" bs=1024 count=1 status=none
  chmod 600 "${cluster_dir}/munge-key/munge.key"
  local sock="${cluster_dir}/munge-run/munge.socket"
  munged --socket="${sock}" --key-file="${cluster_dir}/munge-key/munge.key" \
    --log-file="${cluster_dir}/log/munged.log" --pid-file="${cluster_dir}/munge-run/munged.pid" \
    --seed-file="${cluster_dir}/munge-key/munged.seed" || { cat "${cluster_dir}/log/munged.log" >&2; return 1; }
  cluster_pids+=("$(cat "${cluster_dir}/munge-run/munged.pid")")
  munge -S "${sock}" -n | unmunge -S "${sock}" > /dev/null || { cluster_log "munge does not work"; return 1; }
  cat > "${cluster_dir}/slurm.conf" << EOF
ClusterName=nnfuzzci
SlurmctldHost=${host}
SlurmctldPort=${p1}
SlurmdPort=${p2}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${sock}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmUser=root
SlurmdUser=root
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
StateSaveLocation=${cluster_dir}/state
SlurmdSpoolDir=${cluster_dir}/spool
SlurmctldPidFile=${cluster_dir}/slurmctld.pid
SlurmdPidFile=${cluster_dir}/slurmd.pid
SlurmctldLogFile=${cluster_dir}/log/slurmctld.log
SlurmdLogFile=${cluster_dir}/log/slurmd.log
SchedulerParameters=sched_interval=2
KillWait=30
MinJobAge=600
NodeName=${host} CPUs=${cpus} RealMemory=${mem} State=UNKNOWN
PartitionName=ci Nodes=${host} Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="${cluster_dir}/slurm.conf"
  slurmctld -D -i > "${cluster_dir}/log/slurmctld.out" 2>&1 &
  cluster_pids+=("$!")
  slurmd -D > "${cluster_dir}/log/slurmd.out" 2>&1 &
  cluster_pids+=("$!")
  for ((i = 0; i < 100; i++)); do
    [[ "$(sinfo -h -n "${host}" -o %T 2> /dev/null)" == idle ]] && return 0
    sleep 0.2
  done
  cluster_log "the node is not idle after 20 s: $(sinfo 2>&1)"
  tail -n 20 "${cluster_dir}"/log/slurm*.log >&2 || true
  return 1
}

cluster_stop() {
  [[ -n "${cluster_dir}" ]] || return 0
  local i p
  if [[ -n "${SLURM_CONF:-}" ]]; then
    # The jobs' processes (under slurmstepd, which outlives slurmd) first: killed, then waited for.
    scancel --quiet --full --signal=KILL -u root 2> /dev/null || true
    scancel --quiet -u root 2> /dev/null || true
    for ((i = 0; i < 100; i++)); do
      [[ -z "$(squeue -h -t R,CG,S -o %i 2> /dev/null)" ]] && break
      sleep 0.1
    done
  fi
  for ((i = ${#cluster_pids[@]} - 1; i >= 0; i--)); do
    p="${cluster_pids[i]}"
    kill -TERM "${p}" 2> /dev/null || continue
    for _ in $(seq 50); do kill -0 "${p}" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "${p}" 2> /dev/null || true
  done
  cluster_pids=()
}
