#!/usr/bin/env python3
# Checks the deployment files of a shared campaign (docs/scaling.md): the Kubernetes manifest
# parses (python3-yaml), is an Indexed Job whose pods share a volume and take their worker id
# from the completion index; the Slurm script takes it from SLURM_ARRAY_TASK_ID; and both run
# the command line of tests/sync_smoke.sh's launcher (the line after "# DEPLOY-COMMAND"): the
# same program and the same flags, in the same order (the values are paths and budgets). Runs
# yamllint on the manifest when it is installed (Debian: yamllint).
# What can be checked of Kubernetes without a cluster (it has not run on one here): the pod's
# command is the launcher's, run as the container's process 1 (no shell that would keep SIGTERM
# from it), with the Slurm script's default budgets; the volume is a claim of this manifest that
# is ReadWriteMany; the worker id is the completion index; terminationGracePeriodSeconds leaves
# the final checkpoint as long as Slurm's --signal=B:TERM@N does (and at least 30 s). The Slurm
# script itself runs on a real (single-node) cluster in tests/slurm/slurm_ci.sh.
#   python3 tests/check_deploy.py
import os
import re
import shlex
import shutil
import subprocess
import sys

import yaml

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    sys.exit("check_deploy.py: FAIL: " + msg)


def default_of(word):
    """The default of a shell word "${VAR:-default}" (the word itself if it is not one)."""
    m = re.fullmatch(r"\$\{\w+:-([^${}]*)\}", word)
    return m.group(1) if m else word


def shape(argv):
    """Program name and flags, in order; the value of --worker as given."""
    prog = os.path.basename(default_of(argv[0]))
    flags = [a for a in argv[1:] if a.startswith("--")]
    worker = argv[argv.index("--worker") + 1] if "--worker" in argv else None
    return prog, flags, worker


def joined_lines(path):
    out, cur = [], ""
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if line.endswith("\\"):
            cur += line[:-1]
            continue
        out.append(cur + line)
        cur = ""
    return out


# The reference: the launcher's command in the smoke test, before its first option that only the
# smoke test needs (--train-steps and after: a tiny model, fast syncs).
lines = joined_lines(os.path.join(root, "tests", "sync_smoke.sh"))
at = next(i for i, l in enumerate(lines) if l.strip().startswith("# DEPLOY-COMMAND"))
argv = shlex.split(lines[at + 1], comments=True)
argv = argv[argv.index("--") + 1:]
argv = argv[: argv.index("--train-steps")]
ref_prog, ref_flags, ref_worker = shape(argv)
if ref_worker != "{}":
    fail("the smoke test's launcher does not pass --worker {}")

# Kubernetes.
k8s_path = os.path.join(root, "deploy", "k8s", "nnfuzz-job.yaml")
docs = [d for d in yaml.safe_load_all(open(k8s_path, encoding="utf-8")) if d]
claims = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "PersistentVolumeClaim"}
job = next((d for d in docs if d.get("kind") == "Job"), None)
if job is None or job.get("apiVersion") != "batch/v1":
    fail(k8s_path + ": no batch/v1 Job")
spec = job["spec"]
if spec.get("completionMode") != "Indexed":
    fail(k8s_path + ": completionMode is not Indexed")
if not isinstance(spec.get("completions"), int) or spec["completions"] < 1:
    fail(k8s_path + ": completions must be a positive integer")
pod = spec["template"]["spec"]
(container,) = pod["containers"]
mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
volumes = {v["name"]: v for v in pod.get("volumes", [])}
if not mounts or any(n not in volumes for n in mounts):
    fail(k8s_path + ": the container mounts no shared volume")
if not any("persistentVolumeClaim" in volumes[n] for n in mounts):
    fail(k8s_path + ": the shared volume is not a persistentVolumeClaim")
cmd = list(container.get("command", [])) + list(container.get("args", []))
prog, flags, worker = shape(cmd)
if (prog, flags) != (ref_prog, ref_flags):
    fail("%s runs %s %s, the launcher %s %s" % (k8s_path, prog, flags, ref_prog, ref_flags))
if os.path.basename(cmd[0]) in ("sh", "bash", "dash", "env"):
    fail(k8s_path + ": the command runs through " + cmd[0] + ": SIGTERM must reach the worker")
