#!/usr/bin/env python3
"""Write the benchmark scripts' tables into tests/bench/RESULTS.md.

    python3 tests/bench/assemble_results.py OUT [--results tests/bench/RESULTS.md]

OUT is the folder a run wrote its tables to (tests/bench/run_gpu.sh: OUT=...; bench_kernel.py: --out
OUT/bench_kernel.md). RESULTS.md marks where each file's tables go:

    <!-- from bench_gpu.md -->
    ...whatever is there now...
    <!-- end bench_gpu.md -->

Each such block whose file is in OUT is replaced by the file's text, its headings moved two levels down
(the file's "# title" becomes "### title", inside RESULTS.md's "## section"); gpu_tests.log becomes its
pytest summary lines in a code block. Blocks whose file is missing are left as they are, and said so.
Nothing else in RESULTS.md changes: the notes on the goals are written by hand from the new tables.
"""
import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BLOCK = re.compile(r"(<!-- from (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- end (?P=name) -->)", re.S)


def demote(text, levels=2):
    """Markdown headings `levels` deeper (outside code blocks)."""
    out, fenced = [], False
    for line in text.rstrip("\n").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,6} ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out)


def test_summary(text):
    """The pytest lines that say what ran: one per test result, and the final count."""
    keep = [line for line in text.splitlines()
            if re.search(r"(PASSED|FAILED|SKIPPED|ERROR)( |$)|^=+ .*(passed|failed|error|skipped)", line)]
    return "```\n" + "\n".join(keep or text.strip().splitlines()[-20:]) + "\n```"


def assemble(results_text, folder):
    """(new text, [names filled], [names missing])."""
    filled, missing = [], []

    def replace(match):
        name = match.group("name")
        path = folder / name
        if not path.is_file():
            missing.append(name)
            return match.group(0)
        content = path.read_text()
        body = test_summary(content) if name.endswith(".log") else demote(content)
        filled.append(name)
        return f"{match.group(1)}{body}\n{match.group(4)}"

    return BLOCK.sub(replace, results_text), filled, missing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the folder with the run's bench_*.md (and gpu_tests.log)")
    parser.add_argument("--results", default=str(HERE / "RESULTS.md"), help="the file to update")
    options = parser.parse_args()
    results = Path(options.results)
    text, filled, missing = assemble(results.read_text(), Path(options.out))
    results.write_text(text)
    print(f"{results}: filled {', '.join(filled) or 'nothing'}"
          + (f"; not in {options.out}, left as they were: {', '.join(missing)}" if missing else ""))
    return 0 if filled else 1


if __name__ == "__main__":
    sys.exit(main())
