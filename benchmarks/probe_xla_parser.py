"""What does XLA's ``hlo_module_from_text`` check? (It is the reference in the parse benchmark.)

Runs small hand-made modules with one defect each, then times the parser on a large generated module whose
ROOT (the last instruction) refers to an undefined operand, to see whether it raises and how late.
Usage: ``python benchmarks/probe_xla_parser.py [--size 120k]``.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from jaxlib import _hlo

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import data_path

GOOD = """HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

ENTRY %main (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %add = f32[2]{0} add(f32[2]{0} %p, f32[2]{0} %p)
}
"""
ADD = "ROOT %add = f32[2]{0} add(f32[2]{0} %p, f32[2]{0} %p)"

CASES: dict[str, str] = {
    "well-formed": GOOD,
    "undefined operand": GOOD.replace(ADD, "ROOT %add = f32[2]{0} add(f32[2]{0} %p, f32[2]{0} %q)"),
    "operand shape annotation != operand's shape": GOOD.replace(
        ADD, ADD.replace("(f32[2]{0} %p", "(f32[7]{0} %p")
    ),
    "ROOT shape != computation signature": GOOD.replace("ROOT %add = f32[2]{0}", "ROOT %add = f32[3]{0}"),
    "entry_computation_layout != parameters": GOOD.replace("{(f32[2]{0})->", "{(f32[3]{0})->"),
    "wrong result shape on a non-root (negate f32[2] -> f32[5])": GOOD.replace(
        "  ROOT", "  %x = f32[5]{0} negate(f32[2]{0} %p)\n  ROOT"
    ),
    "wrong operand count (negate with 2 operands)": GOOD.replace(
        "  ROOT", "  %x = f32[2]{0} negate(f32[2]{0} %p, f32[2]{0} %p)\n  ROOT"
    ),
    "use before definition": GOOD.replace(
        "  %p = f32[2]{0} parameter(0)\n  ROOT",
        "  %x = f32[2]{0} negate(f32[2]{0} %p)\n  %p = f32[2]{0} parameter(0)\n  ROOT",
    ),
}


def outcome(text: str) -> tuple[str, float]:
    start = time.perf_counter()
    try:
        _hlo.hlo_module_from_text(text)
        result = "accepted"
    except Exception as exc:
        lines = [line.strip() for line in str(exc).splitlines() if "error:" in line]
        result = "raises: " + (lines[0] if lines else str(exc).splitlines()[0])[:160]
    return result, time.perf_counter() - start


def break_last_root(text: str) -> str:
    """Rename the first operand of the last ROOT (the entry computation's) to an undefined name."""
    root = text.rindex("ROOT ")
    line_end = text.index("\n", root)
    line = text[root:line_end]
    first_operand = re.search(r"\(([^()%]*%)([\w.\-]+)", line)
    if first_operand is None:
        raise ValueError("no operand found on the last ROOT line")
    broken = line[: first_operand.start(2)] + "undefined.0" + line[first_operand.end(2) :]
    return text[:root] + broken + text[line_end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="120k")
    args = parser.parse_args(argv)

    for name, text in CASES.items():
        print(f"{name:62} {outcome(text)[0]}")

    path = data_path(args.size, "a")
    if not path.exists():
        print(f"\n{path.name} missing: run generate.py for the large-module timing")
        return 0
    text = path.read_text()
    good, good_s = outcome(text)
    bad, bad_s = outcome(break_last_root(text))
    print(f"\n{path.name}: as generated      {good_s:.3f} s  {good}")
    print(f"{path.name}: undefined operand in the last ROOT  {bad_s:.3f} s  {bad}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