if worker != "$(JOB_COMPLETION_INDEX)":
    fail(k8s_path + ": --worker is not $(JOB_COMPLETION_INDEX)")
# The completion index: Kubernetes sets JOB_COMPLETION_INDEX in an Indexed Job's pods; a manifest
# that defines it must take it from the pod's completion-index annotation.
env = {e["name"]: e for e in container.get("env", [])}
if "JOB_COMPLETION_INDEX" in env:
    path = env["JOB_COMPLETION_INDEX"].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    if path != "metadata.annotations['batch.kubernetes.io/job-completion-index']":
        fail(k8s_path + ": JOB_COMPLETION_INDEX is not the pod's completion index (" + str(path) + ")")
sync_dir = cmd[cmd.index("--sync") + 1]
sync_mounts = [n for n, p in mounts.items() if sync_dir.startswith(p.rstrip("/") + "/")]
if not sync_mounts:
    fail(k8s_path + ": --sync " + sync_dir + " is not on the shared volume")
# ReadWriteMany: the volume under --sync is a claim of this manifest that every pod can mount.
claim = volumes[sync_mounts[0]].get("persistentVolumeClaim", {}).get("claimName")
if claim not in claims:
    fail(k8s_path + ": the claim of the sync volume (%s) is not defined in the manifest" % claim)
if "ReadWriteMany" not in claims[claim]["spec"].get("accessModes", []):
    fail(k8s_path + ": the claim " + claim + " is not ReadWriteMany")
grace = pod.get("terminationGracePeriodSeconds", 30)

# Slurm.
slurm_path = os.path.join(root, "deploy", "slurm", "nnfuzz-array.sh")
slines = joined_lines(slurm_path)
if not any(l.startswith("#SBATCH --array=") for l in slines):
    fail(slurm_path + ": no #SBATCH --array")
exec_line = next((l for l in slines if l.startswith("exec ")), None)
if exec_line is None:
    fail(slurm_path + ": no exec line")
prog, flags, worker = shape(shlex.split(exec_line)[1:])
if (prog, flags) != (ref_prog, ref_flags):
    fail("%s runs %s %s, the launcher %s %s" % (slurm_path, prog, flags, ref_prog, ref_flags))
if worker != "${SLURM_ARRAY_TASK_ID}":
    fail(slurm_path + ": --worker is not ${SLURM_ARRAY_TASK_ID}")
# The same budgets by default (the Slurm script's come from the environment).
sargv = shlex.split(exec_line)[1:]
for flag in ("--executions", "--max-findings"):
    if default_of(sargv[sargv.index(flag) + 1]) != str(cmd[cmd.index(flag) + 1]):
        fail("%s %s %s, %s %s" % (slurm_path, flag, sargv[sargv.index(flag) + 1], k8s_path, cmd[cmd.index(flag) + 1]))
# The grace period after SIGTERM: the final checkpoint (a last sync, corpus.bin and the
# watermarks, fsynced; tests/slurm/slurm_ci.sh measures it) gets as long on both.
lead = next((re.fullmatch(r"#SBATCH --signal=B:TERM@(\d+)", l) for l in slines if l.startswith("#SBATCH --signal=")), None)
if lead is None:
    fail(slurm_path + ": no #SBATCH --signal=B:TERM@N (SIGTERM to the worker before the time limit)")
if int(lead.group(1)) < 30 or not isinstance(grace, int) or grace < int(lead.group(1)):
    fail("%s: terminationGracePeriodSeconds %s does not cover the final checkpoint (Slurm: TERM@%s, at least 30)"
         % (k8s_path, grace, lead.group(1)))
if subprocess.run(["bash", "-n", slurm_path]).returncode != 0:
    fail(slurm_path + ": bash -n")

if shutil.which("yamllint"):
    r = subprocess.run(["yamllint", "-d", "{extends: relaxed, rules: {line-length: {max: 120}}}", k8s_path])
    if r.returncode != 0:
        fail(k8s_path + ": yamllint")
print("check_deploy.py: OK (%s %s)" % (ref_prog, " ".join(ref_flags)))
