"""Dynamo's guard failures in the user's words: one table of rules, each a pattern of the text dynamo
prints (`TORCH_LOGS=recompiles`, the trace's `recompile_reasons`), the kind of change it means,
how to say it, and the fix. The texts are torch 2.5 - 2.9's (`torch/_dynamo/guards.py`):

    tensor 'x' size mismatch at index 0. expected 8, actual 11
    tensor 'x' dtype mismatch. expected Float, actual Double
    n == 3                      # y = s.l(x) * n * f  # ...train.py:7 in forward
    s.training == True          # if s.training: ...  # ...train.py:9 in forward
    G['FLAG'] == False          # if FLAG: ...        # ...train.py:10 in forward

Each failure is prefixed with the cache entry it is for (`0/1: `): a recompile lists one failure per
entry compiled before, newest first, so the first names what changed since the last compile.
Backend-agnostic; only the fixes of tensor sizes differ on XLA (no dynamic shapes there).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from xlagraph.diagnose.fixes import fix

__all__ = ["KINDS", "GuardChange", "explain_guard", "fix_for"]

_ENTRY = re.compile(r"^\s*-?\s*(\d+/\d+):\s*")
# torch 2.9 appends a hint to some failures' code parts: `... in forward (HINT: torch.compile
# considers integer attributes of the nn.Module to be static...)`
_SOURCE = re.compile(
    r"\s+#\s*(?P<src>.*?)\s+#\s*(?P<file>\S+):(?P<line>\d+) in (?P<fn>\S+)(?:\s+\(HINT: (?P<hint>.*)\))?\s*$"
)


@dataclass(frozen=True)
class GuardChange:
    """One guard failure: `kind` (a key of KINDS), what changed in the user's names (`subject`,
    `before`, `after` where dynamo says them), the phrase, and where the guard was installed
    (`line`: the user's line that read the value, where dynamo says it)."""

    kind: str
    subject: str
    phrase: str
    before: str = ""
    after: str = ""
    entry: str = ""  # the cache entry whose guard failed ("0/1")
    source: str = ""  # the user's code at `line`
    file: str = ""
    line: int = 0
    text: str = ""  # dynamo's own text, as printed


def _name(raw: str) -> str:
    """`L['x']` -> x, `G['FLAG']` -> FLAG, `L['self'].training` -> self.training."""
    return re.sub(r"^[LG]\['([^']+)'\]", r"\1", raw.strip())


def _listed(raw: str) -> str:
    """A length's subject as the user's code names it: a module's submodules are its attributes
    and a ModuleList's items its `_modules` (`self._modules['blocks']._modules` -> self.blocks)."""
    name = re.sub(r"\._modules\['(\w+)'\]", r".\1", _name(raw))
    return name.removesuffix("._modules") if name.endswith("._modules") and "." in name[:-9] else name


# (kind, pattern, phrase builder) in the order they are tried; the first match wins.
Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str]], tuple[str, str, str, str]]]


def _tensor(kind: str, tail: str, say: Callable[[str, re.Match[str]], str]) -> Rule:
    """A rule for dynamo's `tensor 'NAME' ... mismatch` texts: `a` expected, `b` actual."""

    def build(m: re.Match[str]) -> tuple[str, str, str, str]:
        name, groups = _name(m["t"]), m.groupdict()
        return name, say(name, m), groups.get("a") or "", groups.get("b") or ""

    return kind, re.compile(r"^tensor '(?P<t>.+?)' " + tail), build


