"""Where a value whose guard failed was computed (`diagnose/value_origin.py`), read from source
text: an argument's last assignment before the call, a global's assignment in a loop, an
attribute's assignment. Nothing where the text does not say."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.value_origin import origin_of

SCRIPT = '''import torch
SCALE = 4.0
WARM = 3


@torch.compile(
    backend="openxla")
def step_fn(params, grads,
            lr, *, clip=1.0):
    return [p - lr * g * SCALE for p, g in zip(params, grads)]


class Net(torch.nn.Module):
    def forward(self, x):
        return x * self.gain


net = Net()
for step in range(8):
    batch = make_batch(step)
    x, y = batch
    lr = 0.1 * min(1.0, (step + 1) / WARM)
    clip_at = 2.0
    out = step_fn(params, grads, lr, clip=clip_at)
    out = step_fn(params, grads, 0.5)
    net.gain = 1.0 + step
    if step == 4:
        SCALE = SCALE / 2
        net.eval()
    y = net(x)
'''


@pytest.fixture
def sources(tmp_path: Path):
    (tmp_path / "train.py").write_text(SCRIPT)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        yield "train.py"


def test_an_argument_is_traced_to_its_assignment_before_the_call(sources: str) -> None:
    at = lambda n: f"{sources}:{n}"  # noqa: E731
    assert origin_of("python_scalar", "lr", at(6), at(24)) == at(22)  # a decorated def, two lines
    assert origin_of("python_scalar", "clip", at(6), at(24)) == at(23)  # a keyword
    assert origin_of("tensor_size", "x", at(14), at(30)) == at(21)  # a method: self skipped; unpacked


def test_a_literal_or_unknown_argument_has_no_origin(sources: str) -> None:
    at = lambda n: f"{sources}:{n}"  # noqa: E731
    assert origin_of("python_scalar", "lr", at(6), at(25)) == ""  # 0.5: a literal
    assert origin_of("python_scalar", "nope", at(6), at(24)) == ""
    assert origin_of("python_scalar", "lr", at(6), "elsewhere.py:3") == ""


def test_a_global_is_traced_to_its_assignment_in_the_loop_not_its_definition(sources: str) -> None:
    assert origin_of("global_value", "SCALE", f"{sources}:6", f"{sources}:24") == f"{sources}:28"


def test_attributes_and_train_eval(sources: str) -> None:
    assert origin_of("module_attribute", "self.gain", f"{sources}:14", f"{sources}:30") == f"{sources}:26"
    assert origin_of("train_eval", "self.training", f"{sources}:14", f"{sources}:30") == f"{sources}:29"


BUILT = '''import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.export = False

    def forward(self, x):
        return (x, x * 2) if self.export else (x, None)


class Monitor:
    def before_step(self, model, step):
        model.export = step in (3,)


net, monitor = Net(), Monitor()
for step in range(8):
    monitor.before_step(net, step)
    y = net(x)
'''


def test_an_attribute_set_in_init_is_the_first_value_not_the_change(tmp_path: Path) -> None:
    """`self.export = False` in `__init__` made the value the first compile assumed; the change
    is the assignment a callback makes mid-run (held_out_18's openxla monitor, flag_attr)."""
    (tmp_path / "train.py").write_text(BUILT)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert origin_of("module_attribute", "self.export", "train.py:9", "train.py:21") == "train.py:15"


def test_the_real_flag_flip_is_cited_where_the_loop_sets_it() -> None:
    """The compiled flag_attr capture (torch_xla 2.9): `made` names `model.use_residual = True`
    in the loop, not `self.use_residual = False` in `__init__`."""
    from xlagraph.api import report

    capture = Path(__file__).resolve().parents[1] / "fixtures/torch_xla/compiled/captures/flag_attr/capture"
    text = report(str(capture)).to_text()
    made = [line for line in text.splitlines() if line.strip().startswith("made")]
    assert made and all("model.use_residual = True" in line for line in made)


FILTERED = '''import torch


def labelled_rows(ids, labels):
    keep = labels >= 0
    return ids[keep], labels[keep]


compiled = torch.compile(model, backend="openxla")
for ids, labels in batches:
    ids, labels = labelled_rows(ids, labels)
    ids, labels = ids.to(device), labels.to(device)
    loss = F.cross_entropy(compiled(ids), labels)
'''


def test_a_tensor_argument_is_traced_past_its_move_into_the_helper_that_sizes_it(tmp_path: Path) -> None:
    """The compiled call sits inside the loss's call; the argument was moved to the device (:12)
    after a helper of the file filtered its rows: the helper's `return` (:6) made its size."""
    (tmp_path / "train.py").write_text(FILTERED)
    at = lambda n: f"train.py:{n}"  # noqa: E731
    (tmp_path / "model.py").write_text("class M:\n    def forward(self, ids):\n        return ids\n")
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert origin_of("tensor_size", "ids", "model.py:2", at(13)) == at(6)


# Hand-written (labelled): the shapes of the openxla captures h26_ner_openxla_mask_when_padded and
# h25_fraud_openxla_balanced_sampler, cut to what the origin reads.
LOADERS = '''import torch


def collate(rows):
    ids = torch.stack(rows)
    padded = any(len(r) < 10 for r in rows)
    mask = (ids != 0).float() if padded else None
    return ids, mask


def batches():
    for b in range(9):
        yield collate(make_rows(b))


class Sampler:
    def __init__(self, x):
        self.x = x

    def batch(self, i, k=4):
        pos = self.x[i * k:(i + 1) * k]
        neg = self.x[:k]
        x = torch.cat([pos, neg])
        return x, x.sum(1)


def main(model):
    compiled = torch.compile(model, backend="openxla")
    for step, (ids, mask) in enumerate(batches()):
        if mask is not None:
            mask = mask.to("xla")
        out = compiled(ids, mask)
    sampler = Sampler(torch.randn(14, 3))
    for step in range(8):
        xb, yb = sampler.batch(step % 4)
        xb = xb.to("xla")
        loss = torch.nn.functional.cross_entropy(compiled(xb), yb)


def forward(ids, mask=None):
    return ids if mask is None else ids * mask


def epochs(model, data):
    fwd = torch.compile(model, backend="openxla")
    loader = DataLoader(data, batch_size=8)
    for x, y in loader:
        x = x.to("xla")
        out = fwd(x)
'''


@pytest.fixture
def loaders(tmp_path: Path):
    (tmp_path / "loop.py").write_text(LOADERS)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        yield "loop.py"


def test_a_none_is_traced_past_its_move_into_the_collate_a_generator_yields(loaders: str) -> None:
    at = lambda n: f"{loaders}:{n}"  # noqa: E731
    # `mask = mask.to(...)` under `if mask is not None:` keeps a None-ness the collate decided
    assert origin_of("optional_argument", "mask", at(40), at(32)) == at(7)


def test_a_compiled_callables_positional_argument_is_traced_to_the_rows_a_method_slices(loaders: str) -> None:
    at = lambda n: f"{loaders}:{n}"  # noqa: E731
    # `args[0]` of `compiled(xb)` inside the loss call: `sampler.batch` cats a slice that decides the rows
    assert origin_of("tensor_size", "args[0]", "torch/nn/modules/container.py:1", at(37)) == at(21)


def test_a_loop_variable_over_a_loader_is_traced_to_the_loaders_line(loaders: str) -> None:
    at = lambda n: f"{loaders}:{n}"  # noqa: E731
    # the batch size is the loader's (`DataLoader(..., batch_size=8)`), not the loop header's
    assert origin_of("tensor_size", "args[0]", "torch/nn/modules/container.py:1", at(49)) == at(46)


SET_BEFORE = '''import torch


def main():
    net = Net().to(dev).train()
    model = torch.compile(net)
    for epoch in range(3):
        if epoch == 2:
            for m in net.drops:
                m.eval()  # the switch
        for _ in range(2):
            loss = model(x).sum()
            loss.backward()
    net.eval()
'''


def test_train_eval_is_the_mode_set_in_the_loop_not_the_one_before_it(tmp_path: Path) -> None:
    """`.train()` before the loop set the mode the first compile assumed; the recompile follows
    the `m.eval()` the loop reaches before the call (fixtures/torch_xla/mode_switch/drop_path_off_train.py
    is the real capture)."""
    (tmp_path / "train.py").write_text(SET_BEFORE)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert origin_of("train_eval", "self.training", "train.py:1", "train.py:12") == "train.py:10"
        # a call outside any loop that sets a mode: the file's first indented one, as before
        assert origin_of("train_eval", "self.training", "train.py:1", "train.py:14") == "train.py:5"
