"""Bit fingerprints (xlagraph.capture._fingerprints) and their capture (XLAGRAPH_FINGERPRINTS=1).

Eager CPU checks run in-process; the XLA device check is one torch_xla subprocess (PJRT_DEVICE=CPU).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tests.oracles.fingerprint_reference import fingerprint_rows, reference_row  # noqa: E402
from xlagraph.capture import _fingerprints as F  # noqa: E402
from xlagraph.capture import fingerprint_format as ff  # noqa: E402
from xlagraph.diverge import diverge, load_fingerprints  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _tensors() -> list:
    g = torch.Generator().manual_seed(0)
    return [
        torch.randn(3, 4, generator=g),
        torch.tensor([1.0, float("nan"), float("inf"), -float("inf"), -0.0, 0.0]),
        torch.randn(5, generator=g).bfloat16(),
        torch.randn(4, generator=g).half(),
        torch.randn(6, generator=g).double(),
        torch.randint(0, 100, (7,), generator=g),
        torch.tensor([True, False, True]),
        torch.zeros(0),
        torch.randn(2, 3, generator=g).t(),  # not contiguous
    ]


def test_rows_equal_the_slow_reference():
    ts = _tensors()
    rows = fingerprint_rows(ts)
    for t, row in zip(ts, rows, strict=True):
        assert row[:4] == reference_row(t), t


def test_nan_inf_counts_and_norm():
    row = fingerprint_rows([torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])])[0]
    assert row[2:4] == (1, 2)
    norm = fingerprint_rows([torch.tensor([3.0, 4.0])])[0][4]
    assert norm == 5.0


def test_a_swap_changes_wsum_not_sum():
    a = torch.randn(100)
    b = a.clone()
    b[[3, 70]] = b[[70, 3]]
    ra, rb = fingerprint_rows([a, b])
    assert ra[0] == rb[0] and ra[1] != rb[1]


def test_one_bit_changes_the_fingerprint_and_signed_zero_counts():
    a = torch.tensor([0.0, 1.0])
    b = torch.tensor([-0.0, 1.0])
    c = torch.tensor([0.0, float.fromhex("0x1.0000020000000p+0")])  # 1 + 2**-23: last mantissa bit
    ra, rb, rc = fingerprint_rows([a, b, c])
    assert ra[:2] != rb[:2] and ra[:2] != rc[:2]


def test_order_of_tensors_and_chunking_do_not_matter(monkeypatch):
    ts = _tensors()
    rows = [r[:4] for r in fingerprint_rows(ts)]  # (the norm of a NaN tensor is NaN: != itself)
    assert [r[:4] for r in fingerprint_rows(ts[::-1])] == rows[::-1]
    monkeypatch.setattr(F, "MAX_CHUNK", 8)  # every tensor in a chunk of its own
    assert [r[:4] for r in fingerprint_rows(ts)] == rows


def test_sums_wrap_like_int64():
    big = torch.full((4,), float("nan")).view(torch.int32).fill_(0x7FFFFFFF).view(torch.float32)
    t = big.repeat(1 << 12)
    assert fingerprint_rows([t])[0][:4] == reference_row(t)


XLA_CHECK = textwrap.dedent(
    """
    import json, torch, torch_xla
    import torch_xla.debug.metrics as met
    from xlagraph.capture import _fingerprints as F
    from tests.oracles.fingerprint_reference import fingerprint_rows, reference_row
    dev = torch_xla.device()
    g = torch.Generator().manual_seed(0)
    cpu = [torch.randn(32, 16, generator=g), torch.randn(7, generator=g).bfloat16(),
           torch.tensor([1.0, float("nan"), float("inf")]), torch.randint(0, 9, (5,), generator=g),
           torch.randn(3, generator=g).double()]
    # the block shapes the XLA lowering reduces (_fingerprint_lower.block_dims): padded ones, several levels
    # of 32, every dtype it converts, a scalar, an empty tensor
    big = torch.randn(40001, generator=g)
    big[[5, 7, 40000]] = torch.tensor([float("nan"), float("inf"), -float("inf")])
    cpu += [big, torch.randn(1025, generator=g).half(), torch.randn(33, 35, generator=g),
            torch.tensor(3.5), torch.zeros(0), torch.tensor([True, False, True]),
            torch.randint(0, 255, (2000,), generator=g).to(torch.uint8),
            torch.randint(-2**62, 2**62, (3000,), generator=g)]
    # tensors of one dtype and size are reduced together (_fingerprint_lower._group_rows), rows put back in
    # order: groups of another shape, padded, with NaN/Inf, not next to each other
    cpu += [torch.randn(35, 33, generator=g), -big.flip(0), torch.randn(7, generator=g).bfloat16(),
            torch.tensor([False, True, True])]
    xs = [t.to(dev) for t in cpu]
    torch_xla.sync()
    met.clear_all()
    rows = [fingerprint_rows(xs) for _ in range(3)]
    reference = [list(reference_row(t)) for t in cpu]
    print(json.dumps({
        "eager": fingerprint_rows(cpu), "xla": rows[0], "reference": reference,
        "stable": [r[:4] for r in rows[0]] == [r[:4] for r in rows[2]],
        "fallbacks": [k for k in met.counter_names() if k.startswith("aten::")],
        "compiles": met.counter_value("UncachedCompile"),
    }))
    """
)


def test_xla_fingerprints_stay_on_the_device_and_match_eager():
    pytest.importorskip("torch_xla")
    out = subprocess.run(
        [sys.executable, "-c", XLA_CHECK],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**__import__("os").environ, "PJRT_DEVICE": "CPU", "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["fallbacks"] == []  # no aten:: op ran on the CPU (a plain view(int32) would)
    assert r["reference"] == [row[:4] for row in r["xla"]]  # the slow, obvious Python sums
    assert r["compiles"] == 1  # one graph for this set of shapes, cached after
    assert r["stable"]
    assert [row[:4] for row in r["xla"]] == [row[:4] for row in r["eager"]]
    for a, b in zip(r["xla"], r["eager"], strict=True):
        assert a[4] == pytest.approx(b[4], rel=1e-5, nan_ok=True)


def test_records_of_a_batch_of_steps_are_each_step_written_alone():
    """fingerprints.bin for several steps at once (XLA tables are fetched in batches): each step a
    header and its tensors sorted by name id (stable), as fingerprint_format.RECORD packs them one by one."""
    import struct

    from xlagraph.capture import _fingerprint_records

    g = torch.Generator().manual_seed(0)

    def table(n: int) -> torch.Tensor:
        t = torch.randint(-(2**62), 2**62, (n, 5), generator=g)
        t[:, 2:4] = torch.randint(0, 1 << 40, (n, 2), generator=g)  # counts past the 32-bit field
        t[:, 4] = torch.randint(0, 1 << 31, (n,), generator=g)  # f32 bits of a norm
        return t

    steps = [
        (0, 3, [4, 0, 2], [table(3)]),
        (1, 4, [], []),  # a step that recorded no tensor
        (2, 6, [7, 1], [table(1), table(1)]),  # two tables (devices) of one step
        (3, 8, [5, 5, 2], [table(3)]),  # a name seen twice keeps its order
    ]

    def alone(step: int, jstep: int, ids: list[int], tables: list[torch.Tensor]) -> bytes:
        rows = [r for t in tables for r in t.tolist()]
        out = ff.RECORD.pack(ff.HEADER_ID, step, jstep, len(ids), 0, 0.0)
        for i, r in sorted(zip(ids, rows, strict=True), key=lambda pair: pair[0]):
            norm = struct.unpack("<f", struct.pack("<i", r[4]))[0]
            out += ff.RECORD.pack(i, r[0], r[1], min(r[2], 2**31 - 1), min(r[3], 2**31 - 1), norm)
        return out

    expected = b"".join(alone(*step) for step in steps)
    assert _fingerprint_records.records(steps) == expected
    assert b"".join(_fingerprint_records._records_struct(step) for step in steps) == expected  # without numpy


def _live_xla(fetch_every: int) -> list[str]:
    return [
        sys.executable,
        "-c",
        "import runpy, sys; from xlagraph.capture import _fingerprint_capture as f; "
        f"f.FETCH_EVERY = {fetch_every}; sys.argv = ['train.py', '--backend', 'xla']; "
        "runpy.run_path('fixtures/divergence/train.py', run_name='__main__')",
    ]


def _bits(run) -> list:
    return [(s.index, s.journal_step, {n: v.bits for n, v in s.values.items()}) for s in run.steps]


def test_xla_capture_is_bit_exact_across_fetches_and_leaves_its_graphs_alone(tmp_path):
    """Live torch_xla runs of the divergence fixture's job. Its fingerprint tables fetched 4 steps at
    a time (one batch mid-run, the rest at exit) and all at exit give the same integer fields bit for
    bit; against the same job without fingerprints the journal has the same graph hashes, step by
    step, the same compiles and executions. Against the committed run (fixtures/divergence/xla/ref):
    the same tensors and steps, the inputs bit for bit and every norm close. The computed values are
    bit-exact only on the CPU kind that made the fixture: XLA's CPU code is built for the host (its
    vector width orders the sums), so another CPU differs in the last bits of the gradients."""
    pytest.importorskip("torch_xla")
    from xlagraph.capture.reader import read_capture

    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("XLAGRAPH_", "PT_XLA"))}
    env.update(PJRT_DEVICE="CPU", PYTHONPATH=str(ROOT), XLAGRAPH_TENSORS_REPORT="0")
    runs = {}
    for name, fingerprints, fetch_every in (("fp", "1", 4), ("fp_at_exit", "1", 1000), ("nofp", "0", 4)):
        out = tmp_path / name
        done = subprocess.run(
            _live_xla(fetch_every),
            cwd=ROOT,
            env={**env, "XLAGRAPH_CAPTURE": str(out), "XLAGRAPH_FINGERPRINTS": fingerprints},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        runs[name] = out
    (live,) = load_fingerprints(runs["fp"])
    (at_exit,) = load_fingerprints(runs["fp_at_exit"])
    assert live.tensors == at_exit.tensors and _bits(live) == _bits(at_exit)
    (committed,) = load_fingerprints(ROOT / "fixtures" / "divergence" / "xla" / "ref")
    assert live.tensors == committed.tensors
    steps = [(s.index, s.journal_step) for s in live.steps]
    assert steps == [(s.index, s.journal_step) for s in committed.steps]
    for a, b in zip(live.steps, committed.steps, strict=True):  # the norm: another summation order
        for name, v in a.values.items():
            if name.startswith("input."):
                assert v.bits == b.values[name].bits  # data from a seeded CPU generator
            assert v.norm == pytest.approx(b.values[name].norm, rel=1e-5)
    (with_fp,), (without,) = read_capture(runs["fp"]), read_capture(runs["nofp"])
    assert [(s.step, s.graph_hash, s.compiled) for s in with_fp.syncs] == [
        (s.step, s.graph_hash, s.compiled) for s in without.syncs
    ]
    assert with_fp.compiles_reported == without.compiles_reported
    ends = []
    for out in (runs["fp"], runs["nofp"]):
        (journal,) = out.glob("*/journal.jsonl")
        end = [json.loads(x) for x in journal.read_text().splitlines() if '"k":"end"' in x][-1]
        ends.append((end["compiles"], end["executions"], end["markers"]))
    assert ends[0] == ends[1]
    (proc,) = [p for p in runs["fp"].iterdir() if p.is_dir()]
    assert len(list((proc / "hlo").iterdir())) == len(with_fp.graphs)  # the fingerprint graph's removed


# -- capture in plain PyTorch (CPU eager), in-process ---------------------------------------------


def _loop(steps: int = 4, lr_from: int = -1, swap: int = -1) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    batches = [torch.randn(4, 8, generator=g) for _ in range(steps)]
    if swap >= 0:
        batches[swap], batches[swap + 1] = batches[swap + 1], batches[swap]
    for k, x in enumerate(batches):
        if k == lr_from:
            opt.param_groups[0]["lr"] = 0.1
        opt.zero_grad()
        model(x).square().mean().backward()  # the loss is held by nobody but the capture
        opt.step()


def _captured(tmp: Path, name: str, **kw) -> Path:
    from xlagraph.capture import capture

    d = tmp / name
    import os

    os.environ["XLAGRAPH_FINGERPRINTS"] = "1"
    try:
        with capture(d):
            _loop(**kw)
    finally:
        os.environ.pop("XLAGRAPH_FINGERPRINTS", None)
    return d


def test_eager_capture_names_roles_and_size(tmp_path):
    d = _captured(tmp_path, "a")
    (run,) = load_fingerprints(d)
    assert len(run.steps) == 4
    names = list(run.tensors)
    assert names[:2] == ["input.0", "loss"]
    assert "0.weight.grad" in names and "0.weight.exp_avg" in names and "2.bias" in names
    assert [run.tensors[n].role for n in names] == sorted(
        (run.tensors[n].role for n in names), key=ff.ROLE_ORDER.__getitem__
    )
    size = (Path(run.path) / ff.BIN).stat().st_size
    per_step = size / len(run.steps)
    assert per_step == ff.RECORD.size * (1 + len(run.steps[0].values))  # a record a tensor, a header a step
    assert ff.RECORD.size == 30  # under 32 bytes per tensor and step, header included, from 15 tensors


def test_eager_runs_compare(tmp_path):
    a, b = _captured(tmp_path, "a"), _captured(tmp_path, "b")
    assert diverge(a, b).verdict == "bit_exact"
    c = _captured(tmp_path, "c", lr_from=2)
    d = diverge(a, c)
    assert (d.first_step, d.first[0].role, d.inputs_identical) == (2, "param", True)
    e = diverge(a, _captured(tmp_path, "e", swap=1))
    assert (e.first_step, e.first[0].name, e.inputs_identical) == (1, "input.0", False)


def test_a_failing_fingerprint_never_breaks_training(tmp_path, monkeypatch, capfd):
    def broken(tensors):
        raise RuntimeError("boom")

    monkeypatch.setattr(F, "fingerprint", broken)
    d = _captured(tmp_path, "f")  # trains all its steps
    err = capfd.readouterr().err
    assert err.count("fingerprints off after error: RuntimeError: boom") == 1
    (proc,) = [p for p in d.iterdir() if p.is_dir()]
    notes = [json.loads(x) for x in (proc / ff.JSONL).read_text().splitlines()]
    assert [n["v"] for n in notes if n["k"] == "note"] == ["fingerprints off after error: RuntimeError: boom"]
