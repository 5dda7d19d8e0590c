"""The two source rules behind issue 37's old misses, on small hand-written scripts (labelled: source
text only, no graph): lists a loop fills until it stops (`_filled_lists.filled_until`), and the
statements of a forward hook that keep its output (`hook_keep`)."""

from __future__ import annotations

import ast
from pathlib import Path

from xlagraph.diagnose.recognizers import hook_keep
from xlagraph.diagnose.recognizers._filled_lists import filled_until

_ROLLOUT = '''import torch


def rollout(env):
    xs, rs = [], []
    done = False
    while not done:
        xs.append(env.step())
        rs.append(1.0)
        done = env.done()
    return xs, rs


def train(env, steps):
    history = []
    while len(history) < steps:
        history.append(env.step())
        h = torch.tensor(history)
    for _ in range(steps):
        xs, rs = rollout(env)
        batch = torch.tensor(xs)
        ret = torch.tensor(rs)
        other = torch.tensor([1, 2])
'''


def test_tensors_from_lists_a_loop_fills_until_it_stops(tmp_path: Path) -> None:
    script = tmp_path / "rollout.py"
    script.write_text(_ROLLOUT)
    at = f"{script}:"
    # Both tensors the episode's lists make, then the `while` that decides their length.
    assert filled_until(f"{at}22") == (f"{at}21", f"{at}22", f"{at}7")
    # A list grown inside the loop that makes the tensor is growing state, not an episode's.
    assert filled_until(f"{at}18") == ()
    # A tensor of fixed Python values reads no such list.
    assert filled_until(f"{at}23") == ()


_TOP_LEVEL = '''import torch

for episode in range(3):
    states = []
    done = False
    while not done:
        states.append(1.0)
        done = True
    obs = torch.tensor(states)
'''


def test_the_top_level_s_own_loop_fills_the_lists_of_a_script_without_functions(tmp_path: Path) -> None:
    script = tmp_path / "top.py"
    script.write_text(_TOP_LEVEL)
    assert filled_until(f"{script}:9") == (f"{script}:9", f"{script}:6")


_HOOKS = '''class Logger:
    def __init__(self, modules):
        self.kept = {}
        self.active = False
        for name, m in modules.items():
            m.register_forward_hook(self._make(name))

    def _make(self, name):
        def hook(module, inputs, output):
            print(name)
            if self.active:
                self.kept[name] = output.detach()

        return hook
'''


def test_a_forward_hook_keeps_its_output_under_an_if(tmp_path: Path) -> None:
    tree = ast.parse(_HOOKS)
    (hook,) = hook_keep._hooks(tree)
    assert hook_keep._keeps("h.py", hook) == ["h.py:12", "h.py:11"]
