"""The names fingerprints give a step's tensors: an optimizer's parameters named from the top-level
modules that hold them (`groupG.paramI` before any is known), their gradients and optimizer state
under the parameter's name, and each name's id in the files once written (`Slot`).
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

__all__ = ["OptimizerPlan", "Slot", "optimizer_plan"]


class Slot:
    """One tensor name of the capture, and its id in the files once it has one (-1 before)."""

    __slots__ = ("id", "name", "role")

    def __init__(self, name: str, role: str) -> None:
        self.name, self.role, self.id = name, role, -1


class OptimizerPlan:
    """What an optimizer's step hook reads: its parameters, with their names' slots."""

    __slots__ = ("count", "named", "params", "states")

    def __init__(self, count: int, named: bool, params: list[tuple[Any, str]]) -> None:
        self.count, self.named = count, named  # named: from the top-level modules (else groupG.paramI)
        self.params = [(p, Slot(f"{n}.grad", "grad"), Slot(n, "param")) for p, n in params]
        self.states: dict[tuple[int, str], Slot] = {}  # (parameter index, state key) -> slot


def optimizer_plan(
    optimizer: Any, roots: Iterable[Any], plans: MutableMapping[Any, OptimizerPlan]
) -> OptimizerPlan:
    """The optimizer's parameters and their slots; worked out again only when its number of
    parameters changes, or while they are not named yet. `roots`: the top-level modules called
    so far (they name the parameters); `plans`: each optimizer's plan, updated here."""
    groups = optimizer.param_groups
    count = sum(len(group["params"]) for group in groups)
    plan = plans.get(optimizer)
    if plan is not None and plan.count == count and plan.named:
        return plan
    names: dict[int, str] = {}
    for root in list(roots):
        prefix = ""
        for name, p in root.named_parameters():
            if id(p) in names:
                continue
            if name in names.values():  # a second top-level module with the same names
                prefix = f"{type(root).__name__}."
            names[id(p)] = prefix + name
    out = []
    for g, group in enumerate(groups):
        for i, p in enumerate(group["params"]):
            out.append((p, names.get(id(p), f"group{g}.param{i}")))
    plan = OptimizerPlan(count, bool(names), out)  # before any top-level call the names are not known
    plans[optimizer] = plan
    return plan
