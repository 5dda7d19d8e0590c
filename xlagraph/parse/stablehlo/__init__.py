"""Reader for StableHLO text (MLIR), issue 38: a module is written as the HLO text XLA's own
export (xla/hlo/translate/mhlo_to_hlo) would produce for it, with the user's line for each line,
and read by the compiled HLO reader into the same IR, canonical form included; so canonicalization,
matching, diagnosis and rendering work unchanged, and every check the HLO reader makes applies.

structure.py splits the text (functions, operations, regions, `#loc` aliases), emit.py writes
computations and instructions, hlo_text.py prints them, ops*.py translate each operation,
mlir_types.py types and constants, locations.py `loc(...)` into `metadata={op_name source_file
source_line}`. Nothing here imports jaxlib or MLIR: the reader works from the text alone.
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
    from xlagraph.parse.stablehlo.hlo_text import to_hlo_text
    from xlagraph.parse.stablehlo.structure import StructureError, read_structure

    try:
        module = read_structure(text)
        hlo, lines = to_hlo_text(module)
    except StructureError as e:
        raise ParseError(path, e.message, e.line + first_line - 1 if e.line else 0) from None
    except RecursionError:
        raise InputError(path, "StableHLO nested too deeply to read") from None
    except (ValueError, IndexError, KeyError) as e:  # text no MLIR printer writes, met off the paths above
        raise InputError(path, f"malformed StableHLO text ({e.__class__.__name__}: {str(e)[:80]})") from None
    return hlo, lines


def read_stablehlo(
    text: str, path: str = "", *, first_line: int = 1, info: GraphInfo | None = None
) -> Module:
    """One StableHLO module as the IR the HLO reader builds (`Module.format` is "stablehlo")."""
    from xlagraph.parse.hlo import parse_hlo

    hlo, lines = stablehlo_to_hlo(text, path, first_line=first_line)
    return parse_hlo(hlo, path, first_line=first_line, info=info, line_map=lines, fmt="stablehlo")
