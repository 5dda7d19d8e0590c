"""`diverge`: where two runs (or the ranks of one run) stop being bit-exact, as a `Divergence`
that prints, renders and serializes like `xlagraph diverge`.

`to_json()` is what `xlagraph diverge --json` prints (the contract in docs/divergence.md),
`to_text()` what it prints without options, `to_html()` the page `--html` writes. In a notebook
it shows that page in a sandboxed frame of its own, so several outputs never share ids or styles.
"""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xlagraph.errors import reading

if TYPE_CHECKING:
    from xlagraph.diverge.model import Divergence as Result
    from xlagraph.diverge.model import TensorDiff

__all__ = ["Divergence", "diverge"]


@dataclass(frozen=True, eq=False)
class Divergence:
    """Two fingerprinted runs compared step by step (`mode` "runs"), or the ranks of one run
    (`mode` "replicas"). `verdict` is `bit_exact`, `within_tolerance` or `diverged`; `first`
    the tensors that diverged first, in role order (input, loss, grad, state, param, output)."""

    verdict: str
    mode: str
    first_step: int | None
    first_rank: int | None
    first: tuple[TensorDiff, ...]
    steps_compared: int
    result: Result = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of `xlagraph diverge --json` as a dict."""
        from xlagraph.render.diverge_json import divergence_to_json

        return divergence_to_json(self.result)

    def to_json(self) -> str:
        """Exactly what `xlagraph diverge --json` prints."""
        return json.dumps(self.to_dict(), indent=2)

    def to_text(self) -> str:
        """Exactly what `xlagraph diverge` prints."""
        from xlagraph.render.diverge_text import render_divergence_text

        return render_divergence_text(self.result)

    def to_html(self) -> str:
        """The self-contained page `xlagraph diverge --html OUT` writes."""
        from xlagraph.render.diverge_html import render_divergence_html

        return render_divergence_html(self.result)

    def _repr_html_(self) -> str:
        # The page has no script; a sandboxed frame keeps its stylesheet to itself.
        page = html.escape(self.to_html(), quote=True)
        return f'<iframe sandbox="" srcdoc="{page}" style="width:100%;height:560px;border:0"></iframe>'

    def __repr__(self) -> str:
        return self.to_text().split("\n", 1)[0]


def diverge(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str] | None = None,
    *,
    rtol: float | None = None,
    atol: float | None = None,
) -> Divergence:
    """`xlagraph diverge A B` (two captures with XLAGRAPH_FINGERPRINTS=1), or with `b` None,
    `xlagraph diverge DIR` (the replicas of one multi-rank capture). Bit-exact unless `rtol` or
    `atol` is given. Bad input raises `InputError` naming the file."""
    from xlagraph.diverge import diverge as compare

    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not value >= 0:
            raise ValueError(f"{name} must be 0 or more, got {value}")
    with reading(os.fspath(b if b is not None else a)):
        result = compare(a, b, rtol, atol)
    return Divergence(
        result.verdict,
        result.mode,
        result.first_step,
        result.first_rank,
        result.first,
        result.steps_compared,
        result,
    )
