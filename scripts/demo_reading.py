#!/usr/bin/env python3
"""One line that reads a demo table: the four baselines' counts side by side and what they say.

  demo_reading.py nan OUTPUT       mnist_nan's "summary: NaN found in random a/n, ..." line
  demo_reading.py table OUTPUT     a markdown table whose rows are the four baselines (mnist_quantization):
                                   the last column
  demo_reading.py lm OUTPUT        char_rnn fuzz's "## MODE: ..." blocks (words found by any run)
"""
import re
import sys
from pathlib import Path

LABELS = ["random search", "fitness only", "TensorFuzz's CGF", "the defaults"]
NAMES = ["random", "fitness", "tensorfuzz", "default"]


def counts(kind, text):
    """[(found, out_of)] in LABELS order (None where a row is missing)."""
    got = [None] * 4
    if kind == "nan":
        m = re.search(r"^summary: NaN found in (.*) runs", text, re.M)
        if m:
            for part in m.group(1).split(", "):
                name, frac = part.split(" ")
                a, n = frac.split("/")
                if name in NAMES:
                    got[NAMES.index(name)] = (int(a), int(n))
    elif kind == "table":
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] in LABELS:
                a, n = cells[-1].split("/")
                got[LABELS.index(cells[0])] = (int(a), int(n))
    elif kind == "lm":
        for m in re.finditer(r"^## (.+?): .*\nwords found by any run: (\d+) of (\d+)", text, re.M):
            for i, label in enumerate(LABELS):
                if m.group(1).startswith(label):
                    got[i] = (int(m.group(2)), int(m.group(3)))
    else:
        sys.exit(f"demo_reading.py: unknown kind '{kind}' (nan, table, lm)")
    return got


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kind, path = sys.argv[1], sys.argv[2]
    got = counts(kind, Path(path).read_text())
    if any(g is None for g in got):
        missing = [LABELS[i] for i, g in enumerate(got) if g is None]
        print(f"reading: (rows missing: {', '.join(missing)})")
        return
    rate = [a / n for a, n in got]
    rnd, fit, tf, dflt = rate
    words = []
    words.append("TensorFuzz's CGF beats random search, as in the paper" if tf > rnd else
                 "TensorFuzz's CGF does not beat random search here")
    if dflt > fit and kind == "lm":
        words.append("the defaults (fitness + aimed noise + projected coverage) beat fitness only; "
                     "docs/results.md shows the aimed noise, not the coverage, does it")
    elif dflt > fit:
        words.append("coverage adds to fitness: the defaults beat fitness only")
    elif dflt == fit:
        words.append("fitness alone does as well as the defaults: at this budget coverage adds nothing measurable")
    else:
        words.append("fitness alone does better than the defaults here")
    if fit > tf:
        words.append("fitness alone beats TensorFuzz's CGF")
    side = ", ".join(f"{LABELS[i]} {a}/{n}" for i, (a, n) in enumerate(got))
    print(f"reading: {side}. " + "; ".join(words) + ".")


if __name__ == "__main__":
    main()
