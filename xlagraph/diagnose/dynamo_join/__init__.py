"""torch.compile's half joined to the XLA graphs: the rules that rewrite a recompile's causes
(kind, lines, fix) from what dynamo says of the retrace that compiled its graph, in files by what
they decide, over immutable inputs (`Recompile`, `Retrace`); `report/dynamo.py` calls `join`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xlagraph.diagnose.dynamo_join.branches import (
    branch_guard_graphs,
    fold_retraced_outputs,
    join_branch_graphs,
)
from xlagraph.diagnose.dynamo_join.bridge_step import after_bridge_step
from xlagraph.diagnose.dynamo_join.expected import mode_graphs, warm_up_cuts
from xlagraph.diagnose.dynamo_join.grown_modules import grown_modules
from xlagraph.diagnose.dynamo_join.handover import bridge_flush, moved_work
from xlagraph.diagnose.dynamo_join.lines import cite_backward, cite_guards
from xlagraph.diagnose.dynamo_join.new_cuts import retrace_cuts
from xlagraph.diagnose.dynamo_join.optimizer import follow_forward
from xlagraph.diagnose.dynamo_join.picked_module import picked_modules
from xlagraph.diagnose.dynamo_join.retrace import Retrace
from xlagraph.diagnose.dynamo_join.retrace_rest import follow_retrace
from xlagraph.diagnose.dynamo_join.second_call import second_calls
from xlagraph.diagnose.dynamo_join.switched_steady import steady_after_switch
from xlagraph.diagnose.recompile import Recompile

__all__ = ["join"]


def join(
    recompiles: Sequence[Recompile],
    retraces: Mapping[str, Retrace],
    phases: Mapping[str, set[str]],
    last_run: Mapping[str, int],
    steps: Mapping[int, tuple[str, ...]] | None = None,
    bridged: frozenset[int] = frozenset(),
    made: Mapping[str, str] | None = None,
) -> tuple[Recompile, ...]:
    """`recompiles` (each naming in `dynamo` the compile that made its graph) rewritten by the rules in
    order; `retraces` by compile id, `phases` the phases (warm-up, steady) each variant ran in,
    `last_run` the last sync it ran at; `steps` each step's variants in run order and `bridged` the
    steps the openxla bridge ran a full sync on (`after_bridge_step`); `made` the compile id that
    made each variant (`second_calls`)."""
    explained = picked_modules(cite_guards(recompiles, retraces), retraces)
    explained = fold_retraced_outputs(cite_backward(mode_graphs(explained, retraces, last_run)), retraces)
    explained = grown_modules(follow_retrace(branch_guard_graphs(explained, retraces), retraces), retraces)
    explained = follow_forward(warm_up_cuts(join_branch_graphs(explained), phases), retraces)
    explained = retrace_cuts(bridge_flush(moved_work(explained, retraces), retraces), retraces)
    explained = steady_after_switch(after_bridge_step(explained, steps or {}, bridged), bridged)
    return second_calls(explained, retraces, made or {}, steps or {}, bridged)
