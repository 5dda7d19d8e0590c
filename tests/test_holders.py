"""What keeps a tensor alive, named in the user's terms, on real torch_xla 2.9 runs (PJRT_DEVICE=CPU).

A tensor kept alive on some steps only is an extra output of those steps' graphs. Storing it
creates no op, so no dump records the line that does it; capture names the holder
(`capture/_holders.py`) and the report finds the line that stores it (`diagnose/attribution/holders.py`).
The scripts of fixtures/torch_xla/holders/ each keep a tensor on some steps, the storing line
marked `# GUILTY`: a Trainer's metrics dict, a module attribute set in `forward`, a module-level
dict.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from xlagraph.diagnose.causes import CauseKind
from xlagraph.render.report_json import report_to_json
from xlagraph.render.report_text import render_report_text
from xlagraph.report import build_report, load_runs
from xlagraph.report.model import RunReport

HOLDERS = FIXTURES / "torch_xla" / "holders"
# script -> (the cause, what keeps the tensors alive)
EXPECTED = {
    "trainer_metrics": (
        CauseKind.OUTPUT_REMOVED,
        {"trainer.metrics['logits'] (in main)", "trainer.metrics['loss'] (in main)"},
    ),
    "module_attribute": (CauseKind.OUTPUT_ADDED, {"block.last_attn (in <module>)"}),
    "global_stats": (CauseKind.OUTPUT_REMOVED, {"stats[0] (in <module>)"}),
}
TIMEOUT = 300


def _env(capture: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("XLAGRAPH_", "PT_XLA_DEBUG", "_XLAGRAPH"))
        and k not in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS", "XLA_SAVE_TENSORS_FILE")
    }
    env.update(PJRT_DEVICE="CPU", XLAGRAPH_CAPTURE=str(capture), PYTHONHASHSEED="0")
    return env


def _capture(root: Path, name: str) -> Path:
    out = root / name
    proc = subprocess.run(
        [sys.executable, str(HOLDERS / f"{name}.py")],
        env=_env(out),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=HOLDERS,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("holders")
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(EXPECTED, pool.map(lambda n: _capture(root, n), EXPECTED), strict=True))


def _report(folder: Path) -> RunReport:
    (log,) = load_runs(str(folder))
    return build_report(log)


def _guilty(name: str) -> str:
    text = (HOLDERS / f"{name}.py").read_text(encoding="utf-8").splitlines()
    return f"{name}.py:{next(n for n, line in enumerate(text, 1) if '# GUILTY' in line)}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_storing_line_is_cited_and_the_holder_named(captures: dict[str, Path], name: str) -> None:
    kind, held = EXPECTED[name]
    report = _report(captures[name])
    (r,) = report.recompiles
    (cause,) = [c for c in r.causes if not c.info]
    assert cause.kind is kind, [str(c.kind) for c in r.causes]
    (a,) = [a for a in r.attribution if a.cause == r.causes.index(cause)]
    assert {t.held_by for t in a.tensors} == held
    guilty = _guilty(name)
    assert any(line.endswith(guilty) for line in a.lines), (a.lines, guilty)
    text = render_report_text((report,))
    assert "kept in " + sorted(held)[0] in text.replace("\n            ", " ")


def test_json_says_what_kept_each_tensor(captures: dict[str, Path]) -> None:
    data: dict[str, Any] = report_to_json((_report(captures["trainer_metrics"]),))
    (r,) = data["processes"][0]["recompiles"]
    tensors = [t for a in r["attribution"] for t in a["tensors"]]
    assert {t["held_by"] for t in tensors} == EXPECTED["trainer_metrics"][1]
    assert all(s.endswith(_guilty("trainer_metrics")) for t in tensors for s in t["stored_at"])


def test_an_unreadable_holders_file_costs_the_holders_only(captures: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(captures["trainer_metrics"], copy)
    broken = list(copy.rglob("*.holders.json*"))
    assert broken
    for path in broken:
        path.write_bytes(b"\x00not json")
    report = _report(copy)
    (r,) = report.recompiles
    assert [str(c.kind) for c in r.causes if not c.info] == ["output_removed"]
    assert all(not t.held_by for a in r.attribution for t in a.tensors)
    assert any("holders.json" in n and "unreadable" in n for n in report.notes), report.notes


def test_the_walk_reads_no_property_and_stays_bounded() -> None:
    """Real XLA tensors behind a property that raises, past the depth limit and past a large
    container: none is read or reached, and the walk ends."""
    import torch
    import torch_xla

    from xlagraph.capture import _holders

    dev = torch_xla.device()
    get_id = torch_xla._XLAC._xla_get_tensor_id

    class Guarded:
        @property
        def value(self) -> Any:
            raise AssertionError("a property was read")

    kept = {"a": torch.ones(2, device=dev)}
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(_holders.MAX_DEPTH + 2):
        node["d"] = {}
        node = node["d"]
    node["t"] = torch.ones(3, device=dev)
    many = [0] * (_holders.MAX_ITEMS * 4) + [torch.ones(4, device=dev)]
    guarded = Guarded()
    here = Path(__file__).resolve()

    def user(path: str) -> bool:
        return Path(path).resolve() == here

    found = _holders.find_holders(
        sys._getframe(), user, lambda t: int(get_id(t)) if t.device.type == "xla" else None, lambda p, n: p
    )
    paths = {r["path"]: r for r in found}
    assert "kept['a']" in paths
    assert paths["kept['a']"]["kind"] == "local" and paths["kept['a']"]["name"] == "kept"
    assert not any(p.startswith("deep") and p.endswith("['t']") for p in paths)
    assert not any(p.startswith("many[") for p in paths)
    assert kept and many and guarded is not None  # (alive through the walk)


def test_holders_are_portable(captures: dict[str, Path]) -> None:
    for folder in captures.values():
        for path in folder.rglob("*.holders.json*"):
            data = path.read_bytes()
            if path.suffix == ".xz":
                import lzma

                data = lzma.decompress(data)
            for r in json.loads(data):
                assert not os.path.isabs(r["file"]) and not os.path.isabs(r.get("owner_file", ""))
