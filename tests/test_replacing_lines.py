"""`diagnose.attribution.holders.replacing_lines`: where the user's code puts a new module on the
attribute path that holds a weight. Hand-written source text (the rule reads only source), one holder each."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.diagnose.attribution.holders import replacing_lines
from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.runlog import Holder

MODEL = """\
import torch


class Net(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.head = torch.nn.Linear(4, n)

"""


def _lines(tmp_path: Path, body: str, path: str = "model.head.weight") -> list[int]:
    file = tmp_path / "train.py"
    file.write_text(MODEL + body)
    name = path.rsplit(".", 1)[1]
    holder = Holder(path, name, "attribute", "main", str(file), 1, "torch/nn/modules/linear.py")
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        return [int(x.rsplit(":", 1)[1]) for x in replacing_lines(holder)]


def test_an_assignment_in_a_helper_and_the_helper_s_call(tmp_path: Path) -> None:
    body = (
        "def widen(model, n):\n"  # 9
        "    model.head = torch.nn.Linear(4, n)\n"  # 10
        "\n"
        "def main():\n"  # 12
        "    model = Net(3)\n"
        "    for task in range(2):\n"
        "        if task:\n"
        "            widen(model, 6)\n"  # 16
    )
    assert _lines(tmp_path, body) == [10, 16]


def test_setattr_names_the_attribute(tmp_path: Path) -> None:
    body = 'def main():\n    model = Net(3)\n    setattr(model, "head", torch.nn.Linear(4, 6))\n'
    assert _lines(tmp_path, body) == [11]


@pytest.mark.parametrize(
    "body",
    [
        # only `__init__` builds the head: nothing of the user's replaces it
        "def main():\n    model = Net(3)\n",
        # three places assign it: which one ran is not in the text
        "def a(m):\n    m.head = 1\n\ndef b(m):\n    m.head = 2\n\ndef c(m):\n    m.head = 3\n",
    ],
)
def test_nothing_where_the_text_does_not_say(tmp_path: Path, body: str) -> None:
    assert _lines(tmp_path, body) == []


def test_a_local_holder_is_no_module_path(tmp_path: Path) -> None:
    file = tmp_path / "train.py"
    file.write_text(MODEL + "def main():\n    w = 1\n    w = 2\n")
    holder = Holder("w", "w", "local", "main", str(file), 1)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert replacing_lines(holder) == ()
