"""What of an instruction enters its structural hash, and how it is normalised: the readable
reference of the compiled core's rules (rust/src/canon/content_key.rs, attributes.rs,
backend_config.rs, iota.rs, effects.rs), which the library calls (`xlagraph.canonical.attributes`,
the handle's `effect_hashes`). tests/test_attribute_rules.py holds the core to these on every
instruction of every fixture module; tests/canonical_reference.py builds the canonical form on them.

Policy is in the constants: attributes that are identifiers or annotations (`IGNORED_ATTRIBUTES`)
never make two instructions different. `frontend_attributes` do (XLA compiles from them: Shardy
shardings, host offloading, composites), in key order, except entries that only restate a
parameter's or an output's number (AWS Neuron's `neff_input_names="input5"`). The hashes keep
operand order, commutative ops too (torch_xla's graph hash does); the matcher may pair a
commutative op's operands in either order (`xlagraph.opcodes.COMMUTATIVE`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from functools import lru_cache
from math import prod

from xlagraph.ir import Computation, Instruction, strip_layout
from xlagraph.opcodes import SIDE_EFFECTS

__all__ = [
    "COMPUTATION_ATTRIBUTES",
    "IGNORED_ATTRIBUTES",
    "MAX_IOTA_DEVICES",
    "EffectKeyError",
    "IotaError",
    "backend_config",
    "content_key",
    "effect_hash_map",
    "expand_iota_groups",
    "frontend_entries",
    "has_side_effect",
    "normalize_attribute",
    "plumbing_attributes",
    "stable_hash",
]

# Attributes whose value names other computations (hlo-text-format.md 1.4; the core's
# rust/src/parse/text.rs COMPUTATION_ATTRIBUTES).
COMPUTATION_ATTRIBUTES = frozenset(
    {
        "to_apply",
        "condition",
        "body",
        "calls",
        "branch_computations",
        "true_computation",
        "false_computation",
        "called_computations",
        "select",
        "scatter",
        "async_execution_thread_computations",
    }
)

IGNORED_ATTRIBUTES = frozenset(
    {
        "metadata",
        "statistics",
        "control-predecessors",
        "channel_id",
        "origin",
        "schedule",
        "ir_op",
    }
)

_WS = re.compile(r"\s+")
_IOTA = re.compile(r"^\[([0-9,]+)\]<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?$")
MAX_IOTA_DEVICES = 1 << 20  # replica groups expanded at most to this many devices
_LONG_LITERAL = 256  # characters of a literal kept as text in a content key; longer ones are digested
_STABLE: dict[str, int] = {}


def stable_hash(text: str) -> int:
    """A 64-bit hash of `text` that is the same in every process (unlike `hash(str)`)."""
    h = _STABLE.get(text)
    if h is None:
        h = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        _STABLE[text] = h
    return h


class IotaError(ValueError):
    """Iota replica groups that describe no device list (or an unreasonably long one)."""


@lru_cache(maxsize=1024)
def expand_iota_groups(value: str) -> str:
    """`[2,2]<=[4]` -> `{{0,1},{2,3}}`: iota and explicit replica groups compare equal.

    Devices are `arange(prod(reshape)).reshape(reshape).transpose(perm).reshape(dims)`; the rows of
    the result are the groups (hlo-text-format.md 1.10). Raises `IotaError` when the dimensions
    do not describe the same device count, the transpose is not a permutation of the reshape's
    dimensions, or there are more than `MAX_IOTA_DEVICES` devices. Not iota: returned unchanged.
    """
    m = _IOTA.match(value)
    if m is None:
        return value
    try:
        dims = [int(d) for d in m.group(1).split(",")]
        shape = [int(d) for d in m.group(2).split(",")]
        perm = [int(d) for d in m.group(3).split(",")] if m.group(3) else list(range(len(shape)))
    except ValueError:
        raise IotaError(f"replica_groups {value}: empty dimension") from None
    if len(dims) != 2:
        raise IotaError(f"replica_groups {value}: the group shape must be [groups,group_size]")
    if sorted(perm) != list(range(len(shape))):
        raise IotaError(
            f"replica_groups {value}: T({m.group(3)}) is not a permutation of 0..{len(shape) - 1}"
        )
    n = prod(shape)
    if prod(dims) != n:
        raise IotaError(f"replica_groups {value}: {prod(dims)} group slots but {n} devices")
    if n == 0:
        raise IotaError(f"replica_groups {value}: no devices")
    if n > MAX_IOTA_DEVICES:
        raise IotaError(
            f"replica_groups {value}: {n} devices, more than xlagraph expands ({MAX_IOTA_DEVICES})"
        )
    strides = [prod(shape[k + 1 :]) for k in range(len(shape))]
    tshape = [shape[p] for p in perm]
    tstrides = [strides[p] for p in perm]
    devices = []
    for flat in range(n):
        index, rem = 0, flat
        for size, stride in zip(reversed(tshape), reversed(tstrides), strict=True):
            rem, coord = divmod(rem, size)
            index += coord * stride
        devices.append(index)
    width = dims[-1]
    rows = [devices[i : i + width] for i in range(0, n, width)]
    return "{" + ",".join("{" + ",".join(map(str, r)) + "}" for r in rows) + "}"


def normalize_attribute(key: str, value: str, *, strict: bool = False) -> str:
    """The attribute value as compared: whitespace dropped outside strings, iota replica groups
    expanded. Invalid iota groups raise `IotaError` when `strict`, else stay as printed."""
    if '"' not in value:
        value = _WS.sub("", value)
    if key == "replica_groups":
        try:
            value = expand_iota_groups(value)
        except IotaError:
            if strict:
                raise
    return value


def compared_value(ins: Instruction, key: str, value: str, *, strict: bool = False) -> str | None:
    """`value` as two instructions compare it, or None when it never makes them differ."""
    if key in IGNORED_ATTRIBUTES:
        return None
    if key == "frontend_attributes":
        return _frontend_attributes(ins, value) or None
    if key == "backend_config":
        return backend_config(value) or None
    return normalize_attribute(key, value, strict=strict)


def backend_config(value: str) -> str:
    """A backend config as compared: JSON objects with their keys sorted (XLA's dumps print proto
    field order, `as_text` sorted keys) and no spaces; the quoted form (`"{\\"a\\":1}"`, older XLA)
    unquoted first; anything else with spaces dropped. Empty (`""`, `{}`) is "": none."""
    text = value
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = _unquote(text[1:-1])
    parsed = _Json(text).document()
    if parsed is None:
        parsed = text if '"' in text else _WS.sub("", text)
    return "" if parsed in ("", "{}") else parsed


def _unquote(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '"\\':
            out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class _Json:
    """Canonical text of a JSON document: objects' members sorted, spaces outside strings dropped,
    strings and numbers kept exactly as printed. `document()` is None when it is not JSON."""

    _SPACE = " \t\n\r"
    _SCALAR_END = ",]} \t\n\r"

    def __init__(self, text: str) -> None:
        self.t, self.i = text, 0

    def document(self) -> str | None:
        out = self._value(0)
        self._skip()
        return out if out is not None and self.i == len(self.t) else None

    def _skip(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in self._SPACE:
            self.i += 1

    def _value(self, depth: int) -> str | None:
        self._skip()
        if self.i >= len(self.t) or depth > 64:
            return None
        c = self.t[self.i]
        if c == "{":
            return self._members(depth)
        if c == "[":
            return self._elements(depth)
        if c == '"':
            return self._string()
        start = self.i
        while self.i < len(self.t) and self.t[self.i] not in self._SCALAR_END:
            self.i += 1
        token = self.t[start : self.i]
        return token if token in ("true", "false", "null") or _NUMBER.fullmatch(token) else None

    def _string(self) -> str | None:
        start, self.i = self.i, self.i + 1
        while self.i < len(self.t):
            c = self.t[self.i]
            if c == "\\":
                self.i += 2
                continue
            self.i += 1
            if c == '"':
                return self.t[start : self.i]
        return None

    def _members(self, depth: int) -> str | None:
        self.i += 1
        members: list[tuple[str, str]] = []
        self._skip()
        if self.i < len(self.t) and self.t[self.i] == "}":
            self.i += 1
            return "{}"
        while True:
            self._skip()
            if self.i >= len(self.t) or self.t[self.i] != '"':
                return None
            key = self._string()
            self._skip()
            if key is None or self.i >= len(self.t) or self.t[self.i] != ":":
                return None
            self.i += 1
            value = self._value(depth + 1)
            if value is None:
                return None
            members.append((key, value))
            self._skip()
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
                continue
            if self.i < len(self.t) and self.t[self.i] == "}":
                self.i += 1
                return "{" + ",".join(f"{k}:{v}" for k, v in sorted(members)) + "}"
            return None

    def _elements(self, depth: int) -> str | None:
        self.i += 1
        items: list[str] = []
        self._skip()
        if self.i < len(self.t) and self.t[self.i] == "]":
            self.i += 1
            return "[]"
        while True:
            value = self._value(depth + 1)
            if value is None:
                return None
            items.append(value)
            self._skip()
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
                continue
            if self.i < len(self.t) and self.t[self.i] == "]":
                self.i += 1
                return "[" + ",".join(items) + "]"
            return None


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def _frontend_attributes(ins: Instruction, value: str) -> str:
    """`{b="2",a="1"}` -> `{a="1",b="2"}`: entries in key order, numbering-only entries dropped."""
    kept = []
    for entry in frontend_entries(value):
        k, _, v = entry.partition("=")
        if _numbering(ins, k, v):
            continue
        kept.append(entry if '"' in entry else _WS.sub("", entry))
    return "{" + ",".join(sorted(kept)) + "}" if kept else ""


def frontend_entries(value: str) -> list[str]:
    """The top-level `key=value` entries of a `{...}` dict (commas in strings and braces kept)."""
    if not (value.startswith("{") and value.endswith("}")):
        return [value] if value else []
    out, depth, start, quoted, i = [], 0, 1, False, 1
    body_end = len(value) - 1
    while i < body_end:
        c = value[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(value[start:i])
            start = i + 1
        i += 1
    out.append(value[start:body_end])
    return [e for e in out if e]


def _numbering(ins: Instruction, key: str, value: str) -> bool:
    """Neuron names each parameter `inputN` after its number and the root's outputs `output0,...`:
    identifiers, like the number itself (a permutation is reported, not hashed)."""
    if key == "neff_input_names":
        return ins.opcode == "parameter" and value == f'"input{ins.payload.strip()}"'
    if key == "neff_output_names" and len(value) > 1 and value[0] == value[-1] == '"':
        names = value[1:-1].split(",")
        return all(n == f"output{i}" for i, n in enumerate(names))
    return False


def has_side_effect(ins: Instruction) -> bool:
    if ins.opcode == "custom-call":
        return ins.attribute("custom_call_has_side_effect") == "true"
    return ins.opcode in SIDE_EFFECTS


class EffectKeyError(ValueError):
    """An instruction on a side effect's path whose key cannot be made (invalid iota groups)."""

    def __init__(self, ins: Instruction, message: str) -> None:
        super().__init__(message)
        self.ins, self.message = ins, message


