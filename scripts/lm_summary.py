#!/usr/bin/env python3
"""Summarises scripts/lm_protocol.sh's tables (out/lm/*.txt): per list, decoding and mode, the
words found by any of a master seed's runs, the median words per run and the executions per
second, for each master seed and their median. Usage: scripts/lm_summary.py [DIR]"""
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

folder = Path(sys.argv[1] if len(sys.argv) > 1 else "out/lm")
rows = defaultdict(dict)  # (list, decoding, mode) -> master -> (any, median, exec/s, first)
order = []
for f in sorted(folder.glob("*.txt")):
    m = re.match(r"(rule\d)-(sampled|greedy)(-alone)?-m(\d+)\.txt", f.name)
    if not m:
        continue
    lst, dec, master = m.group(1), m.group(2), int(m.group(4))
    text = f.read_text()
    for block in re.finditer(
            r"## (.+?): (\d+) runs, (\d+) executions in .*?\((\d+) exec/s per run\)\n"
            r"words found by any run: (\d+) of (\d+); median words per run: ([\d.]+)\n"
            r"median time to a run's first finding \(runs that found one\): (\S+) executions", text):
        mode = block.group(1)
        key = (lst, dec, mode)
        if key not in order:
            order.append(key)
        first = block.group(8)
        rows[key][master] = (int(block.group(5)), float(block.group(7)), int(block.group(4)),
                             None if first == "nan" else float(first))

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")

print("| list | decoding | mode | words found by any run, per master seed | median | median words per run, per master | median | exec/s per run (median) |")
print("|---|---|---|---|---|---|---|---|")
for key in order:
    per = rows[key]
    masters = sorted(per)
    anyw = [per[m][0] for m in masters]
    medw = [per[m][1] for m in masters]
    eps = [per[m][2] for m in masters]
    print(f"| {key[0]} | {key[1]} | {key[2]} | {' / '.join(map(str, anyw))} | {med(anyw):g} | "
          f"{' / '.join(f'{x:g}' for x in medw)} | {med(medw):g} | {med(eps):,.0f} |")
