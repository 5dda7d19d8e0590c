"""Fuzzing the command line with mutated real dumps and capture folders (bounded: about a minute).

The contract (fixtures/fuzz/harness.py): exit 0, 1 or 2; at most a few lines on stderr; no
traceback; an answer within the time limit and under the memory limit; and `xlagraph diff` never
says identical when jaxlib reads both graphs and their live graphs differ. The examples are
derandomized and counted, so a CI run is repeatable; `benchmarks/fuzz_long.py --minutes N` runs the
same mutators for as long as you like and logs every failure class.
"""

from __future__ import annotations

import importlib.util
import os
import random
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "xlagraph_fuzz_harness", ROOT / "fixtures" / "fuzz" / "harness.py"
)
assert _spec is not None and _spec.loader is not None
harness = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = harness
_spec.loader.exec_module(harness)

HLO_SEEDS = harness.hlo_seeds()
SAVE_SEEDS = harness.save_seeds()
CAPTURES = harness.capture_seeds()
SEED_BYTES = [p.read_bytes() for p in HLO_SEEDS]
MUTATOR_NAMES = sorted(harness.MUTATORS)
BOUNDED = settings(
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: every example costs a process call
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture(scope="module")
def runner():
    r = harness.Runner()
    yield r
    r.close()


_signatures: dict[bytes, tuple[str, ...] | None] = {}


def _signature(data: bytes) -> tuple[str, ...] | None:
    if data not in _signatures:
        _signatures[data] = harness.jaxlib_signature(data)
    return _signatures[data]


def _summary(found: list[tuple[str, str]]) -> str:
    """One line per breach class with its first example, most frequent first."""
    classes: dict[str, list[str]] = {}
    for cls, example in found:
        classes.setdefault(cls, []).append(example)
    ranked = sorted(classes.items(), key=lambda kv: -len(kv[1]))
    return f"{len(found)} breaches in {len(classes)} classes:\n" + "\n".join(
        f"  {len(ex):3} x {cls}\n        e.g. {ex[0]}" for cls, ex in ranked
    )


def test_seeds_exist() -> None:
    assert len(HLO_SEEDS) >= 10 and SAVE_SEEDS and len(CAPTURES) >= 3


def test_seeds_are_read(runner) -> None:
    """The unmutated real dumps (all of which jaxlib reads) are read: exit 0 from `graphs`."""
    failed = {
        p.name: o.stderr.strip() for p in HLO_SEEDS + SAVE_SEEDS if (o := runner.run("graphs", str(p))).code
    }
    assert not failed, failed


def test_mutated_hlo_keeps_the_contract(runner, tmp_path_factory) -> None:
    found: list[tuple[str, str]] = []

    @settings(BOUNDED, max_examples=500)
    @given(
        seed=st.integers(0, 10_000),
        ops=st.lists(st.sampled_from(MUTATOR_NAMES), min_size=1, max_size=3),
        which=st.integers(0, 10_000),
        command=st.sampled_from(harness.HLO_COMMANDS),
    )
    def one(seed: int, ops: list[str], which: int, command: str) -> None:
        original = SEED_BYTES[which % len(SEED_BYTES)]
        mutated = harness.mutate(random.Random(seed), original, SEED_BYTES, ops)
        work = tmp_path_factory.mktemp("fuzz")
        where = f"{HLO_SEEDS[which % len(HLO_SEEDS)].relative_to(ROOT)} ops={ops} seed={seed} cmd={command}"
        for cls in harness.hlo_case(runner, work, original, mutated, command, _signature):
            found.append((cls, where))

    one()
    assert not found, _summary(found)


# Cases the fuzzing found (seed file, mutations, random seed): each is a different graph for jaxlib
# that `xlagraph diff` once called identical. Kept explicit so they are checked on every run.
FOUND = [
    ("fixtures/jax/showcase.compiled.hlo", ("renumber_parameters", "renumber_parameters"), 22),
    ("fixtures/jax/spmd_shard_map.compiled.hlo", ("renumber_parameters",), 0),
    ("fixtures/jax/showcase.short.hlo", ("swap_operands",), 10),  # a called computation's tuple(a, b)
    ("fixtures/torch_xla/clean_loop/b.hlo", ("swap_operands",), 0),  # multiply(a, b) -> (b, a)
    ("fixtures/torch_xla/reordered_statements/b.hlo", ("huge_shape",), 32),  # entry_computation_layout
]


@pytest.mark.parametrize(("seed_file", "ops", "seed"), FOUND)
def test_found_by_fuzzing_not_identical(
    runner, tmp_path, seed_file: str, ops: tuple[str, ...], seed: int
) -> None:
    original = (ROOT / seed_file).read_bytes()
    mutated = harness.mutate(random.Random(seed), original, [original], list(ops))
    assert mutated != original
    found = harness.hlo_case(runner, tmp_path, original, mutated, "diff seed", _signature)
    assert not found, found


def test_mutated_save_file_keeps_the_contract(runner, tmp_path_factory) -> None:
    found: list[tuple[str, str]] = []

    @settings(BOUNDED, max_examples=60)
    @given(
        seed=st.integers(0, 10_000), which=st.integers(0, 100), op=st.sampled_from(sorted(harness.MUTATORS))
    )
    def one(seed: int, which: int, op: str) -> None:
        original = SAVE_SEEDS[which % len(SAVE_SEEDS)]
        path = tmp_path_factory.mktemp("save") / "save_hlo.txt"
        path.write_bytes(harness.mutate(random.Random(seed), original.read_bytes(), SEED_BYTES, [op]))
        for cls in harness.save_case(runner, path):
            found.append((cls, f"{original.parent.name}/{original.name} op={op} seed={seed}"))

    one()
    assert not found, _summary(found)


def test_mutated_capture_keeps_the_contract(runner, tmp_path_factory) -> None:
    """Journal / meta records with a field missing or of the wrong type: report and check stay clean."""
    found: list[tuple[str, str]] = []

    @settings(BOUNDED, max_examples=100)
    @given(seed=st.integers(0, 10_000), which=st.integers(0, 100), edits=st.integers(1, 3))
    def one(seed: int, which: int, edits: int) -> None:
        folder = tmp_path_factory.mktemp("cap") / "capture"
        source = CAPTURES[which % len(CAPTURES)]
        shutil.copytree(source, folder)
        what = harness.mutate_capture(random.Random(seed), folder, edits)
        for cls in harness.capture_case(runner, folder):
            found.append((cls, f"{source.name}: {what}"))

    one()
    assert not found, _summary(found)


# ---------------------------------------------------------------- special files (the real binary)


def _special_cases(tmp: Path) -> list[tuple[str, ...]]:
    good = str(HLO_SEEDS[0])
    fifo = tmp / "fifo.hlo"
    os.mkfifo(fifo)
    (tmp / "zero.hlo").symlink_to("/dev/zero")
    (tmp / "loop_a.hlo").symlink_to(tmp / "loop_b.hlo")
    (tmp / "loop_b.hlo").symlink_to(tmp / "loop_a.hlo")
    (tmp / "empty_dir").mkdir()
    junk = tmp / "junk_dir"
    junk.mkdir()
    (junk / "module_0000.x.before_optimizations.txt").write_bytes(b"\x00\xff" * 100)
    with open(tmp / "sparse.hlo", "wb") as f:
        f.truncate(200 * 1024**2)  # 200 MB of holes: over the fuzz limit of 64 MB
    cases = [("graphs", str(tmp / n)) for n in ("fifo.hlo", "zero.hlo", "loop_a.hlo", "sparse.hlo")]
    cases += [("graphs", str(tmp / "empty_dir")), ("graphs", str(junk)), ("graphs", str(tmp / "missing.hlo"))]
    cases += [("diff", good, str(fifo)), ("diff", str(tmp / "zero.hlo"), good), ("diff", f"{good}#٣", good)]
    cases += [("report", str(tmp / "empty_dir")), ("check", "--max-graphs", "1", str(fifo))]
    return cases


def test_special_files_refused_in_one_line(tmp_path: Path) -> None:
    cases = _special_cases(tmp_path)
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda args: harness.run_binary(*args, timeout=20), cases))
    bad = [
        (o.args, o.violations() or [f"exit {o.code}"], o.stderr[-300:])
        for o in outcomes
        if o.violations() or o.code != 2
    ]
    assert not bad, "\n".join(map(str, bad))


def test_small_file_reads_under_memory_limit() -> None:
    """The default input limit must not cost its size in memory: a 17 KB file under RLIMIT_AS 1.5 GB."""
    env = {k: v for k, v in os.environ.items() if k != "XLAGRAPH_MAX_INPUT_MB"}
    outcome = harness.run_binary("graphs", str(HLO_SEEDS[0]), env=env)
    assert outcome.code == 0, outcome.stderr
