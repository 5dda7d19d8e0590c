"""xlagraph as a library: the calls the CLI makes, with typed results.

    >>> import xlagraph
    >>> d = xlagraph.diff("fixtures/torch_xla/ragged_batch/a.hlo", "fixtures/torch_xla/ragged_batch/b.hlo")
    >>> d.verdict, str(d.causes[0].kind)
    ('different', 'parameter_shape')
    >>> g = d.left.to_networkx()
    >>> g.number_of_nodes() == d.left.instruction_count
    True

`load` / `load_all` read graphs (`Module`, `Computation`, `Instruction`; `to_networkx()`),
`diff` compares two (`Diff`), `report` explains a run's recompiles (`Report`), `check` is the
CI gate (`Check`), `diverge` says where two fingerprinted runs part (`Divergence`), `graphs`
lists a source's graphs, `ranks` compares the ranks of a run (`Ranks`). Every result is
immutable; bad input raises `InputError` naming the file and line. docs/api.md is the reference.
"""

from typing import TYPE_CHECKING, Any

from xlagraph.errors import InputError, ParseError, XlagraphError

if TYPE_CHECKING:  # imported when first used: __getattr__ below
    from xlagraph.api._capture import Captured, captured, process_folders
    from xlagraph.api._diff import Diff, diff
    from xlagraph.api._diverge import Divergence, diverge
    from xlagraph.api._graphs import Graphs, graphs
    from xlagraph.api._module import Computation, Instruction, Module, load, load_all, node_id
    from xlagraph.api._ranks import Ranks, ranks
    from xlagraph.api._report import Check, Report, check, report, run_choice
    from xlagraph.api._watch import Event, watch

__all__ = [
    "Captured",
    "Check",
    "Computation",
    "Diff",
    "Divergence",
    "Event",
    "Graphs",
    "InputError",
    "Instruction",
    "Module",
    "ParseError",
    "Ranks",
    "Report",
    "XlagraphError",
    "captured",
    "check",
    "diff",
    "diverge",
    "graphs",
    "load",
    "load_all",
    "node_id",
    "process_folders",
    "ranks",
    "report",
    "run_choice",
    "watch",
]


# Each name's module, imported when the name is first asked for: a command pays only for its own
# (`graphs` never imports the diff's or the report's modules; the listing's reader costs 50 ms of
# imports that `report` and `diff` never need).
_HOMES = {
    "_capture": ("Captured", "captured", "process_folders"),
    "_diff": ("Diff", "diff"),
    "_diverge": ("Divergence", "diverge"),
    "_graphs": ("Graphs", "graphs"),
    "_module": ("Computation", "Instruction", "Module", "load", "load_all", "node_id"),
    "_ranks": ("Ranks", "ranks"),
    "_report": ("Check", "Report", "check", "report", "run_choice"),
    "_watch": ("Event", "watch"),
}
_HOME = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"xlagraph.api.{module}"), name)
    globals()[name] = value  # asked once
    return value
