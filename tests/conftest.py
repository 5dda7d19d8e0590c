from __future__ import annotations

import json
import os
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xlagraph.ir import Module

# torch_xla runs on the CPU here (and in CI); subprocesses inherit this.
os.environ.setdefault("PJRT_DEVICE", "CPU")
# A recognizer that fails raises in tests (users get a warning and the unrecognized cause instead).
os.environ.setdefault("XLAGRAPH_STRICT", "1")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The pairs the tests diff (`path[#index]` per side), for the compiled-vs-reference checks.
FIXTURE_PAIRS: list[tuple[str, ...]] = [
    tuple(line.split("\t"))
    for line in (ROOT / "tests" / "data" / "fixture_pairs.txt").read_text(encoding="utf-8").splitlines()
    if line and not line.startswith("#")
]


def pair_spec(spec: str) -> str:
    """A fixture pair's side as a path `diff_files` reads (`#index` kept)."""
    path, hash_, index = spec.partition("#")
    return str(ROOT / path) + hash_ + index


def load_pair_side(spec: str, var: ContextVar[bool], value: bool) -> Module:
    """`load_module(pair_spec(spec))` read with the reader's switch `var` (`IR_FIRST`, `LAZY_IR`)
    set to `value`."""
    from xlagraph.parse.sources import load_module

    token = var.set(value)
    try:
        return load_module(pair_spec(spec))
    finally:
        var.reset(token)


def load_manifest(name: str) -> dict:
    path = FIXTURES / name / "MANIFEST.json"
    if not path.exists():
        pytest.fail(f"missing {path}: run fixtures/{name}/generate.py")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
