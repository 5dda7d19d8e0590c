"""torch.compile's half joined to the XLA graphs: the rules that rewrite a recompile's causes
(kind, lines, fix) from what dynamo says of the retrace that compiled its graph. One rule a file,
over immutable inputs (`Recompile`, `Retrace`); `report/dynamo.py` builds those and calls `join`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.dynamo_join.backward import cite_backward
from xlagraph.diagnose.dynamo_join.branch_guards import branch_guard_graphs
from xlagraph.diagnose.dynamo_join.bridge_branch import join_branch_graphs
from xlagraph.diagnose.dynamo_join.guard_lines import cite_guards
from xlagraph.diagnose.dynamo_join.modes import mode_graphs
from xlagraph.diagnose.dynamo_join.retrace import Retrace
from xlagraph.diagnose.dynamo_join.retraced_outputs import fold_retraced_outputs
from xlagraph.diagnose.dynamo_join.warm_up import warm_up_cuts
from xlagraph.diagnose.recompile import Recompile

__all__ = ["join"]


def join(
    recompiles: Sequence[Recompile], retraces: Mapping[str, Retrace], phases: Mapping[str, set[str]]
) -> tuple[Recompile, ...]:
    """`recompiles` (each naming in `dynamo` the compile that made its graph) rewritten by the rules in
    order; `retraces` by compile id, `phases` the phases (warm-up, steady) each variant ran in."""
    explained = cite_guards(recompiles, retraces)
    explained = fold_retraced_outputs(cite_backward(mode_graphs(explained, retraces)), retraces)
    explained = branch_guard_graphs(explained, retraces)
    return warm_up_cuts(join_branch_graphs(explained), phases)
