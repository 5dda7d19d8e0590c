"""The fix of a torch.compile graph break, by the reason dynamo gives."""

from __future__ import annotations

__all__ = ["break_fix"]

# Graph-break reasons dynamo gives (its first line), and the fix that removes each.
_BREAK_FIXES: tuple[tuple[str, str], ...] = (
    (
        "Tensor.backward",
        "dynamo does not trace backward(): compile the model (torch.compile(model)) or the forward and loss, "
        "and call loss.backward() and the optimizer outside the compiled function (or compile the whole step "
        "with torch_xla.compile)",
    ),
    (
        "Optimizer.zero_grad",
        "call optimizer.zero_grad() outside the compiled function",
    ),
    (
        "Data-dependent branching",
        "an `if` on a tensor's value: compute both branches and pick with torch.where(cond, a, b), or move "
        "the test out of the compiled function",
    ),
    (
        "Tensor.item",
        "`.item()` reads a value back to Python: keep it a tensor inside the compiled function "
        "(x.sum().clamp(min=1.0), not x.sum().item()), and read it after the step (on backend='openxla', "
        "torch._dynamo.config.capture_scalar_outputs = True fails to compile)",
    ),
    (
        "print",  # `builtin: print` too
        "print() inside the compiled function: print after the call (or log the returned tensor)",
    ),
)
_BREAK_FIX_DEFAULT = (
    "move the line out of the compiled function (before or after the call), or rewrite it with tensor "
    "operations dynamo traces; each break splits the function into more graphs compiled and run apart"
)


def break_fix(reason: str, explanation: str = "") -> str:
    low = f"{reason} {explanation}".lower()
    for needle, fix in _BREAK_FIXES:
        if needle.lower() in low:
            return fix
    return _BREAK_FIX_DEFAULT
