"""Real tensor-, data- and pipeline-parallel pairs (fixtures/torch_xla/parallel, traced by torch_xla
2.9 from Megatron-style models by its generate.py): what a right diagnosis says about them (issue 7).

EXPECTED.json holds, per pair, the properties checked here: the verdict, the kinds that must and
must not be named, one cause per root reason, words that would send the user the wrong way, the
user's line. Other properties need no manifest: a reported change of shape is one tensor
parallelism can make (same rank, dimensions divided by a whole factor; never
``f32[768,768] -> f32[384]``); outputs are compared as slots (a step that keeps as many tensors is
never "one output added, one removed"); inputs are paired as the step pairs them (the parameter
output slot ``i`` updates, ``p - update``, in A is the one slot ``i + offset`` updates in B, read
from the dumps without xlagraph); inputs only shifted are not "moved"; no configuration change is
"expected warm-up"; and XLA's own printed form of the modules gets the same diagnosis.

Tests marked xfail(strict) are what the engine gets wrong today, named by the defect class of
issue 7; remove the mark when the engine is fixed.
"""

from __future__ import annotations

import json
import re
from collections import deque
from functools import cache
from pathlib import Path

import pytest

from tests import wild_pairs
from tests.conftest import FIXTURES
from xlagraph.diff import DiffResult, diff_files

HERE = FIXTURES / "torch_xla" / "parallel"
EXPECTED = {
    k: v for k, v in json.loads((HERE / "EXPECTED.json").read_text()).items() if not k.startswith("_")
}

# (test, pair) -> the defect it shows today (issue 7's classes)
XFAIL: dict[tuple[str, str], str] = {}


def _cases(test: str, names: list[str]) -> list[object]:
    return wild_pairs.params(dict.fromkeys(names), {n: r for (t, n), r in XFAIL.items() if t == test})


def _with(key: str) -> list[str]:
    return [n for n, e in EXPECTED.items() if e["expect"][key]]


@cache
def _diff(name: str, reverse: bool = False) -> DiffResult:
    a, b = (str(HERE / EXPECTED[name][s]["file"]) for s in ("a", "b"))
    return diff_files(b, a) if reverse else diff_files(a, b)


def _kinds(name: str) -> list[str]:
    return [c.kind.value for c in _diff(name).differences]


