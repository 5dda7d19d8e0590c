"""Reader for StableHLO text (MLIR), issue 38: the compiled core writes a module as the HLO text
XLA's own export would produce for it, read by the compiled HLO reader into the same IR (how, and
its readable reference in tests/: docs/reading.md, "StableHLO (MLIR text)"). Nothing here imports
jaxlib or MLIR: the reader works from the text alone."""

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
