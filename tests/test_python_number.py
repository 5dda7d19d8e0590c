"""`_host_numbers.python_number`: where the user computes the Python number a line reads, followed
through the user's functions, the methods of the user's objects and the arguments callers pass.
The scripts are written here (hand-written source text, no graph: the rule reads only source)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.recognizers._host_numbers import python_number

SCHEDULER = '''\
class Anneal:
    def __init__(self, start, steps):
        self.start, self.steps = start, steps

    def __call__(self, step):
        return self.start * max(0.0, 1.0 - step / self.steps)

    def value(self, step):
        return min(1.0, step / self.steps)


def loss_fn(out, eps):
    return (1.0 - eps) * out + eps

'''


def _number(tmp_path: Path, body: str, line_of: str) -> tuple[str, list[int]]:
    text = SCHEDULER + body
    path = tmp_path / "train.py"
    path.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if line_of in t)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        name, lines = python_number(f"{path}:{line}")
    return name, [int(x.rsplit(":", 1)[1]) for x in lines]


def test_an_object_called_in_the_argument_is_its_call_method(tmp_path: Path) -> None:
    body = "anneal = Anneal(0.3, 5)\nfor step in range(7):\n    loss = loss_fn(1.0, anneal(step))\n"
    assert _number(tmp_path, body, "return (1.0 - eps)") == ("eps", [6, 17])


def test_a_method_of_an_object_kept_on_self_is_followed(tmp_path: Path) -> None:
    body = (
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        self.sched = Anneal(1.0, 4)\n"
        "\n"
        "    def step(self, step, out):\n"
        "        w = self.sched.value(step)\n"
        "        return out * w\n"
    )
    assert _number(tmp_path, body, "return out * w") == ("w", [9, 20])


def test_a_method_of_the_class_itself_is_followed_from_another_method(tmp_path: Path) -> None:
    """`bs = self.batch_size(step)` in a method of the class that defines `batch_size`: the
    method's `return` decides the number, then the assignment; a method the class lacks is
    no number the text shows."""
    body = (
        "class Trainer:\n"
        "    def batch_size(self, step):\n"
        "        return 4 if step < 3 else 8\n"
        "\n"
        "    def fit(self):\n"
        "        for step in range(8):\n"
        "            bs = self.batch_size(step)\n"
        "            ids = torch.randint(0, 9, (bs, 5))\n"
    )
    assert _number(tmp_path, body, "ids = torch.randint") == ("bs", [17, 21])
    (tmp_path / "m").mkdir()
    missing = body.replace("self.batch_size(step)", "self.size_of(step)")
    assert _number(tmp_path / "m", missing, "ids = torch.randint") == ("", [])


def test_a_function_passed_to_a_compiler_is_called_by_the_wrapper_s_name(tmp_path: Path) -> None:
    """`step_fn = torch_xla.compile(train_step)`: the calls of `step_fn` pass `train_step`'s
    arguments; a wrapper that binds one (`functools.partial(f, x)`) would shift them."""
    body = (
        "def train_step(x, w):\n"
        "    return x * w\n"
        "\n"
        "step_fn = torch_xla.compile(train_step)\n"
        "anneal = Anneal(0.3, 5)\n"
        "for step in range(7):\n"
        "    step_fn(1.0, anneal(step))\n"
    )
    assert _number(tmp_path, body, "return x * w") == ("w", [6, 21])
    partial = body.replace("torch_xla.compile(train_step)", "functools.partial(train_step, 2.0)")
    (tmp_path / "p").mkdir()
    assert _number(tmp_path / "p", partial, "return x * w") == ("", [])


@pytest.mark.parametrize(
    "body",
    [
        # the name is bound to objects of two classes: which `__call__` runs is not in the text
        "anneal = Anneal(0.3, 5)\nanneal = Other()\nloss = loss_fn(1.0, anneal(3))\n",
        # a torch function computes the value: not a Python number
        "import torch\nloss = loss_fn(1.0, torch.rand(()))\n",
    ],
)
def test_no_number_where_the_text_does_not_say(tmp_path: Path, body: str) -> None:
    other = "class Other:\n    def __call__(self, s):\n        return s\n\n"
    assert _number(tmp_path, other + body, "return (1.0 - eps)") == ("", [])


CARRIED = (
    "def train_step(x, smooth):\n"
    "    return loss_fn(x, smooth)\n"
    "\n"
    "step = torch_xla.compile(train_step)\n"
    "smooth = 0.0\n"
    "for i in range(8):\n"
    "    loss = step(1.0, smooth)\n"
    "    if loss.item() < 1.2:\n"
    "        smooth = 0.1\n"
)


def test_a_literal_the_loop_sets_again_after_the_call_is_named_at_that_assignment(tmp_path: Path) -> None:
    """`smooth = 0.0` before the loop is the first compile's value; the loop's `smooth = 0.1`
    under its `if` reaches the next step's call: the `if`, then the assignment."""
    assert _number(tmp_path, CARRIED, "return loss_fn(x, smooth)") == ("smooth", [22, 23])


@pytest.mark.parametrize(
    ("edit", "want"),
    [
        # set unconditionally in the loop: the assignment alone
        (("    if loss.item() < 1.2:\n        smooth = 0.1\n", "    smooth = 0.1\n"), ("smooth", [22])),
        # computed on the host from the loss read (`float(...)` of a `.item()`)
        (("        smooth = 0.1\n", "        smooth = min(0.1, loss.item())\n"), ("smooth", [22, 23])),
        # never set again: the literal before the loop is all there is (nothing to name)
        (("        smooth = 0.1\n", "        pass\n"), ("", [])),
        # set again only in a function the loop defines: another scope, not this loop's value
        (("        smooth = 0.1\n", "        def f():\n            smooth = 0.1\n"), ("", [])),
        # a tensor assigned, not a Python number
        (("        smooth = 0.1\n", "        smooth = torch.tensor(0.1)\n"), ("", [])),
    ],
)
def test_the_loop_s_assignment_only_where_it_sets_a_number_of_this_loop(
    tmp_path: Path, edit: tuple[str, str], want: tuple[str, list[int]]
) -> None:
    assert _number(tmp_path, CARRIED.replace(*edit), "return loss_fn(x, smooth)") == want
