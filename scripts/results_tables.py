#!/usr/bin/env python3
"""The result tables of docs/results.md and the README's summary, written from runs.

scripts/reproduce.sh calls it; each table lives in a document between two markers,
    <!-- reproduce:NAME -->  ...  <!-- /reproduce:NAME -->
and holds the markdown table a driver printed, then one line saying how it was made (command,
commit, build, CPU). Nothing between the markers is written by hand.

  results_tables.py extract OUTPUT TABLE        the first markdown table of a driver's output
  results_tables.py lm TABLE OUTPUT...          the language-model table from char_rnn outputs
  results_tables.py summary TABLE NAME=FILE...  the README's summary rows from table files
  results_tables.py write DOC NAME TABLE NOTE   put TABLE (and the NOTE line) between NAME's markers
  results_tables.py check DOC NAME TABLE        exit 1, printing both, unless DOC holds TABLE there
  results_tables.py from-doc DOC NAME TABLE     the table DOC holds between NAME's markers, into TABLE
"""
import re
import statistics
import sys
from pathlib import Path

BASELINES = [("random", "random search"), ("fitness", "fitness only"), ("tensorfuzz", "TensorFuzz's CGF"),
             ("default", "the defaults")]


def markers(name):
    return f"<!-- reproduce:{name} -->", f"<!-- /reproduce:{name} -->"


def fail(message):
    print(f"results_tables.py: {message}", file=sys.stderr)
    sys.exit(2)


def extract(output, table):
    lines = Path(output).read_text().splitlines()
    rows, inside = [], False
    for line in lines:
        if line.startswith("|"):
            inside = True
            rows.append(line.rstrip())
        elif inside:
            break
    if not rows:
        fail(f"'{output}' holds no markdown table")
    Path(table).write_text("\n".join(rows) + "\n")


def lm(table, outputs):
    """One row per baseline: per master seed, the words found by any of its runs, and the median
    words per run (char_rnn's '## MODE: N runs ...' blocks)."""
    block = re.compile(r"## (.+?): (\d+) runs, \d+ executions in .*?\n"
                       r"words found by any run: (\d+) of (\d+); median words per run: ([\d.]+)")
    found = {}  # label -> [(any, of, median)] per output file
    for out in outputs:
        text = Path(out).read_text()
        for m in block.finditer(text):
            found.setdefault(m.group(1), []).append((int(m.group(3)), int(m.group(4)), float(m.group(5))))
    if not found:
        fail(f"no '## MODE: ...' blocks in {', '.join(outputs)}")
    head = "| language model | " + " | ".join(f"master {k + 1}: words found (median per run)"
                                                for k in range(len(outputs))) + " | median over masters |"
    rows = [head, "|---|" + "---|" * (len(outputs) + 1),
            "| TensorFuzz (paper), 24 h: CGF / random search | " + " | ".join("6 / 1 of 10" for _ in outputs) +
            " | 6 / 1 of 10 |"]
    for name, label in BASELINES:
        key = next((k for k in found if k.startswith(label)), None)
        if key is None:
            continue
        cells = [f"{a} of {n} ({med:g})" for a, n, med in found[key]]
        rows.append(f"| {label} (`{name}`) | " + " | ".join(cells) +
                    f" | {statistics.median(a for a, _, _ in found[key]):g} of {found[key][0][1]} |")
    Path(table).write_text("\n".join(rows) + "\n")


def baseline_cells(table_file):
    """{baseline name: the 'all' column} of a guidance table."""
    cells = {}
    for line in Path(table_file).read_text().splitlines():
        m = re.match(r"\| .*\(`(\w+)`\) \|(.*)\|$", line)
        if m:
            parts = [p.strip() for p in m.group(2).split("|")]
            cells[m.group(1)] = parts  # masters..., all, median executions, median corpus
    return cells


def summary(table, pairs):
    rows = ["| Experiment (three master seeds) | TensorFuzz (paper): CGF / random | random search | fitness only | "
            "TensorFuzz's CGF | the defaults |", "|---|---|---|---|---|---|"]
    for pair in pairs:
        title, paper, path = pair.split("=", 2)
        p = Path(path)
        if not p.exists():
            continue
        if "language" in title.lower():
            cells = {}
            for line in p.read_text().splitlines():
                m = re.match(r"\| .*\(`(\w+)`\) \|.*\| ([^|]+) \|$", line)
                if m:
                    cells[m.group(1)] = m.group(2).strip()
            values = [cells.get(n, "—") for n, _ in BASELINES]
        else:
            c = baseline_cells(p)
            values = []
            for n, _ in BASELINES:
                if n not in c:
                    values.append("—")
                    continue
                parts = c[n]
                values.append(f"{parts[-3]} (median {parts[-2]} exec.)" if parts[-2] != "—" else parts[-3])
        rows.append(f"| {title} | {paper} | " + " | ".join(values) + " |")
    Path(table).write_text("\n".join(rows) + "\n")


def between(doc_text, name):
    begin, end = markers(name)
    i, j = doc_text.find(begin), doc_text.find(end)
    if i < 0 or j < i:
        fail(f"no '{begin}' ... '{end}' markers")
    return i + len(begin), j


def write(doc, name, table, note):
    text = Path(doc).read_text()
    i, j = between(text, name)
    body = Path(table).read_text().rstrip("\n")
    text = text[:i] + "\n" + body + "\n\n" + note.strip() + "\n" + text[j:]
    Path(doc).write_text(text)


def table_lines(text):
    return [line.rstrip() for line in text.splitlines() if line.startswith("|")]


def cpu_has_avx512():
    try:
        return any(line.startswith("flags") and " avx512f" in line for line in open("/proc/cpuinfo"))
    except OSError:
        return False


def check(doc, name, table):
    text = Path(doc).read_text()
    i, j = between(text, name)
    committed, now = table_lines(text[i:j]), table_lines(Path(table).read_text())
    if committed == now:
        print(f"results_tables.py: {name}: the same as {doc} ({len(now)} lines)")
        return 0
    # The quick tables were seen to differ between AVX2-only AMD hosts and an AVX-512 Intel host
    # (docs/results.md, "The quick subset"): on an AVX-512 host the table recorded for one counts.
    if cpu_has_avx512() and f"<!-- reproduce:{name}-avx512 -->" in text:
        i, j = between(text, name + "-avx512")
        if table_lines(text[i:j]) == now:
            print(f"results_tables.py: {name}: the same as {doc}'s table for AVX-512 hosts ({len(now)} lines)")
            return 0
    print(f"results_tables.py: {name}: differs from {doc}\n--- committed\n" + "\n".join(committed) +
          "\n--- this run\n" + "\n".join(now), file=sys.stderr)
    return 1


def from_doc(doc, name, table):
    text = Path(doc).read_text()
    i, j = between(text, name)
    rows = table_lines(text[i:j])
    if not rows:
        fail(f"'{doc}' holds no table between the markers of {name}")
    Path(table).write_text("\n".join(rows) + "\n")


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "extract" and len(args) == 2:
        extract(*args)
    elif cmd == "lm" and len(args) >= 2:
        lm(args[0], args[1:])
    elif cmd == "summary" and len(args) >= 2:
        summary(args[0], args[1:])
    elif cmd == "write" and len(args) == 4:
        write(*args)
    elif cmd == "check" and len(args) == 3:
        return check(*args)
    elif cmd == "from-doc" and len(args) == 3:
        from_doc(*args)
    else:
        fail(f"bad arguments: {' '.join(argv[1:])}\n{__doc__}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
