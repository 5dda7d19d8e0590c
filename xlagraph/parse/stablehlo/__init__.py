"""Reader for StableHLO text (MLIR), issue 38: a module is written as the HLO text XLA's own
export (xla/hlo/translate/mhlo_to_hlo) would produce for it, with the user's line for each line,
and read by the compiled HLO reader into the same IR, canonical form included; so canonicalization,
matching, diagnosis and rendering work unchanged, and every check the HLO reader makes applies.

The translation is the compiled core's (rust/src/parse/stablehlo/: the structure of the text,
types and constants, locations, each operation, Shardy's shardings, the printing), run without
the GIL; its readable reference, the Python it was ported from, is tests/stablehlo_reference, and
tests/test_stablehlo_core.py holds the two to the same output byte for byte. Nothing here imports
jaxlib or MLIR: the reader works from the text alone.
"""

from __future__ import annotations

from xlagraph.errors import InputError, ParseError
from xlagraph.ir import GraphInfo, Module

__all__ = ["BYTECODE_MAGIC", "looks_like_stablehlo", "read_stablehlo", "stablehlo_to_hlo"]

# MLIR's bytecode (`ML\xefR`, mlir/lib/Bytecode): portable artifacts, `jax.export`'s serialized form.
BYTECODE_MAGIC = b"ML\xefR"


def looks_like_stablehlo(text: str) -> bool:
    """MLIR text: a `module`, a `func.func` or `#loc` aliases first, or `stablehlo.` ops early."""
    head = text.lstrip("\ufeff \t\r\n")[:200]
    return head.startswith(("module @", "module {", "module attributes", "#loc", "func.func")) or (
        "stablehlo." in text[:2000]
    )


def stablehlo_to_hlo(text: str, path: str = "", *, first_line: int = 1) -> tuple[str, list[int]]:
    """The HLO text of a StableHLO module and the user's line for each of its lines.
    Raises `ParseError` naming `path:line` for what is not read."""
    from xlagraph import _core

    try:
        return _core.stablehlo_to_hlo(text)
    except _core.StableHloError as e:
        message, line, kind = e.args
        if kind == "input":
            raise InputError(path, message) from None
        raise ParseError(path, message, line + first_line - 1 if line else 0) from None


def read_stablehlo(
    text: str, path: str = "", *, first_line: int = 1, info: GraphInfo | None = None
) -> Module:
    """One StableHLO module as the IR the HLO reader builds (`Module.format` is "stablehlo")."""
    from xlagraph.parse.hlo import parse_hlo

    hlo, lines = stablehlo_to_hlo(text, path, first_line=first_line)
    return parse_hlo(hlo, path, first_line=first_line, info=info, line_map=lines, fmt="stablehlo")