_A_B = r"expected (?P<a>\d+), actual (?P<b>\d+)"
_RULES: tuple[Rule, ...] = (
    _tensor(
        "tensor_size",
        r"size mismatch at index (?P<i>\d+)\. " + _A_B,
        lambda n, m: f"input `{n}`'s dimension {m['i']} changed {m['a']} -> {m['b']}",
    ),
    _tensor(
        "tensor_rank",
        r"rank mismatch\. " + _A_B,
        lambda n, m: f"input `{n}` has {m['b']} dimensions, was {m['a']}",
    ),
    _tensor(
        "tensor_dtype",
        r"dtype mismatch\. expected (?P<a>\w+), actual (?P<b>\w+)",
        lambda n, m: f"input `{n}`'s dtype changed {m['a']} -> {m['b']}",
    ),
    _tensor(
        "tensor_stride",
        r"stride mismatch at index (?P<i>\d+)\. " + _A_B,
        lambda n, m: f"input `{n}`'s stride {m['i']} changed {m['a']} -> {m['b']} (a view or transpose)",
    ),
    _tensor(
        "tensor_requires_grad",
        r"requires_grad mismatch\. expected requires_grad=(?P<a>\d)",
        lambda n, m: f"input `{n}`'s requires_grad changed",
    ),
    _tensor(
        "tensor_device",
        r"(?:device|dispatch key set) mismatch",
        lambda n, m: f"input `{n}` is on another device (or dispatch key set)",
    ),
    (
        "train_eval",
        re.compile(r"^(?P<o>[\w.\[\]']+)\.training == (?P<a>True|False)$"),
        lambda m: (
            f"{_name(m['o'])}.training",
            f"`{_name(m['o'])}.training` changed {m['a']} -> {'False' if m['a'] == 'True' else 'True'} "
            f"({'eval' if m['a'] == 'True' else 'train'} mode)",
            m["a"],
            "False" if m["a"] == "True" else "True",
        ),
    ),
    (
        "grad_mode",
        re.compile(r"^GLOBAL_STATE changed: (?P<what>.*\bgrad_mode\b.*)$"),
        lambda m: (
            "grad_mode",
            "gradient mode changed (a call under torch.no_grad() or inference_mode)",
            "",
            "",
        ),
    ),
    (
        "global_state",
        re.compile(r"^GLOBAL_STATE changed: (?P<what>.+)$"),
        lambda m: (m["what"], f"torch's global state changed: {m['what']}", "", ""),
    ),
    (
        "global_value",
        re.compile(r"^G\['(?P<g>[^']+)'\](?P<attr>[\w.]*) == (?P<a>.+)$"),
        lambda m: (
            m["g"] + m["attr"],
            f"global `{m['g']}{m['attr']}` changed "
            f"(the compiled code assumed {m['g']}{m['attr']} == {m['a']})",
            m["a"],
            "",
        ),
    ),
    (
        "module_attribute",
        re.compile(r"^(?P<o>(?:L\['[^']+'\]|[A-Za-z_]\w*)(?:\.\w+|\['[^']*'\])+) == (?P<a>.+)$"),
        lambda m: (
            _name(m["o"]),
            f"attribute `{_name(m['o'])}` changed (the compiled code assumed {_name(m['o'])} == {m['a']})",
            m["a"],
            "",
        ),
    ),
    (
        "optional_argument",
        re.compile(r"^(?P<v>L\['[^']+'\]|[A-Za-z_]\w*) is (?P<n>not )?None$"),
        lambda m: (
            _name(m["v"]),
            f"`{_name(m['v'])}` is None on some calls only (the compiled code assumed it "
            + ("is not None)" if m["n"] else "is None)"),
            "a value" if m["n"] else "None",
            "None" if m["n"] else "a value",
        ),
    ),
    (
        "python_scalar",
        re.compile(r"^(?P<v>L\['[^']+'\]|[A-Za-z_]\w*) == (?P<a>.+)$"),
        lambda m: (
            _name(m["v"]),
            f"Python argument `{_name(m['v'])}` changed "
            f"(the compiled code assumed {_name(m['v'])} == {m['a']})",
            m["a"],
            "",
        ),
    ),
    (
        "dict_key",
        # `not ___dict_contains('w', L['batch'])`: the compiled code assumed the key absent (present
        # without `not`); the subject keeps the key (`batch['w']`) for where it is stored
        re.compile(r"^(?P<n>not )?___dict_contains\((?P<k>'[^']*'|\"[^\"]*\"),\s*(?P<d>.+)\)$"),
        lambda m: (
            f"{_name(m['d'])}[{m['k']}]",
            f"the dict `{_name(m['d'])}` "
            + (
                f"has key {m['k']} now (the compiled code assumed it had not)"
                if m["n"]
                else f"lacks key {m['k']} now (the compiled code assumed it had it)"
            ),
            "absent" if m["n"] else "present",
            "present" if m["n"] else "absent",
        ),
    ),
    (
        "sequence_length",
        # dynamo 2.9 prints the failed check (`len(model.prototypes) != 2`), earlier the guard
        re.compile(r"^len\((?P<v>.+?)\) [!=]= (?P<a>\d+)$"),
        lambda m: (_listed(m["v"]), f"the length of `{_listed(m['v'])}` changed (was {m['a']})", m["a"], ""),
    ),
    (
        "object_identity",
        re.compile(r"^___check_obj_id\((?P<v>[^,]+),"),
        lambda m: _identity(_name(m["v"])),
    ),
    (
        "python_type",
        re.compile(r"^___check_type_id\((?P<v>[^,]+),"),
        lambda m: (_name(m["v"]), f"`{_name(m['v'])}` has another type than the one compiled for", "", ""),
    ),
)