def effect_hash_map(
    comp: Computation, candidates: Iterable[str], h1: dict[str, int], callee_hash: dict[str, int]
) -> dict[str, int]:
    """The hashes of the instructions in `candidates` (a computation's dead code and plumbing)
    that have a side effect: XLA keeps them though no result reads them, so what they do is part
    of the program. Each hashes like `h1` (`(key, *operand hashes)`), through the unread
    instructions that feed it down to live ones (their `h1`); an operand cycle counts as 0."""
    by_name = comp.by_name
    found = [n for n in candidates if has_side_effect(by_name[n])]
    if not found:
        return {}
    memo: dict[str, int] = {}
    entered: set[str] = set()
    for start in found:
        stack = [(start, False)]
        while stack:
            name, ready = stack.pop()
            ins = by_name[name]
            if not ready:
                if name in h1 or name in entered:
                    continue
                entered.add(name)
                stack.append((name, True))
                stack += [(o, False) for o in reversed(ins.operands) if o not in h1 and o not in entered]
                continue
            try:
                key = stable_hash(content_key(ins, callee_hash, parameter=ins.opcode == "parameter"))
            except IotaError as e:
                raise EffectKeyError(ins, str(e)) from None
            if ins.opcode == "parameter":
                memo[name] = hash((key, ins.parameter_number))
            elif ins.operands:
                memo[name] = hash((key, *(h1[o] if o in h1 else memo.get(o, 0) for o in ins.operands)))
            else:
                memo[name] = key
    return {n: h1[n] if n in h1 else memo[n] for n in found}


