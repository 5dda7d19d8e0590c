"""The inputs a training step updates, found over the canonical dictionaries: the readable
reference of rust/src/canon/handle.rs `updated_inputs`, which
`xlagraph.diagnose.recognizers._dataflow.updated_inputs` calls. tests/test_canon_map.py holds the
core to it."""

from __future__ import annotations

from collections.abc import Iterable

from xlagraph.diagnose.recognizers._dataflow import restated
from xlagraph.diagnose.shapes import shape_of

__all__ = ["updated_inputs_reference"]


def updated_inputs_reference(comp, outputs: Iterable[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Output -> the input of its own shape it reads (past restating ops, and one arithmetic op
    deeper), for the `outputs` that have one."""
    found = {}
    for o in outputs:
        shape = shape_of(comp, o)
        near = list(comp.operands.get(restated(comp, o), ()))
        # One arithmetic op deeper: AdamW's decay `p * (1 - lr * wd)` before the step, Adam's
        # `v * beta2 + (1 - beta2) * g * g`.
        near += [
            y
            for x in near
            if comp.computation.by_name.get(restated(comp, x)) is not None
            and comp.computation.by_name[restated(comp, x)].opcode in _ARITHMETIC
            for y in comp.operands.get(restated(comp, x), ())
        ]
        for x in near:
            p = restated(comp, x)
            if p in comp.param_number and shape_of(comp, p) == shape:
                found[o] = p
                break
    return found


_ARITHMETIC = frozenset({"multiply", "add", "subtract", "divide"})
