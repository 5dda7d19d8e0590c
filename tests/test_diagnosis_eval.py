"""The diagnosis evaluation (benchmarks/eval_diagnosis.py) over the stored scenario corpus.

No accuracy threshold is asserted here: these tests check that the corpus is consistent and that
every tuning scenario is read and scored. The figures themselves are printed by
`python benchmarks/eval_diagnosis.py`. Needs no torch: the captures are stored.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "fixtures" / "torch_xla" / "corpus"
# Every pattern of issue 7 the corpus must cover (manifest `pattern` values).
PATTERNS = {
    "special_scalar",
    "ragged_batch",
    "variable_length",
    "boolean_mask",
    "nonzero_index",
    "python_int_index",
    "item_or_print",
    "every_k_steps",
    "clean_optimizer_state",
    "grad_accumulation",
    "eval_toggle",
    "autocast_dtype",
    "tensor_scalar",
    "dict_order",
    "update_order",
    "kept_alive",
    "clean",
}


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def ev() -> ModuleType:
    return _load("eval_diagnosis", REPO / "benchmarks" / "eval_diagnosis.py")


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    return _load("corpus_generate", CORPUS / "generate.py")


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))


def test_manifest_is_consistent_with_scripts_markers_and_captures(gen: ModuleType, manifest: dict) -> None:
    assert gen.check(manifest) == []
    entries = manifest["scenarios"]
    assert len(entries) >= 30
    assert len({e["name"] for e in entries}) == len(entries)
    held_out = [e for e in entries if e["split"] == "held_out"]
    held_out_2 = [e for e in entries if e["split"] == "held_out_2"]
    held_out_3 = [e for e in entries if e["split"] == "held_out_3"]
    held_out_4 = [e for e in entries if e["split"] == "held_out_4"]
    held_out_5 = [e for e in entries if e["split"] == "held_out_5"]
    held_out_6 = [e for e in entries if e["split"] == "held_out_6"]
    held_out_7 = [e for e in entries if e["split"] == "held_out_7"]
    held_out_8 = [e for e in entries if e["split"] == "held_out_8"]
    held_out_9 = [e for e in entries if e["split"] == "held_out_9"]
    held_out_10 = [e for e in entries if e["split"] == "held_out_10"]
    held_out_11 = [e for e in entries if e["split"] == "held_out_11"]
    held_out_12 = [e for e in entries if e["split"] == "held_out_12"]
    held_out_13 = [e for e in entries if e["split"] == "held_out_13"]
    held_out_14 = [e for e in entries if e["split"] == "held_out_14"]
    held_out_15 = [e for e in entries if e["split"] == "held_out_15"]
    held_out_16 = [e for e in entries if e["split"] == "held_out_16"]
    held_out_17 = [e for e in entries if e["split"] == "held_out_17"]
    held_out_18 = [e for e in entries if e["split"] == "held_out_18"]
    held_out_19 = [e for e in entries if e["split"] == "held_out_19"]
    held_out_20 = [e for e in entries if e["split"] == "held_out_20"]
    held_out_21 = [e for e in entries if e["split"] == "held_out_21"]
    held_out_22 = [e for e in entries if e["split"] == "held_out_22"]
    held_out_23 = [e for e in entries if e["split"] == "held_out_23"]
    held_out_24 = [e for e in entries if e["split"] == "held_out_24"]
    held_out_25 = [e for e in entries if e["split"] == "held_out_25"]
    held_out_26 = [e for e in entries if e["split"] == "held_out_26"]
    held_out_27 = [e for e in entries if e["split"] == "held_out_27"]
    held_out_28 = [e for e in entries if e["split"] == "held_out_28"]
    held_out_29 = [e for e in entries if e["split"] == "held_out_29"]
    held_out_30 = [e for e in entries if e["split"] == "held_out_30"]
    held_out_31 = [e for e in entries if e["split"] == "held_out_31"]
    held_out_32 = [e for e in entries if e["split"] == "held_out_32"]
    held_out_33 = [e for e in entries if e["split"] == "held_out_33"]
    held_out_34 = [e for e in entries if e["split"] == "held_out_34"]
    held_out_35 = [e for e in entries if e["split"] == "held_out_35"]
    held_out_36 = [e for e in entries if e["split"] == "held_out_36"]
    held_out_37 = [e for e in entries if e["split"] == "held_out_37"]
    held_out_38 = [e for e in entries if e["split"] == "held_out_38"]
    held_out_39 = [e for e in entries if e["split"] == "held_out_39"]
    held_out_40 = [e for e in entries if e["split"] == "held_out_40"]
    held_out_41 = [e for e in entries if e["split"] == "held_out_41"]
    held_out_42 = [e for e in entries if e["split"] == "held_out_42"]
    held_out_43 = [e for e in entries if e["split"] == "held_out_43"]
    held_out_44 = [e for e in entries if e["split"] == "held_out_44"]
    held_out_45 = [e for e in entries if e["split"] == "held_out_45"]
    held_out_46 = [e for e in entries if e["split"] == "held_out_46"]
    held_out_47 = [e for e in entries if e["split"] == "held_out_47"]
    held_out_48 = [e for e in entries if e["split"] == "held_out_48"]
    held_out_49 = [e for e in entries if e["split"] == "held_out_49"]
    held_out_50 = [e for e in entries if e["split"] == "held_out_50"]
    tuning = [e for e in entries if e["split"] == "tuning"]
    assert {e["split"] for e in entries} == {
        "held_out",
        "held_out_2",
        "held_out_3",
        "held_out_4",
        "held_out_5",
        "held_out_6",
        "held_out_7",
        "held_out_8",
        "held_out_9",
        "held_out_10",
        "held_out_11",
        "held_out_12",
        "held_out_13",
        "held_out_14",
        "held_out_15",
        "held_out_16",
        "held_out_17",
        "held_out_18",
        "held_out_19",
        "held_out_20",
        "held_out_21",
        "held_out_22",
        "held_out_23",
        "held_out_24",
        "held_out_25",
        "held_out_26",
        "held_out_27",
        "held_out_28",
        "held_out_29",
        "held_out_30",
        "held_out_31",
        "held_out_32",
        "held_out_33",
        "held_out_34",
        "held_out_35",
        "held_out_36",
        "held_out_37",
        "held_out_38",
        "held_out_39",
        "held_out_40",
        "held_out_41",
        "held_out_42",
        "held_out_43",
        "held_out_44",
        "held_out_45",
        "held_out_46",
        "held_out_47",
        "held_out_48",
        "held_out_49",
        "held_out_50",
        "tuning",
    }
    # the first held-out set stays a sizeable share of the corpus it was split from
    assert 0.3 <= len(held_out) / (len(held_out) + len(tuning)) <= 0.5
    # both held-out sets together are at least a third of everything scored before held_out_5 was added
    # (held_out_5 to held_out_50 only add untouched scenarios; all held-out splits together are at least
    # half of all)
    before_h5 = [
        e
        for e in entries
        if e["split"]
        not in (
            "held_out_5",
            "held_out_6",
            "held_out_7",
            "held_out_8",
            "held_out_9",
            "held_out_10",
            "held_out_11",
            "held_out_12",
            "held_out_13",
            "held_out_14",
            "held_out_15",
            "held_out_16",
            "held_out_17",
            "held_out_18",
            "held_out_19",
            "held_out_20",
            "held_out_21",
            "held_out_22",
            "held_out_23",
            "held_out_24",
            "held_out_25",
            "held_out_26",
            "held_out_27",
            "held_out_28",
            "held_out_29",
            "held_out_30",
            "held_out_31",
            "held_out_32",
            "held_out_33",
            "held_out_34",
            "held_out_35",
            "held_out_36",
            "held_out_37",
            "held_out_38",
            "held_out_39",
            "held_out_40",
            "held_out_41",
            "held_out_42",
            "held_out_43",
            "held_out_44",
            "held_out_45",
            "held_out_46",
            "held_out_47",
            "held_out_48",
            "held_out_49",
            "held_out_50",
        )
    ]
    assert len(held_out) + len(held_out_2) >= len(before_h5) / 3
    assert len(entries) - len(tuning) >= len(entries) / 2
    assert len(held_out_2) >= 10
    assert len(held_out_3) >= 7
    assert len(held_out_4) >= 7
    assert len(held_out_5) >= 7
    assert len(held_out_6) >= 7
    assert len(held_out_7) >= 7
    assert len(held_out_8) >= 7
    assert len(held_out_9) >= 7
    assert len(held_out_10) >= 7
    assert len(held_out_11) >= 7
    assert len(held_out_12) >= 7
    assert len(held_out_13) >= 7
    assert len(held_out_14) >= 7
    assert len(held_out_15) >= 7
    assert len(held_out_16) >= 7
    assert len(held_out_17) >= 7
    assert len(held_out_18) >= 7
    assert len(held_out_19) >= 7
    assert len(held_out_20) >= 7
    assert len(held_out_21) >= 7
    assert len(held_out_22) >= 7
    assert len(held_out_23) >= 7
    assert len(held_out_24) >= 7
    assert len(held_out_25) >= 7
    assert len(held_out_26) >= 7
    assert len(held_out_27) >= 7
    assert len(held_out_28) >= 7
    assert len(held_out_29) >= 7
    assert len(held_out_30) >= 7
    assert len(held_out_31) >= 7
    assert len(held_out_32) >= 7
    assert len(held_out_33) >= 7
    assert len(held_out_34) >= 7
    assert len(held_out_35) >= 7
    assert len(held_out_36) >= 7
    assert len(held_out_37) >= 7
    assert len(held_out_38) >= 7
    assert len(held_out_39) >= 7
    assert len(held_out_40) >= 7
    assert len(held_out_41) >= 7
    assert len(held_out_42) >= 7
    assert len(held_out_43) >= 7
    assert len(held_out_44) >= 7
    assert len(held_out_45) >= 7
    assert len(held_out_46) >= 7
    assert len(held_out_47) >= 7
    assert len(held_out_48) >= 7
    assert len(held_out_49) >= 7
    assert len(held_out_50) >= 7
    assert all(e["name"].startswith("ho_") for e in held_out)
    assert all(e["name"].startswith("hn_") for e in held_out_2)
    assert all(e["name"].startswith("hx_") for e in held_out_3)
    assert all(e["name"].startswith("hz_") for e in held_out_4)
    assert all(e["name"].startswith("h5_") for e in held_out_5)
    assert all(e["name"].startswith("h6_") for e in held_out_6)
    assert all(e["name"].startswith("h7_") for e in held_out_7)
    assert all(e["name"].startswith("h8_") for e in held_out_8)
    assert all(e["name"].startswith("h9_") for e in held_out_9)
    assert all(e["name"].startswith("h10_") for e in held_out_10)
    assert all(e["name"].startswith("h11_") for e in held_out_11)
    assert all(e["name"].startswith("h12_") for e in held_out_12)
    assert all(e["name"].startswith("h13_") for e in held_out_13)
    assert all(e["name"].startswith("h14_") for e in held_out_14)
    assert all(e["name"].startswith("h15_") for e in held_out_15)
    assert all(e["name"].startswith("h16_") for e in held_out_16)
    assert all(e["name"].startswith("h17_") for e in held_out_17)
    assert all(e["name"].startswith("h18_") for e in held_out_18)
    assert all(e["name"].startswith("h19_") for e in held_out_19)
    assert all(e["name"].startswith("h20_") for e in held_out_20)
    assert all(e["name"].startswith("h21_") for e in held_out_21)
    assert all(e["name"].startswith("h22_") for e in held_out_22)
    assert all(e["name"].startswith("h23_") for e in held_out_23)
    assert all(e["name"].startswith("h24_") for e in held_out_24)
    assert all(e["name"].startswith("h25_") for e in held_out_25)
    assert all(e["name"].startswith("h26_") for e in held_out_26)
    assert all(e["name"].startswith("h27_") for e in held_out_27)
    assert all(e["name"].startswith("h28_") for e in held_out_28)
    assert all(e["name"].startswith("h29_") for e in held_out_29)
    assert all(e["name"].startswith("h30_") for e in held_out_30)
    assert all(e["name"].startswith("h31_") for e in held_out_31)
    assert all(e["name"].startswith("h32_") for e in held_out_32)
    assert all(e["name"].startswith("h33_") for e in held_out_33)
    assert all(e["name"].startswith("h34_") for e in held_out_34)
    assert all(e["name"].startswith("h35_") for e in held_out_35)
    assert all(e["name"].startswith("h36_") for e in held_out_36)
    assert all(e["name"].startswith("h37_") for e in held_out_37)
    assert all(e["name"].startswith("h38_") for e in held_out_38)
    assert all(e["name"].startswith("h39_") for e in held_out_39)
    assert all(e["name"].startswith("h40_") for e in held_out_40)
    assert all(e["name"].startswith("h41_") for e in held_out_41)
    assert all(e["name"].startswith("h42_") for e in held_out_42)
    assert all(e["name"].startswith("h43_") for e in held_out_43)
    assert all(e["name"].startswith("h44_") for e in held_out_44)
    assert all(e["name"].startswith("h45_") for e in held_out_45)
    assert all(e["name"].startswith("h46_") for e in held_out_46)
    assert all(e["name"].startswith("h47_") for e in held_out_47)
    assert all(e["name"].startswith("h48_") for e in held_out_48)
    assert all(e["name"].startswith("h49_") for e in held_out_49)
    assert all(e["name"].startswith("h50_") for e in held_out_50)
    assert all(e["name"].startswith("tu_") for e in tuning)
    assert PATTERNS.issubset(e["pattern"] for e in entries)
    for e in entries:
        assert e["expected_kinds"], e["name"]
        assert e["scope"] in ("first", "all"), e["name"]
        assert not set(e["expected_kinds"]) & set(e["forbidden_kinds"]), e["name"]
        assert e["compiles_torch_xla"] == e["expected_compiles"], e["name"]
        if e["bug_step"] is not None:
            assert e["guilty"] and e["fix_keywords"], e["name"]


def test_every_guilty_marker_points_into_its_script(manifest: dict) -> None:
    for e in manifest["scenarios"]:
        lines = (CORPUS / e["script"]).read_text(encoding="utf-8").splitlines()
        for g in e["guilty"]:
            path, line = g.rsplit(":", 1)
            assert path == e["script"]
            assert "# GUILTY" in lines[int(line) - 1], g


def test_every_tuning_scenario_is_scored(ev: ModuleType, manifest: dict) -> None:
    tuning = [e for e in manifest["scenarios"] if e["split"] == "tuning"]
    scores = ev.evaluate(tuning)
    assert [s.name for s in scores] == [e["name"] for e in tuning]
    for s, e in zip(scores, tuning, strict=True):
        assert s.error == "", (s.name, s.error)
        assert isinstance(s.compiles, int) and s.compiles >= 1, s.name
        if e["bug_step"] is not None:
            assert s.scored >= 1, s.name
            assert s.line is not None and s.fix is not None, s.name
    text = ev.render(scores)
    assert all(e["name"] in text for e in tuning)
    assert "split" in text and "tuning" in text


# Synthetic `xlagraph report --json` fragments: inputs for the scorer only (no HLO, no torch_xla).
ENTRY = {
    "name": "x",
    "split": "tuning",
    "pattern": "ragged_batch",
    "bug_step": 3,
    "scope": "first",
    "expected_kinds": ["parameter_shape"],
    "accepted_kinds": [],
    "forbidden_kinds": ["structure"],
    "guilty": ["scripts/x.py:20"],
    "fix_keywords": ["drop_last", "pad"],
    "fix_forbidden": ["nonzero"],
    "compiles_torch_xla": 3,
}


def _rec(step: int, *causes: dict, lines: list[str] | None = None) -> dict:
    return {"step": step, "causes": list(causes), "lines": lines or [], "attribution": []}


def test_scorer_right_cause_line_and_fix(ev: ModuleType) -> None:
    shape = {"kind": "parameter_shape", "hint": "use drop_last=True", "sources": ["/abs/scripts/x.py:20"]}
    warm = {"kind": "state_init", "info": True, "hint": "expected"}
    s = ev.score(ENTRY, {"compiles": 3, "recompiles": [_rec(1, warm), _rec(3, shape)]})
    assert (s.cause, s.line, s.fix, s.false_causes) == (True, True, True, 0)


def test_scorer_wrong_kind_forbidden_and_false_causes(ev: ModuleType) -> None:
    warm = {"kind": "output_added", "hint": "x"}
    bad = {"kind": "structure", "hint": "pad it"}
    good = {"kind": "parameter_shape", "hint": "nonzero then pad", "sources": ["scripts/x.py:21"]}
    s = ev.score(ENTRY, {"compiles": 3, "recompiles": [_rec(1, warm), _rec(3, good, bad)]})
    assert (s.cause, s.line, s.fix, s.false_causes) == (False, False, False, 2)


def test_scorer_lists_false_causes_of_later_recompiles_apart(ev: ModuleType) -> None:
    """`--later`: what the recompiles after the scored one name beyond the entry's kinds is listed,
    and changes no column of the score."""
    shape = {"kind": "parameter_shape", "hint": "use drop_last=True", "sources": ["scripts/x.py:20"]}
    extra = ({"kind": "structure", "hint": "x"}, {"kind": "state_init", "info": True})
    later = {**_rec(5, shape, *extra), "variant": "D"}
    s = ev.score(ENTRY, {"compiles": 4, "recompiles": [_rec(3, shape), later]})
    assert (s.cause, s.line, s.fix, s.false_causes) == (True, True, True, 0)
    assert s.later_false == ("D@5:structure",)
    assert "1 false cause(s) in 1 scenario(s)" in ev.render_later([s])


def test_scorer_reads_unknown_shapes_defensively(ev: ModuleType) -> None:
    odd = {"recompiles": [{"step": 3, "causes": [{"kind": "new_kind", "hint": None}], "lines": "?"}, "junk"]}
    s = ev.score(ENTRY, odd)
    assert (s.cause, s.line, s.fix, s.compiles) == (False, False, False, None)
    missing = ev.score(ENTRY, None, "RuntimeError: boom")
    assert (missing.cause, missing.line, missing.fix, missing.error) == (
        False,
        False,
        False,
        "RuntimeError: boom",
    )


def test_scorer_clean_loop(ev: ModuleType) -> None:
    clean = {**ENTRY, "bug_step": None, "expected_kinds": ["state_init"], "guilty": [], "fix_keywords": []}
    assert ev.score(clean, {"compiles": 1, "recompiles": []}).cause is True
    s = ev.score(clean, {"compiles": 2, "recompiles": [_rec(1, {"kind": "structure", "hint": ""})]})
    assert (s.cause, s.line, s.fix, s.false_causes) == (False, None, None, 1)
    # an evaluation pass named as an info graph of its own names nothing to fix: right
    own = {"kind": "conditional_work", "info": True, "hint": "expected"}
    s = ev.score(clean, {"compiles": 2, "recompiles": [_rec(1, own)]})
    assert (s.cause, s.false_causes) == (True, 0)
    # the same kind not info is something to fix: wrong, and a false cause
    s = ev.score(clean, {"compiles": 2, "recompiles": [_rec(1, {**own, "info": False})]})
    assert (s.cause, s.false_causes) == (False, 1)
    # no causes at all (not explained) is not "nothing to fix"
    assert ev.score(clean, {"compiles": 2, "recompiles": [_rec(1)]}).cause is False


def test_command_json_and_filters(ev: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert ev.main(["--json", "--split", "tuning", "tu_clean_stateless", "tu_gpt2_ragged*"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in doc["scenarios"]] == ["tu_gpt2_ragged_epoch", "tu_clean_stateless"]
    assert set(doc["by_split"]) == {"tuning"} and doc["all"]["scenarios"] == 2
    assert ev.main(["--split", "held_out", "tu_*"]) == 2
    assert "no scenario matches" in capsys.readouterr().err


def test_every_split_is_a_split_choice(ev: ModuleType, manifest: dict) -> None:
    # `--split all` keeps every scenario; each split of the manifest can be chosen on its own
    assert {e["split"] for e in manifest["scenarios"]} == set(ev.SPLITS)
    assert ev.main(["--split", "held_out_3", "tu_*", "ho_*", "hn_*"]) == 2
    assert ev.main(["--split", "held_out_4", "tu_*", "ho_*", "hn_*", "hx_*"]) == 2
    assert ev.main(["--split", "held_out_5", "tu_*", "ho_*", "hn_*", "hx_*", "hz_*"]) == 2
    assert ev.main(["--split", "held_out_6", "tu_*", "ho_*", "hn_*", "hx_*", "hz_*", "h5_*"]) == 2
    assert ev.main(["--split", "held_out_7", "tu_*", "ho_*", "hn_*", "hx_*", "hz_*", "h5_*", "h6_*"]) == 2
    others = ["tu_*", "ho_*", "hn_*", "hx_*", "hz_*", "h5_*", "h6_*", "h7_*"]
    assert ev.main(["--split", "held_out_8", *others]) == 2
    assert ev.main(["--split", "held_out_9", *others, "h8_*"]) == 2
    assert ev.main(["--split", "held_out_10", *others, "h8_*", "h9_*"]) == 2
    assert ev.main(["--split", "held_out_11", *others, "h8_*", "h9_*", "h10_*"]) == 2
    later = ["h8_*", "h9_*", "h10_*", "h11_*", "h12_*", "h13_*", "h14_*"]
    assert ev.main(["--split", "held_out_15", *others, *later]) == 2
    assert ev.main(["--split", "held_out_16", *others, *later, "h15_*"]) == 2
    assert ev.main(["--split", "held_out_17", *others, *later, "h15_*", "h16_*"]) == 2
    assert ev.main(["--split", "held_out_18", *others, *later, "h15_*", "h16_*", "h17_*"]) == 2
    assert ev.main(["--split", "held_out_19", *others, *later, "h15_*", "h16_*", "h17_*", "h18_*"]) == 2
    before_h20 = [*others, *later, "h15_*", "h16_*", "h17_*", "h18_*", "h19_*"]
    assert ev.main(["--split", "held_out_20", *before_h20]) == 2
    assert ev.main(["--split", "held_out_21", *before_h20, "h20_*"]) == 2
    assert ev.main(["--split", "held_out_22", *before_h20, "h20_*", "h21_*"]) == 2
    assert ev.main(["--split", "held_out_23", *before_h20, "h20_*", "h21_*", "h22_*"]) == 2
    assert ev.main(["--split", "held_out_24", *before_h20, "h20_*", "h21_*", "h22_*", "h23_*"]) == 2
    assert ev.main(["--split", "held_out_25", *before_h20, "h20_*", "h21_*", "h22_*", "h23_*", "h24_*"]) == 2
    assert (
        ev.main(["--split", "held_out_26", *before_h20, "h20_*", "h21_*", "h22_*", "h23_*", "h24_*", "h25_*"])
        == 2
    )
    before_h27 = [*before_h20, "h20_*", "h21_*", "h22_*", "h23_*", "h24_*", "h25_*", "h26_*"]
    assert ev.main(["--split", "held_out_27", *before_h27]) == 2
    assert ev.main(["--split", "held_out_28", *before_h27, "h27_*"]) == 2
    assert ev.main(["--split", "held_out_29", *before_h27, "h27_*", "h28_*"]) == 2
    assert ev.main(["--split", "held_out_30", *before_h27, "h27_*", "h28_*", "h29_*"]) == 2
    assert ev.main(["--split", "held_out_31", *before_h27, "h27_*", "h28_*", "h29_*", "h30_*"]) == 2
    assert ev.main(["--split", "held_out_32", *before_h27, "h27_*", "h28_*", "h29_*", "h30_*", "h31_*"]) == 2
    assert (
        ev.main(["--split", "held_out_33", *before_h27, "h27_*", "h28_*", "h29_*", "h30_*", "h31_*", "h32_*"])
        == 2
    )
    before_h34 = [*before_h27, "h27_*", "h28_*", "h29_*", "h30_*", "h31_*", "h32_*", "h33_*"]
    assert ev.main(["--split", "held_out_34", *before_h34]) == 2
    assert ev.main(["--split", "held_out_35", *before_h34, "h34_*"]) == 2
    assert ev.main(["--split", "held_out_36", *before_h34, "h34_*", "h35_*"]) == 2
    assert ev.main(["--split", "held_out_37", *before_h34, "h34_*", "h35_*", "h36_*"]) == 2
    assert ev.main(["--split", "held_out_38", *before_h34, "h34_*", "h35_*", "h36_*", "h37_*"]) == 2
    assert ev.main(["--split", "held_out_39", *before_h34, "h34_*", "h35_*", "h36_*", "h37_*", "h38_*"]) == 2
    assert (
        ev.main(["--split", "held_out_40", *before_h34, "h34_*", "h35_*", "h36_*", "h37_*", "h38_*", "h39_*"])
        == 2
    )
    before_h41 = [*before_h34, "h34_*", "h35_*", "h36_*", "h37_*", "h38_*", "h39_*", "h40_*"]
    assert ev.main(["--split", "held_out_41", *before_h41]) == 2
    assert ev.main(["--split", "held_out_42", *before_h41, "h41_*"]) == 2
    assert ev.main(["--split", "held_out_43", *before_h41, "h41_*", "h42_*"]) == 2
    assert ev.main(["--split", "held_out_44", *before_h41, "h41_*", "h42_*", "h43_*"]) == 2
    assert ev.main(["--split", "held_out_45", *before_h41, "h41_*", "h42_*", "h43_*", "h44_*"]) == 2
    assert ev.main(["--split", "held_out_46", *before_h41, "h41_*", "h42_*", "h43_*", "h44_*", "h45_*"]) == 2
    assert (
        ev.main(["--split", "held_out_47", *before_h41, "h41_*", "h42_*", "h43_*", "h44_*", "h45_*", "h46_*"])
        == 2
    )
    before_h48 = [*before_h41, "h41_*", "h42_*", "h43_*", "h44_*", "h45_*", "h46_*", "h47_*"]
    assert ev.main(["--split", "held_out_48", *before_h48]) == 2
    assert ev.main(["--split", "held_out_49", *before_h48, "h48_*"]) == 2


def test_manifest_kinds_are_cause_kinds(manifest: dict) -> None:
    """Every kind a scenario expects, accepts or forbids is a cause kind the engine can name (a fix
    ID's prefix such as `trainable` is none: such a truth could never be met)."""
    from xlagraph.diagnose.causes import CauseKind

    kinds = {k.value for k in CauseKind}
    wrong = {
        (e["name"], field, kind)
        for e in manifest["scenarios"]
        for field in ("expected_kinds", "accepted_kinds", "forbidden_kinds")
        for kind in e.get(field, [])
        if kind not in kinds
    }
    assert not wrong, sorted(wrong)
