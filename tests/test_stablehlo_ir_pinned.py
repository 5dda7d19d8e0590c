"""The IR read_stablehlo builds for every `.mlir` fixture and corpus module, pinned: a digest of the
module, its computations, every instruction (metadata and lines included) and its canonical form,
as built by main at 976eb452 before the reader's speed work (h-shfast), which must change no
answer; repinned at h-inline38, whose canonical form is the program with its `call`s inlined (the 122
modules that changed are exactly those with a call inlined); repinned at h-xfail39a, whose reader spells
Shardy's meshes and axes by size and place (the 20 that changed are exactly the Shardy modules whose
meshes it reads; the two whose header escapes quotes as `\22` are read as before). Repinned at
h-mlir42, whose reader takes statements over several lines: the 12 that changed are whole corpus
files refused before and after, now for their next reason (no module read changed). A change to what is
read updates `stablehlo_ir_pinned.json` on purpose: `python tests/test_stablehlo_ir_pinned.py` writes it."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from xlagraph.canonical.engine import canonicalize
from xlagraph.errors import InputError, ParseError
from xlagraph.ir import Module
from xlagraph.parse.stablehlo import read_stablehlo

ROOT = Path(__file__).resolve().parents[1]
PINNED = Path(__file__).with_name("stablehlo_ir_pinned.json")


def digest(m: Module) -> str:
    c = canonicalize(m)
    parts = [repr((m.name, m.header, m.format, m.stack_frames, m.notes))]
    for comp in m.computations:
        parts.append(repr((comp.name, comp.is_entry, comp.line)))
        parts.extend(repr(tuple(i)) for i in comp.instructions)
    forms = sorted((k, repr(v)) for k, v in c.computations.items())
    parts.append(repr((c.fingerprint, c.order, forms)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def digests() -> dict[str, str]:
    out = {}
    for p in sorted(ROOT.joinpath("fixtures").rglob("*")):
        if not p.is_file() or not (p.suffix == ".mlir" or "stablehlo_corpus/modules" in p.as_posix()):
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        name = p.relative_to(ROOT).as_posix()
        try:
            out[name] = digest(read_stablehlo(text, name))
        except (InputError, ParseError) as e:
            out[name] = f"ERR {e}"
    return out


def test_every_fixture_reads_to_the_pinned_ir() -> None:
    pinned = json.loads(PINNED.read_text())
    got = digests()
    assert sorted(got) == sorted(pinned)
    assert [k for k in pinned if got[k] != pinned[k]] == []


if __name__ == "__main__":
    PINNED.write_text(json.dumps(digests(), indent=0, sort_keys=True) + "\n")
    sys.exit(0)
