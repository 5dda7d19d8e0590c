"""The user's-code reads of `_user_flow` and `loop_order`'s dict moves, on small scripts read
from disk (no capture): a traced loop's trip count, tensors kept in or made from lists."""

from __future__ import annotations

from pathlib import Path

from xlagraph.diagnose.recognizers._loop_order import loop_order
from xlagraph.diagnose.recognizers._user_flow import kept_in_lists, list_tensors, trip_count


def _script(tmp_path: Path, text: str) -> str:
    path = tmp_path / "train.py"
    path.write_text(text)
    return str(path)


def test_a_loop_over_lists_the_caller_builds_is_counted_where_the_number_is_made(tmp_path: Path) -> None:
    s = _script(
        tmp_path,
        "def count(epoch):\n"  # 1
        "    return 2 if epoch == 0 else 4\n"  # 2
        "\n"  # 3
        "def step(xs, ys):\n"  # 4
        "    for x, y in zip(xs, ys):\n"  # 5
        "        loss = f(x, y)\n"  # 6
        "    for p in params:\n"  # 7
        "        p.grad = None\n"  # 8
        "\n"  # 9
        "step_fn = compile(step)\n"  # 10
        "for epoch in range(2):\n"  # 11
        "    k = count(epoch)\n"  # 12
        "    xs = [make() for _ in range(k)]\n"  # 13
        "    step_fn(xs, xs)\n"  # 14
        "    for _ in range(k):\n"  # 15
        "        g = h()\n",  # 16
    )
    assert trip_count(f"{s}:6") == [f"{s}:{n}" for n in (2, 12, 13, 14, 5)]
    assert trip_count(f"{s}:8") == []  # a loop over parameters: no Python number counts it
    assert trip_count(f"{s}:16") == [f"{s}:{n}" for n in (2, 12, 15)]
    assert trip_count(f"{s}:16", syncs=(f"{s}:16",)) == []  # the loop that runs the steps


def test_a_loop_over_a_dict_is_ordered_by_the_pop_and_reinsert_before_it(tmp_path: Path) -> None:
    s = _script(
        tmp_path,
        "for step in range(8):\n"  # 1
        "    if step == 4:\n"  # 2
        "        fn, _ = regs.pop('l2')\n"  # 3
        "        regs['l2'] = (fn, 5e-3)\n"  # 4
        "    loss = 0\n"  # 5
        "    for fn, w in regs.values():\n"  # 6
        "        loss = loss + w * fn()\n"  # 7
        "    sync()\n",  # 8
    )
    assert loop_order(f"{s}:7", (f"{s}:8",)) == [f"{s}:{n}" for n in (3, 4, 2, 6)]


def test_an_append_to_a_list_that_outlives_the_function_keeps_a_tensor(tmp_path: Path) -> None:
    s = _script(
        tmp_path,
        "def forward(x):\n"  # 1
        "    features = enc(x)\n"  # 2
        "    outs = []\n"  # 3
        "    outs.append(features)\n"  # 4
        "    return features\n"  # 5
        "\n"  # 6
        "def step(x, keep=None):\n"  # 7
        "    features = forward(x)\n"  # 8
        "    if keep is not None:\n"  # 9
        "        keep.append(features.detach())\n"  # 10
        "    log.append(features.item())\n",  # 11
    )
    # `outs` is the function's own list; `.item()` keeps a Python number, not the tensor
    assert kept_in_lists(f"{s}:2") == [f"{s}:10"]


def test_a_tensor_made_from_a_python_list_is_found_through_the_helper_that_makes_it(tmp_path: Path) -> None:
    s = _script(
        tmp_path,
        "def weights(counts):\n"  # 1
        "    inv = [1.0 / c for c in counts]\n"  # 2
        "    return torch.tensor([w / sum(inv) for w in inv])\n"  # 3
        "\n"  # 4
        "def step(x, w):\n"  # 5
        "    logits = model(x)[:, : w.shape[0]]\n"  # 6
        "    return loss(logits, w)\n"  # 7
        "\n"  # 8
        "step_fn = compile(step)\n"  # 9
        "step_fn(batch, weights(counts))\n"  # 10
        "step_fn(batch, other)\n",  # 11
    )
    assert list_tensors(f"{s}:10") == [f"{s}:3", f"{s}:6"]
    assert list_tensors(f"{s}:11") == []
