"""A block of layers trained from a step on (h38_tutor: `model.active` grows from 2 to 3 blocks
under torch.compile, real torch_xla 2.9 capture): SGD then updates four tensors more, three of
them look-alikes of the updates before (`add(w, mul(g, lr))` of f32[32]). The optimizer's graph
before and after is those outputs added, in place; every update of both keeps its counterpart.
`h1` ranks the inputs after the new ones one place off per new input, so pairing the look-alikes
by `h1` rotated them into a false `output_permutation` (issue 37, "look-alike outputs ... given
a false permutation"); each one's own inputs, aligned by shape from both ends, pair them.
"""

from __future__ import annotations

import lzma
from pathlib import Path

from xlagraph.diagnose.causes import CauseKind
from xlagraph.diff import diff_modules
from xlagraph.ir import Module
from xlagraph.parse.hlo import parse_hlo

HLO = (
    Path(__file__).resolve().parent.parent
    / "fixtures/torch_xla/corpus/captures/h38_tutor_openxla_grow_depth/hlo"
)


def _read(prefix: str) -> Module:
    (path,) = HLO.glob(prefix + "*")
    text = lzma.decompress(path.read_bytes()).decode() if path.suffix == ".xz" else path.read_text()
    return parse_hlo(text, path.name)


def test_updates_of_a_new_block_are_added_in_place() -> None:
    two, three = _read("module_0003."), _read("module_0008.")
    result = diff_modules(two, three)
    kinds = {c.kind for c in result.causes}
    assert not kinds & {CauseKind.OUTPUT_PERMUTATION, CauseKind.PARAMETER_PERMUTATION}, kinds
    moved = [(m.left, m.right) for c in result.causes for m in c.mapping if m.left != m.right]
    assert moved == []
    added = sorted(
        int(ch.new.split(":")[0]) for c in result.causes for ch in c.changes if ch.what == "output" and ch.new
    )
    assert added == [9, 10, 11, 12]  # the third block's LayerNorm and Linear, between blocks 1 and out
