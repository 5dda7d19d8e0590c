"""One table of opcode families (rust/src/families.rs, read by xlagraph/opcodes.py): no module of
the library writes its own set of commutative ops or collectives again (five commutative sets and
four collective sets disagreed before, issue 39)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from xlagraph import opcodes

ROOT = Path(__file__).resolve().parents[1]
# A named part of a family with a meaning of its own, not a copy of one.
OWN_MEANING = {
    "xlagraph/diagnose/recognizers/fsdp_layout.py": "FSDP: reduce-scatter grads, all-gather weights",
}


FAMILIES = (opcodes.COLLECTIVES, opcodes.COMMUTATIVE, opcodes.SIDE_EFFECTS, opcodes.RANDOM, opcodes.RESTATES)


def _string_sets(tree: ast.AST) -> list[tuple[int, set[str]]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Set):
            strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            found.append((node.lineno, strings))
    return found


def test_no_module_writes_a_family_again() -> None:
    copies = []
    for path in sorted((ROOT / "xlagraph").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "xlagraph/opcodes.py" or rel in OWN_MEANING:
            continue
        for line, strings in _string_sets(ast.parse(path.read_text(encoding="utf-8"))):
            # a set of opcodes all of one family (an attribute's list of ops is not one)
            if any(len(strings) >= 2 and strings <= family for family in FAMILIES):
                copies.append(f"{rel}:{line}: {sorted(strings)}")
    assert not copies, "use xlagraph.opcodes:\n" + "\n".join(copies)


# A Rust array of strings (`["add", "or"]`) or a match's alternatives (`"add" | "or"`).
_RUST_ARRAY = re.compile(r'\[\s*(?:"[^"\n]*"\s*,\s*)+"[^"\n]*"\s*,?\s*\]')
_RUST_ALTERNATIVES = re.compile(r'"[^"\n]*"(?:\s*\|\s*"[^"\n]*")+')


def test_no_rust_file_writes_a_family_again() -> None:
    # The crate's side of the one table: a file needing part of a family filters families.rs
    # (matching/sum_terms.rs held the commutative ops less `xor` as its own array before).
    copies = []
    for path in sorted((ROOT / "rust" / "src").rglob("*.rs")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "rust/src/families.rs":
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (_RUST_ARRAY, _RUST_ALTERNATIVES):
            for found in pattern.finditer(text):
                strings = set(re.findall(r'"([^"\n]*)"', found.group(0)))
                if any(len(strings) >= 2 and strings <= family for family in FAMILIES):
                    line = text.count("\n", 0, found.start()) + 1
                    copies.append(f"{rel}:{line}: {sorted(strings)}")
    assert not copies, "use crate::families:\n" + "\n".join(copies)


def test_the_families_are_what_xla_says() -> None:
    # HloInstruction::IsOpElementwise + commutativity (hlo_instruction.cc), and the async forms
    assert {"add", "multiply", "maximum", "minimum", "and", "or", "xor"} <= opcodes.COMMUTATIVE
    assert not opcodes.COMMUTATIVE & {"subtract", "divide", "power", "compare", "atan2"}
    assert all(op.removesuffix("-start") in opcodes.COLLECTIVE_KINDS for op in opcodes.COLLECTIVES)
    assert "collective-permute" not in opcodes.REPLICA_GROUP_COLLECTIVES  # source_target_pairs
    assert {"all-reduce-start", "all-reduce-done", "rng", "outfeed"} <= opcodes.SIDE_EFFECTS
