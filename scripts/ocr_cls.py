#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PaddleOCR's text-direction classifier (cls) against the release candidates `nnfuzz convert`
writes from it — weights rounded to float16, and int8 weight-only — through the command line
(issue #35, item 3). For each candidate, each of the four searches (random search, fitness only,
TensorFuzz's CGF, the defaults) and each master seed, one campaign per seed text line:
`nnfuzz fuzz cls.onnx --against CANDIDATE --objective disagree --eps E` with one seed, stopped at
its first disagreement or at the budget. Prints the markdown table (seeds with a disagreement
per master, the median over masters, the median executions to the first one).

The rule, fixed before any run (2026-12-04): a seed counts when its campaign reports a
disagreement — the two models' argmax classes differ (0° vs 180°), the objective's tie margin
excluded — on an input within L∞ 16/255 of the seed in the model's [-1, 1] units (8/255 of a
pixel), within the budget (default 400 executions, batch 4).

With --nan: the NaN/Inf hunt on cls alone (`--objective nan`, no L∞ bound: the whole input
range [-1, 1]). Its rule, fixed before its runs (2026-12-06): a seed counts when its campaign
reports a non-finite value in any output of cls within the budget (default 400 executions,
batch 4).

  ocr_cls.py NNFUZZ CLS.onnx OUT_DIR [--executions N] [--masters 1,2,3] [--nan]
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["314159", "2718", "1414", "1732", "57721", "16180", "0112358", "6022", "299792", "9806"]
BASELINES = [("random", "random search"), ("fitness", "fitness only"), ("tensorfuzz", "TensorFuzz's CGF"),
             ("default", "the defaults")]
EPS = 16 / 255


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"ocr_cls.py: {' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nnfuzz")
    ap.add_argument("cls")
    ap.add_argument("out")
    ap.add_argument("--executions", type=int, default=400)
    ap.add_argument("--masters", default="1,2,3")
    ap.add_argument("--nan", action="store_true", help="the NaN/Inf hunt on cls alone")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    masters = [int(m) for m in a.masters.split(",")]
    seeds = []
    for i, t in enumerate(TEXTS):
        path = os.path.join(a.out, f"seed-{i}.npy")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "tests", "realmodels", "text_seeds.py"), path, "48",
                        "192", t], check=True)
        seeds.append(path)
    rows = []
    for wt in (("nan",) if a.nan else ("f16", "int8")):
        if wt == "nan":
            target, what = ["--objective", "nan"], "NaN/Inf in cls's outputs (no L∞ bound)"
        else:
            cand = os.path.join(a.out, f"cls-{wt}.onnx")
            conv = run([a.nnfuzz, "convert", a.cls, cand, "--weights", wt, "--json"])
            info = json.loads(conv.stdout)
            target = ["--against", cand, "--objective", "disagree", "--eps", f"{EPS:.6f}"]
            what = (f"{wt} weights ({info['values']} values, largest change "
                    f"{100 * info['max_change_of_range']:.2f}% of range)")
        for name, label in BASELINES:
            per_master, execs = [], []
            for m in masters:
                hits = 0
                for i, s in enumerate(seeds):
                    d = os.path.join(a.out, f"{wt}-{name}-m{m}-s{i}")
                    p = run([a.nnfuzz, "fuzz", a.cls] + target + ["--seeds", s, "--input-shape", "3,48,192",
                             "--scale", "-1,1", "--batch", "4", "--executions", str(a.executions), "--baseline",
                             name, "--seed", str(m), "--out", d, "--json", "-q"])
                    j = json.loads(p.stdout)
                    if j["found"]:
                        hits += 1
                        execs.append(j["executions"])
                per_master.append(hits)
                print(f"{wt} {name} master {m}: {hits}/10", file=sys.stderr, flush=True)
            med = statistics.median(execs) if execs else None
            rows.append(f"| {what} | {label} (`{name}`) | " +
                        " | ".join(f"{h}/10" for h in per_master) +
                        f" | {statistics.median(per_master):g}/10 | {'—' if med is None else f'{med:g}'} |")
    head = ("| candidate | search | " + " | ".join(f"master {m}" for m in masters) +
            " | median | median executions to the first |")
    print(head)
    print("|---|---|" + "---|" * (len(masters) + 2))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
