#!/usr/bin/env python3
# Checks the deployment files of a shared campaign (docs/scaling.md): the Kubernetes manifest
# parses (python3-yaml), is an Indexed Job whose pods share a volume and take their worker id
# from the completion index; the Slurm script takes it from SLURM_ARRAY_TASK_ID; and both run
# the command line of tests/sync_smoke.sh's launcher (the line after "# DEPLOY-COMMAND"): the
# same program and the same flags, in the same order (the values are paths and budgets). Runs
# yamllint on the manifest when it is installed (Debian: yamllint).
#   python3 tests/check_deploy.py
import os
import shlex
import shutil
import subprocess
import sys

import yaml

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg):
    sys.exit("check_deploy.py: FAIL: " + msg)


def shape(argv):
    """Program name and flags, in order; the value of --worker as given."""
    prog = os.path.basename(argv[0])
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
if worker != "$(JOB_COMPLETION_INDEX)":
    fail(k8s_path + ": --worker is not $(JOB_COMPLETION_INDEX)")
sync_dir = cmd[cmd.index("--sync") + 1]
if not any(sync_dir.startswith(p.rstrip("/") + "/") for p in mounts.values()):
    fail(k8s_path + ": --sync " + sync_dir + " is not on the shared volume")

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
if subprocess.run(["bash", "-n", slurm_path]).returncode != 0:
    fail(slurm_path + ": bash -n")

if shutil.which("yamllint"):
    r = subprocess.run(["yamllint", "-d", "{extends: relaxed, rules: {line-length: {max: 120}}}", k8s_path])
    if r.returncode != 0:
        fail(k8s_path + ": yamllint")
print("check_deploy.py: OK (%s %s)" % (ref_prog, " ".join(ref_flags)))
