"""`canonicalize`: the compiled core's canonical form of a module (rust/src/canon/), wrapped as
`CanonicalModule` over the module's own IR, or where the module has `call`s XLA inlines, over
the inlined module the reader made beside it (`Module.inlined`, rust/src/canon/inline.rs).

A module the HLO text reader made comes with its canonical form (`Module.core`, computed while
reading); any other module (lazy IR, a proto, one built by hand) is handed to the core as it
is (`_core.canonicalize_ir`). One engine either way: the rules are written once, in the core;
tests/canonical_reference.py writes them plainly, as the oracle the tests hold the core to.
"""

from __future__ import annotations

from dataclasses import replace

from xlagraph import _core
from xlagraph._gc import paused_gc
from xlagraph.canonical.model import CanonicalComputation, CanonicalModule, assembled
from xlagraph.errors import ParseError
from xlagraph.ir import Module

__all__ = ["canonicalize"]


def canonicalize(module: Module) -> CanonicalModule:
    """Canonical form of every computation, callees first, and the module fingerprint. Raises
    `ParseError` for a module canonicalization refuses (an operand cycle, invalid iota replica
    groups, an operand no instruction defines, ...)."""
    program = module.inlined
    if program is not None:  # its calls inlined, as XLA compiles it (issue 37)
        # A module relabelled after reading (`dataclasses.replace`), or without its reader's
        # canonical form (`core=None`: the Python IR's way into the core): so is its program.
        changes: dict = {}
        if (program.info, program.path, program.notes) != (module.info, module.path, module.notes):
            changes.update(info=module.info, path=module.path, notes=module.notes)
        if module.core is None:
            changes["core"] = None
        return canonicalize(replace(program, **changes) if changes else program)
    with paused_gc():
        core = module.core
        if core is not None and core[0] is module.computations and core[1] is not None:
            return _from_core(module, core[1])
        return _from_core(module, _core.canonicalize_ir(module.computations))


def _from_core(module: Module, core: tuple) -> CanonicalModule:
    """The `CanonicalModule` of what the core computed: `(message, line)` for a module
    canonicalization refuses, else `(fingerprint, order, forms)`, each form a computation's index
    and `CanonicalComputation`'s other fields (callees first)."""
    if len(core) == 2:
        message, line = core
        raise ParseError(module.path or module.name, message, line)
    fingerprint, order, forms = core
    comps = module.computations
    result: dict[str, CanonicalComputation] = {}
    for index, *fields in forms:
        comp = comps[index]
        result[comp.name] = assembled((comp, *fields))
    return CanonicalModule(module, result, fingerprint, order)
