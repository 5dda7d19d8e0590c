"""Metamorphic tests (issue 19): real modules from fixtures/, transformed in their text in ways
whose effect is known by construction (tests/metamorphic/transforms.py), alone and in every pair;
the real `xlagraph.diff` path must name exactly those transformations, with the exact mappings,
and nothing else (tests/metamorphic/check.py).

A deterministic sample keeps this within a few minutes: every `STRIDE`-th module of at most
`MAX_INSTRUCTIONS` instructions in files of at most `MAX_BYTES`. The whole corpus is scored by
benchmarks/metamorphic_score.py. A case whose transformation has nothing to act on in a module
(no tuple root, a single distinguishable input, ...) is skipped and counted in
`test_enough_cases_apply`.
"""

from __future__ import annotations

from functools import cache

import pytest

from tests.metamorphic.check import AMBIGUOUS_CASES, CASES, Outcome, corpus, run_case

MAX_INSTRUCTIONS = 400
MAX_BYTES = 40_000
STRIDE = 12

# (case, module): what the engine answers where the right answer is out of reach today.
KNOWN: dict[tuple[str, str], str] = {
    ("reorder+batch", "jax/wild4/mlp_input_spec_spmd_pass/a.hlo"): (
        "says only `collective`: in this scheduled (compiled) module, reordering the text reorders "
        "the all-reduces' program order, and with their operands resized too the sequence no longer "
        "lines up; the parameter_shape is folded into it"
    ),
    ("permute_params+drop_output", "jax/wild3/compiled_gpt_decode_two_processes/b.hlo"): (
        "input mapping (0,4),(2,5),(3,2),(4,3),(5,0) beside output_removed: the known class of input "
        "mappings beside a dropped output on JAX decode modules (docs/matching.md); in the sample "
        "since the proto fixtures moved its stride"
    ),
    ("add_output+constant", "torch_xla/dict_stats/b.hlo"): (
        "says output_permutation (outputs 1 and 10 crossed) beside constant_value + output_added, "
        "and names another constant: the context pairs the two statistics right (1->2, 10->11, "
        "the added output found), a later step of the diff pairs them across"
    ),
}


# Modules the engine does not call identical with themselves: a real defect, so no transformation
# of them can be judged (each case is skipped, saying why) and the self test requires exactly these.
NOT_SELF_IDENTICAL: dict[str, str] = {}


# Modules where permuting inputs or outputs has no single right answer: every output is an input
# passed straight through, with the same shape, so swapping inputs is swapping outputs (both
# swapped is the same program). Only the cases with a permutation are skipped: which output was
# dropped, a rename or a batch size have one right answer there too.
AMBIGUOUS: dict[str, str] = {
    "xla_conformance/modules/HloParserTest.CheckAliasPassthroughParams.hlo": (
        "two f16[2048,1024] inputs returned as they are: a permutation of inputs is one of outputs"
    ),
}


@cache
def _modules() -> tuple[tuple[str, str], ...]:
    return tuple(corpus(MAX_INSTRUCTIONS, MAX_BYTES)[::STRIDE])


def _params() -> list[object]:
    out = []
    for label, _ in _modules():
        for names in CASES:
            key = "+".join(names)
            marks: tuple[object, ...] = ()
            if label in NOT_SELF_IDENTICAL:
                marks = (pytest.mark.skip(reason=f"not identical with itself: {NOT_SELF_IDENTICAL[label]}"),)
            elif label in AMBIGUOUS and AMBIGUOUS_CASES.intersection(names):
                marks = (pytest.mark.skip(reason=f"no single right answer: {AMBIGUOUS[label]}"),)
            elif (key, label) in KNOWN:
                marks = (pytest.mark.xfail(strict=True, reason=KNOWN[(key, label)]),)
            out.append(pytest.param(label, names, id=f"{key}:{label}", marks=marks))
    return out


_OUTCOMES: dict[tuple[str, tuple[str, ...]], Outcome] = {}


def _outcome(label: str, names: tuple[str, ...]) -> Outcome:
    key = (label, names)
    if key not in _OUTCOMES:
        text = dict(_modules())[label]
        _OUTCOMES[key] = run_case(label, text, names)
    return _OUTCOMES[key]


def test_sample_diffs_identical_with_itself() -> None:
    bad = [label for label, _ in _modules() if _outcome(label, ()).status != "pass"]
    assert bad == [label for label, _ in _modules() if label in NOT_SELF_IDENTICAL], bad


@pytest.mark.parametrize(("label", "names"), _params())
def test_transformation_named_exactly(label: str, names: tuple[str, ...]) -> None:
    out = _outcome(label, names)
    if out.status == "n/a":
        pytest.skip(f"not applicable: {out.problems[0]}")
    assert out.status == "pass", (
        f"{'; '.join(out.problems)} (engine says: {', '.join(out.kinds) or 'identical'})"
    )


def test_enough_cases_apply() -> None:
    """Every transformation and every pair acts on some modules of the sample: a transformation
    that silently applies nowhere would test nothing."""
    for names in CASES:
        applied = sum(_outcome(label, names).status != "n/a" for label, _ in _modules())
        assert applied >= 3, ("+".join(names), applied)
