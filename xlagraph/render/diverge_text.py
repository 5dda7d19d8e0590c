"""`xlagraph diverge` as text: the verdict, where the runs part, what that points at."""

from __future__ import annotations

import textwrap

from xlagraph.diverge.model import BIT_EXACT, WITHIN_TOLERANCE, Divergence, TensorDiff
from xlagraph.diverge.zoom import ZoomFinding

__all__ = ["render_divergence_text"]

MAX_TENSORS = 10
POINTS_AT = {
    "input": "the data differed (data order, seed, sampler) before anything was computed",
    "loss": "the forward pass: same inputs, different loss (weights that already differed, or the forward)",
    "grad": "backward or the gradient reduction (the loss agreed)",
    "state": "the optimizer's state update (gradients agreed)",
    "param": "the parameter update (gradients and optimizer state agreed: learning rate, update rule)",
    "output": "the model outputs only",
}


def render_divergence_text(d: Divergence) -> str:
    lines = []
    if d.mode == "replicas":
        lines.append(
            f"replicas: {len(d.sources)} ranks, {d.replicated} replicated tensors, {d.steps_compared} steps"
        )
    else:
        lines += [f"A: {d.sources[0]}", f"B: {d.sources[1]}"]
    if d.verdict == BIT_EXACT:
        what = "replicas bit-identical" if d.mode == "replicas" else "bit-exact"
        lines.append(f"{what} over {d.steps_compared} steps")
    elif d.verdict == WITHIN_TOLERANCE:
        lines.append(f"within tolerance (rtol={d.rtol}, atol={d.atol}) over {d.steps_compared} steps")
    else:
        rank = f", rank {d.first_rank}" if d.first_rank is not None else ""
        verb = "a replica drifts" if d.mode == "replicas" else "diverged"
        lines.append(f"{verb} at step {d.first_step}{rank} ({d.steps_compared} steps compared)")
        lines.append("  first tensors (input -> loss -> grad -> state -> param -> output):")
        for t in d.first[:MAX_TENSORS]:
            lines.append("    " + _tensor_line(t))
        if len(d.first) > MAX_TENSORS:
            lines.append(f"    ... and {len(d.first) - MAX_TENSORS} more")
        lines.append(f"  points at: {POINTS_AT.get(d.first[0].role, d.first[0].role)}")
        if d.mode == "runs":
            lines.append("  inputs: " + _inputs(d))
    if d.largest is not None:
        lines.append(
            f"  largest norm deviation: step {d.largest.step} {d.largest.tensor}: "
            f"{d.largest.abs:.6g} ({d.largest.rel:.3g} relative)"
        )
    lines.append("  graphs: " + _graphs(d))
    if d.zoom is not None:
        lines += _zoom(d.zoom)
    if d.nan_onsets:
        o = d.nan_onsets[0]
        more = f" (+{len(d.nan_onsets) - 1} more tensors)" if len(d.nan_onsets) > 1 else ""
        lines.append(f"  NaN/Inf onset: step {o.step}, {o.run}: {o.tensor} ({o.nan} NaN, {o.inf} Inf){more}")
    for note in d.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def _tensor_line(t: TensorDiff) -> str:
    nan = f"  NaN {t.a.nan} vs {t.b.nan}" if t.a.nan or t.b.nan else ""
    inf = f"  Inf {t.a.inf} vs {t.b.inf}" if t.a.inf or t.b.inf else ""
    return f"{t.role:<6} {t.name:<44} norm {t.a.norm:.7g} vs {t.b.norm:.7g}{nan}{inf}"


def _inputs(d: Divergence) -> str:
    if d.inputs_identical is None:
        return "none recorded (no top-level module call before the step)"
    if d.inputs_identical:
        later = (
            f"; they first differ at step {d.inputs_first_differ}"
            if d.inputs_first_differ is not None
            else ""
        )
        return f"identical at this step{later}"
    return f"differ at this step (first at step {d.inputs_first_differ})"


def _graphs(d: Divergence) -> str:
    g = d.graphs
    if g.identical is None:
        return g.note or "not compared"
    if g.identical:
        upto = "up to here" if d.first_step is not None else "throughout"
        return f"same graphs {upto}" + (f" ({g.note})" if g.note else "")
    out = f"different at journal step {g.journal_step}, sync {g.sync}"
    if g.hash_a:
        out += f": {g.hash_a} vs {g.hash_b}"
    if g.causes:
        out += "; " + "; ".join(g.causes)
    if g.note:
        out += f" ({g.note})"
    return out


def _zoom(z: ZoomFinding) -> list[str]:
    head = f"  zoom (step {z.step}, {z.compared} values agree before): "
    if z.kind == "value" and z.a is not None:
        return [head + f"values part at op #{z.a.index}: {z.a.describe()}"] + (
            textwrap.wrap(z.why, 100, initial_indent="    why: ", subsequent_indent="         ")
            if z.why
            else []
        )
    if z.kind == "ops" and z.a is not None and z.b is not None:
        return [
            head + f"the runs ran other ops from #{z.a.index}:",
            f"    A: {z.a.describe()}",
            f"    B: {z.b.describe()}",
        ]
    return [f"  zoom (step {z.step}): {z.note}"]
