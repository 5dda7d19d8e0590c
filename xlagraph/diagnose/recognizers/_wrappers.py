"""Names bound to a wrapper of a user function: `step_fn = torch_xla.compile(train_step)`,
`self.step_fn = torch_xla.compile(self._step)`, `fwd = torch.compile(model, backend=...)`, and
functions decorated with `torch_xla.compile`. One reading of such a binding for every helper that
follows a call through the wrapper to the function it runs (`_traced_returns`, `_user_flow`,
`_host_numbers`); each keeps its own filter of which wrappers it follows (see there)."""

from __future__ import annotations

import ast
from typing import NamedTuple

from xlagraph.diagnose.recognizers._statements import call_name

__all__ = ["Wrapper", "compiles", "wrappers"]


class Wrapper(NamedTuple):
    """`alias = <call>(function, ...)`: one target (`step_fn`, `self.step_fn`, named by its last
    part) bound to a call whose first positional argument is `function`."""

    alias: str  # `call_name` of the target: "" for a target it cannot name (a subscript)
    function: ast.expr  # the first positional argument: `train_step`, `self._step`
    call: ast.Call

    @property
    def wraps(self) -> str:
        """The name of the wrapped function: `train_step`, `_step` of `self._step`, else ""."""
        return call_name(self.function)

    @property
    def only_argument(self) -> bool:
        """The function is the call's only positional argument (`functools.partial(f, x)` binds
        more: not a wrapper that passes the arguments on)."""
        return len(self.call.args) == 1


def compiles(node: ast.expr) -> bool:
    """`node` (a call's function, a decorator) is `torch_xla.compile`."""
    return ast.unparse(node).endswith("torch_xla.compile")


def wrappers(tree: ast.Module) -> list[Wrapper]:
    """Every binding of one target to a call with a positional argument, in `ast.walk` order."""
    return [
        Wrapper(call_name(n.targets[0]), n.value.args[0], n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign)
        and len(n.targets) == 1
        and isinstance(n.value, ast.Call)
        and n.value.args
    ]
