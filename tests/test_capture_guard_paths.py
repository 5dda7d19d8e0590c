"""Capture's dynamo trace keeps no tail of the capturing machine's path in a guard's comment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("torch")

from torch.utils._traceback import shorten_filename

from xlagraph.capture._dynamo import _TraceHandler


def test_guard_comment_path_cut_by_torch_is_made_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = tmp_path / "checkout" / "corpus"
    checkout.mkdir(parents=True)
    monkeypatch.chdir(checkout)
    script = os.path.join(os.getcwd(), "scripts", "train.py")
    # what torch 2.9 writes after a guard's code: the path cut after its common path with torch's folder
    cited = shorten_filename(script)
    assert not os.path.isabs(cited) and cited.endswith("scripts/train.py")
    handler = _TraceHandler(str(tmp_path / "trace.log"), 10**6, lambda p: p, lambda: (None, 0.0))
    line = f'- 0/0: ___check_obj_id(x)  # if "w" in batch:  # {cited}:20 in forward_loss'
    out = handler._text(line)
    assert out.endswith("# scripts/train.py:20 in forward_loss"), out
    assert str(tmp_path)[2:] not in out
