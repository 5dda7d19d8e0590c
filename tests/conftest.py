from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# torch_xla runs on the CPU here (and in CI); subprocesses inherit this.
os.environ.setdefault("PJRT_DEVICE", "CPU")
# A recognizer that fails raises in tests (users get a warning and the unrecognized cause instead).
os.environ.setdefault("XLAGRAPH_STRICT", "1")

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def load_manifest(name: str) -> dict:
    path = FIXTURES / name / "MANIFEST.json"
    if not path.exists():
        pytest.fail(f"missing {path}: run fixtures/{name}/generate.py")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