# ---------------------------------------------------------------------------------------------------------
# Ground truth read from the dumps themselves (not through xlagraph's reader)

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+) = (\(.*?\)|\S+) ([a-z][a-z0-9\-]*)\((.*)$")


class _Entry:
    """The ENTRY computation's instructions: name -> (type without layout, opcode, operands)."""

    def __init__(self, path: Path) -> None:
        text = path.read_text()
        body = text[text.index("\nENTRY ") :].split("\n}", 1)[0]
        self.instrs: dict[str, tuple[str, str, list[str]]] = {}
        self.params: dict[str, int] = {}
        self.outputs: list[str] = []
        for line in body.splitlines()[1:]:
            m = _INSTR.match(line)
            if not m:
                continue
            name, typ, op, rest = m.groups()
            args = _args(rest)
            self.instrs[name] = (re.sub(r"\{[^}]*\}", "", typ), op, re.findall(r"%([\w.\-]+)", args))
            if op == "parameter":
                self.params[name] = int(args)
            if line.lstrip().startswith("ROOT"):
                self.outputs = self.instrs[name][2] if op == "tuple" else [name]

    def updated_param(self, slot: int, hops: int = 8) -> str | None:
        """The parameter of the output's own type nearest to output `slot` (``p - update``)."""
        start = self.outputs[slot]
        typ = self.instrs[start][0]
        seen, queue = {start}, deque([(start, 0)])
        while queue:
            name, depth = queue.popleft()
            if self.instrs[name][1] == "parameter" and self.instrs[name][0] == typ:
                return name
            if depth < hops:
                for o in self.instrs[name][2]:
                    if o in self.instrs and o not in seen:
                        seen.add(o)
                        queue.append((o, depth + 1))
        return None


def _args(rest: str) -> str:
    depth = 0
    for i, ch in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return rest[:i]
    return rest


@cache
def _entry(name: str, side: str) -> _Entry:
    return _Entry(HERE / EXPECTED[name][side]["file"])


@cache
def _true_pairs(name: str) -> dict[str, str]:
    """A's parameter -> B's parameter, from the output slots both steps update in place."""
    exp = EXPECTED[name]
    a, b = _entry(name, "a"), _entry(name, "b")
    pairs = {}
    offset = exp["expect"]["param_slot_offset"]
    for slot in range(min(exp["a"]["updated_params"], exp["b"]["updated_params"] - offset)):
        pa, pb = a.updated_param(slot), b.updated_param(slot + offset)
        if pa and pb:
            pairs[pa] = pb
    return pairs


_SHAPE = re.compile(r"^(\w+)\[([\d,]*)\]$")


def _tp_reachable(old: str, new: str) -> bool:
    """Same rank once dimensions of size 1 are set aside (one local head gives ``pred[1,16,16]``
    where two gave ``pred[16,16]``), and every dimension equal or divided by a whole factor."""
    mo, mn = _SHAPE.match(old.split(": ")[-1]), _SHAPE.match(new.split(": ")[-1])
    if not (mo and mn):
        return True  # not a shape: nothing to check
    do = [int(d) for d in mo.group(2).split(",") if d and d != "1"]
    dn = [int(d) for d in mn.group(2).split(",") if d and d != "1"]
    return len(do) == len(dn) and all(x % y == 0 or y % x == 0 for x, y in zip(do, dn, strict=True))


# ---------------------------------------------------------------------------------------------------------
# Properties


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict(name: str) -> None:
    result = _diff(name)
    assert result.verdict == EXPECTED[name]["expect"]["verdict"]
    assert (result.verdict == "identical") == (not result.differences)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict_is_symmetric(name: str) -> None:
    assert _diff(name, reverse=True).verdict == EXPECTED[name]["expect"]["verdict"]


@pytest.mark.parametrize("name", _cases("kinds_present", _with("kinds_any")))
def test_kinds_present(name: str) -> None:
    wanted = set(EXPECTED[name]["expect"]["kinds_any"])
    assert wanted & set(_kinds(name)), f"none of {sorted(wanted)} in {_kinds(name)}"


@pytest.mark.parametrize("name", _cases("kinds_absent", _with("kinds_absent")))
def test_kinds_absent(name: str) -> None:
    unwanted = set(EXPECTED[name]["expect"]["kinds_absent"]) & set(_kinds(name))
    assert not unwanted, f"{sorted(unwanted)} named: {[c.summary for c in _diff(name).differences]}"


@pytest.mark.parametrize("name", _cases("one_cause", _with("one_cause")))
def test_one_cause_per_root_reason(name: str) -> None:
    causes = _diff(name).differences
    assert len(causes) == 1, [f"{c.kind.value}: {c.summary[:120]}" for c in causes]


@pytest.mark.parametrize("name", _cases("hints", _with("hint_forbidden")))
def test_hints_apply(name: str) -> None:
    """No summary or fix talks of a pattern that is not there (a ragged batch, bucketing, FSDP ...)."""
    forbidden = EXPECTED[name]["expect"]["hint_forbidden"]
    said = [
        (c.kind.value, w)
        for c in _diff(name).differences
        for w in forbidden
        if w in f"{c.summary} {c.hint}".lower()
    ]
    assert not said, said


@pytest.mark.parametrize("name", _cases("user_line", _with("user_line")))
def test_user_line_cited(name: str) -> None:
    cited = [s for c in _diff(name).differences for s in c.sources]
    assert any("fixtures/torch_xla/parallel/" in s for s in cited), cited


@pytest.mark.parametrize(
    "name", _cases("dtype", [n for n, e in EXPECTED.items() if e["expect"]["dtype_change"][0]])
)
def test_dtype_named_with_old_and_new(name: str) -> None:
    old, new = EXPECTED[name]["expect"]["dtype_change"]
    causes = [c for c in _diff(name).differences if c.kind.value == "dtype"]
    assert causes, _kinds(name)
    changes = [ch for c in causes for ch in c.changes]
    assert changes and all(ch.old.startswith(old) and ch.new.startswith(new) for ch in changes)
    assert any(ch.left.startswith("p") for ch in changes), "no input named as changing type"


@pytest.mark.parametrize("name", _cases("shapes", list(EXPECTED)))
def test_no_impossible_shape_change(name: str) -> None:
    bad = [
        (ch.left, ch.right, ch.old, ch.new)
        for c in _diff(name).differences
        for ch in c.changes
        if ch.old and ch.new and not _tp_reachable(ch.old, ch.new)
    ]
    assert not bad, bad


@pytest.mark.parametrize("name", _cases("pairing", [n for n in EXPECTED if _true_pairs(n)]))
def test_inputs_paired_as_the_step_pairs_them(name: str) -> None:
    truth = _true_pairs(name)
    a, b = _entry(name, "a"), _entry(name, "b")
    claimed = {(ch.left, ch.right) for c in _diff(name).differences for ch in c.changes}
    claimed |= {(m.left_name, m.right_name) for c in _diff(name).differences for m in c.mapping}
    wrong = [
        (left, right, truth[left])
        for left, right in claimed
        if left in a.params and right in b.params and left in truth and truth[left] != right
    ]
    assert not wrong, f"(A's input, paired with B's, should be B's): {wrong[:5]}"
    # an input called added (removed) is one the other graph has no counterpart for
    changes = [ch for c in _diff(name).differences for ch in c.changes if ch.what == "input"]
    added = sorted({ch.right for ch in changes if not ch.left} & set(truth.values()))
    removed = sorted({ch.left for ch in changes if not ch.right} & set(truth))
    assert not (added or removed), f"paired inputs called added {added} / removed {removed}"


def _monotone(name: str) -> bool:
    """The true pairing keeps the inputs' order (some may be shifted by inputs inserted before them)."""
    a, b = _entry(name, "a"), _entry(name, "b")
    pairs = sorted((a.params[k], b.params[v]) for k, v in _true_pairs(name).items())
    return [r for _, r in pairs] == sorted(r for _, r in pairs)


@pytest.mark.parametrize(
    "name", _cases("not_moved", [n for n in EXPECTED if _true_pairs(n) and _monotone(n)])
)
def test_shifted_inputs_are_not_moved(name: str) -> None:
    """Inputs only shifted by inputs inserted before them keep their order: nothing 'moved'."""
    truth = _true_pairs(name)
    moved = [
        (m.left, m.right, m.shape)
        for c in _diff(name).differences
        for m in c.mapping
        if m.left != m.right and truth.get(m.left_name) == m.right_name
    ]
    assert not moved, moved[:5]
    assert "parameter_permutation" not in _kinds(name)


@pytest.mark.parametrize("name", _cases("no_warm_up", list(EXPECTED)))
def test_no_cause_called_expected(name: str) -> None:
    """Two configurations (or a step with work the other lacks) are never 'expected warm-up,
    nothing to do': none of these pairs is a first step against a later one."""
    expected = [f"{c.kind.value}: {c.summary[:100]}" for c in _diff(name).differences if c.info]
    assert not expected, expected


@pytest.mark.parametrize("name", _cases("outputs", list(EXPECTED)))
def test_outputs_compared_as_slots(name: str) -> None:
    a, b = _entry(name, "a"), _entry(name, "b")
    if len(a.outputs) != len(b.outputs):
        pytest.skip("B keeps another number of tensors")
    added_removed = [
        (c.kind.value, ch) for c in _diff(name).differences for ch in c.changes if ch.what == "output"
    ]
    assert not added_removed, added_removed[:4]


def test_ground_truth_covers_the_parameters() -> None:
    """The slot reading finds every updated parameter where the step is `p - update` on both sides."""
    for name in ("tp_gpt2", "tp_llama", "gpt_neox_like", "dtype_mlp"):
        assert len(_true_pairs(name)) == EXPECTED[name]["a"]["updated_params"], name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_xla_printed_form_gives_the_same_diagnosis(name: str, tmp_path: Path) -> None:
    """The same modules as XLA prints them (--xla_dump_to: no operand shapes, computations in post
    order), read back through XLA's own parser: the same verdict and kinds."""
    hlo = pytest.importorskip("jaxlib._hlo")
    options = hlo.HloPrintOptions()
    options.print_operand_shape = False
    paths = []
    for side in ("a", "b"):
        text = (HERE / EXPECTED[name][side]["file"]).read_text()
        paths.append(tmp_path / f"{side}.hlo")
        paths[-1].write_text(hlo.hlo_module_from_text(text).to_string(options))
    printed = diff_files(str(paths[0]), str(paths[1]))
    assert printed.verdict == _diff(name).verdict
    assert sorted(c.kind.value for c in printed.differences) == sorted(_kinds(name))


@pytest.mark.parametrize("name", ["fsdp_auto_wrap", "fsdp_flatten"])
def test_fsdp_wrapping_is_named_as_such(name: str) -> None:
    """Another auto_wrap_policy or flatten_parameters is one FSDP cause: other flat shards and
    another number of reduce-scatters, not a Python int in `pad` or bucketing."""
    (cause,) = _diff(name).differences
    assert cause.kind.value == "collective" and "FSDP" in cause.summary and "auto_wrap_policy" in cause.hint
