"""The StableHLO reader as it was written in Python, kept as the readable reference of the
compiled one (rust/src/parse/stablehlo/, which the library uses): tests/test_stablehlo_core.py
checks that the core writes the same HLO text and line map, byte for byte, and refuses the same
input with the same message and line. Nothing in xlagraph/ imports this package.

structure.py splits the text (functions, operations, regions, `#loc` aliases), emit.py writes
computations and instructions, hlo_text.py prints them, ops*.py translate each operation,
mlir_types.py types and constants, locations.py `loc(...)` into `metadata={op_name source_file
source_line}`, shardy*.py Shardy's shardings.
"""

from __future__ import annotations

__all__ = ["reference_to_hlo"]


def reference_to_hlo(text: str) -> tuple:
    """What the reference makes of `text`: ("hlo", hlo_text, lines), ("parse", message, line)
    (line 0: none) or ("input", message), as `xlagraph.parse.stablehlo.stablehlo_to_hlo` maps
    them to ParseError and InputError."""
    from tests.stablehlo_reference.hlo_text import to_hlo_text
    from tests.stablehlo_reference.structure import StructureError, read_structure

    try:
        module = read_structure(text)
        hlo, lines = to_hlo_text(module)
    except StructureError as e:
        return ("parse", e.message, e.line)
    except RecursionError:
        return ("input", "StableHLO nested too deeply to read")
    except (ValueError, IndexError, KeyError) as e:
        return ("input", f"malformed StableHLO text ({e.__class__.__name__}: {str(e)[:80]})")
    return ("hlo", hlo, lines)