# kind -> (a title for the report, the fix). The fixes of tensor_size, tensor_dtype, train_eval,
# grad_mode, global_value, module_attribute and python_scalar are proved on torch_xla 2.9 by
# tests/test_compiled_fixes.py (fixtures/torch_xla/compiled: the bug, the fix applied as written,
# fewer compiles); the others are not yet.
KINDS: dict[str, tuple[str, str]] = {
    "tensor_size": (
        "a tensor's size changed",
        "dynamo specializes each compile on every input size, and XLA compiles a graph per size: pad the "
        "input to one fixed size (or a few bucket sizes) before the call, masking the padding; on "
        "backend='openxla' torch._dynamo.mark_dynamic / dynamic=True do not avoid it (XLA graphs are "
        "static); on other backends torch._dynamo.mark_dynamic(x, dim) before the first call does",
    ),
    "tensor_rank": (
        "a tensor's number of dimensions changed",
        "keep the input's rank fixed (reshape or unsqueeze before the call)",
    ),
    "tensor_dtype": (
        "a tensor's dtype changed",
        "cast the input to one dtype before the call (x.to(torch.float32))",
    ),
    "tensor_stride": (
        "a tensor's layout changed",
        "make the input contiguous before the call (x.contiguous())",
    ),
    "tensor_requires_grad": (
        "a tensor's requires_grad changed",
        "call the compiled function with inputs of one requires_grad "
        "(detach() the ones that need no gradient)",
    ),
    "tensor_device": ("a tensor moved device", "move every input to the one device before the call"),
    "train_eval": (
        "train/eval mode changed",
        "two graphs, one per mode, each compiled once: expected; to compile one graph only, evaluate "
        "with the uncompiled module (model(x) under torch.no_grad()): a separate compiled function "
        "for evaluation compiles the same graphs",
    ),
    "grad_mode": (
        "gradient mode changed",
        "a function called both with gradients and under torch.no_grad() is two graphs, each compiled "
        "once: expected; to compile one graph only, evaluate with the uncompiled module (model(x) under "
        "torch.no_grad()): a separate compiled function for evaluation compiles the same graphs",
    ),
    "global_state": (
        "torch's global state changed",
        "set torch's global state (autocast, default dtype, deterministic algorithms) once before the "
        "first call, or keep the calls under one state",
    ),
    "global_value": (
        "a global changed",
        "a global read inside the compiled function is baked into its graph: pass the value as an "
        "argument (a tensor if it changes every call), or keep it fixed while the function runs",
    ),
    "module_attribute": (
        "a module attribute changed",
        "an attribute read inside the compiled function is baked into its graph: set it once before the "
        "first call, or pass the value as an argument (a tensor if it changes every call)",
    ),
    "python_scalar": (
        "a Python number argument changed",
        "a Python int or float argument is a constant of the compiled graph: pass it as a tensor on the "
        "device (torch.tensor(value, device=...)) so that it is data, not a constant",
    ),
    "sequence_length": (
        "a list's length changed",
        "pass every item on every call, the list at its full length from the first call, with a weight "
        "of 0.0 (a device tensor) for the items not in use yet, or pass one stacked tensor of fixed size",
    ),
    "dict_key": (
        "a dict's keys changed",
        "pass a dict with the same keys on every call: the key from the first call on, with a neutral "
        "value (ones for weights, zeros for an added term) until it is used",
    ),
    "object_identity": (
        "another object was passed",
        "pass the same object on every call (a function or a config built once, outside the loop), or "
        "pass its values as tensors",
    ),
    "python_type": ("an argument's type changed", "pass arguments of one type on every call"),
    "optional_argument": (
        "an optional argument is None on some calls only",
        fix("conditional_work.optional_argument"),
    ),
    "guard": ("a guard failed", "make the value the guard reads the same on every call"),
}


def explain_guard(text: str, code_file: str = "") -> GuardChange:
    """One failure as dynamo printed it, in the user's words. `code_file` is the compiled frame's
    file: dynamo cuts the path in its `# file:line` note to fit, and this finds it again."""
    raw = text.strip()
    entry = ""
    if m := _ENTRY.match(raw):
        entry, raw = m.group(1), raw[m.end() :]
    source, file, line = "", "", 0
    shown = text.strip()
    if m := _SOURCE.search(raw):
        source, file, line = m["src"].strip(), m["file"], int(m["line"])
        raw = raw[: m.start()].rstrip()
        if code_file and (
            code_file.endswith(file.lstrip(".")) or file.endswith(code_file.rsplit("/", 1)[-1])
        ):
            # the cut path keeps the tail of the capturing machine's folder (`ork/h-x/...`): show
            # the file as the analysis reads it
            shown = shown.replace(f"{m['file']}:{line} in ", f"{code_file}:{line} in ")
            file = code_file
    for kind, pattern, build in _RULES:
        if m := pattern.match(raw):
            subject, phrase, before, after = build(m)
            return GuardChange(kind, subject, phrase, before, after, entry, source, file, line, shown)
    return GuardChange("guard", raw, f"guard `{raw}` failed", "", "", entry, source, file, line, shown)


def _identity(name: str) -> tuple[str, str, str, str]:
    """`crit.__code__`: another function was passed (its code object is what dynamo guards)."""
    if name.endswith(".__code__"):
        fn = name.removesuffix(".__code__")
        return fn, f"`{fn}` is another function (a new code object) than the one compiled for", "", ""
    return name, f"`{name}` is another object than the one compiled for", "", ""


def fix_for(kind: str) -> str:
    return KINDS.get(kind, KINDS["guard"])[1]