def plumbing_attributes(ins: Instruction) -> str:
    """What a root tuple (or a forwarding get-tuple-element) says beyond its operands, such as
    the outputs' shardings (`sharding={{replicated}, {devices=[2,1]0,1}}`): forwarding drops the
    instruction itself, so this enters its computation's identity instead. `index` is forwarding."""
    return ";".join(
        f"{k}={cv}"
        for k, v in ins.attributes
        if k != "index" and k not in COMPUTATION_ATTRIBUTES and (cv := compared_value(ins, k, v)) is not None
    )


def content_key(instruction: Instruction, callee_hash: dict[str, int], *, parameter: bool = False) -> str:
    """Everything about one instruction that its operands do not already say."""
    shape = strip_layout(instruction.shape).replace(" ", "")
    # A parameter's number is left out (permutations are reported, not hashed); its sharding stays.
    parts = ["parameter" if parameter else instruction.opcode, shape]
    for key, value in instruction.attributes:
        if key in IGNORED_ATTRIBUTES or (parameter and key == "index"):
            continue
        if key in COMPUTATION_ATTRIBUTES:
            names = re.findall(r"[A-Za-z_][\w.\-]*", value)
            value = ",".join(str(callee_hash.get(n, 0)) for n in names)
        else:
            compared = compared_value(instruction, key, value, strict=True)
            if compared is None:
                continue
            value = compared
        parts.append(f"{key}={value}")
    if instruction.payload and not parameter:
        parts.append(_literal_key(instruction.payload))
    return "|".join(parts)


def _literal_key(payload: str) -> str:
    """A printed literal compares by value, however large; a long one by a digest of it (the
    keys are cached, so a 1M-element constant must not be kept as text). XLA prints literals
    of more than 10 elements as `{...}` unless asked not to: that one has no value to compare,
    and compares by shape alone."""
    text = _WS.sub("", payload)
    if len(text) <= _LONG_LITERAL:
        return text
    return "literal:" + hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
