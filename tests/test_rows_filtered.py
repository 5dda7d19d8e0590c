"""`value_origin.rows_filtered`: a batch whose rows a mask keeps on the host (`x[keep]` with
`keep = labels >= 0`) changes size with the data, not the loader; the fix is to keep every row
and mask the loss (`parameter_shape.filtered_batch`), not `drop_last`. Hand-written source text
(the rule reads only source); the real captures: held_out_24's textcnn (openxla, the tensor's
line from dynamo's failed guard) and fixtures/torch_xla/fixes/parameter_shape.filtered_batch
(lazy mode, run by tests/test_fixes_work.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.corpus_reports import capture_report
from xlagraph.diagnose.frames import SourceText, reading_sources
from xlagraph.diagnose.value_origin import rows_filtered

LOOP = """\
import torch


def labelled(x, y):
    keep = y >= 0
    return x[keep], y[keep]


def train(model, batches, dev):
    for x, y in batches:
        xb, yb = labelled(x, y)
        loss = model(xb.to(dev), yb.to(dev))
"""


def _filtered(tmp_path: Path, text: str, line_of: str) -> int:
    path = tmp_path / "train.py"
    path.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if line_of in t)
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        found = rows_filtered(f"{path}:{line}")
    return int(found.rsplit(":", 1)[1]) if found else 0


def test_the_use_of_a_batch_is_followed_to_the_helper_that_filters_it(tmp_path: Path) -> None:
    assert _filtered(tmp_path, LOOP, "loss = model(") == 6


@pytest.mark.parametrize(
    ("edit", "want"),
    [
        # the comparison inside the brackets
        (("    keep = y >= 0\n    return x[keep], y[keep]\n", "    return x[y != -1], y[y != -1]\n"), 5),
        # a combined mask (`&`, `~`)
        (("keep = y >= 0", "keep = ~(y < 0) & (y < 9)"), 6),
        # rows picked by position: a slice or an index list is no mask of the data
        (("    return x[keep], y[keep]\n", "    return x[:keep], y[:keep]\n"), 0),
        (("keep = y >= 0", "keep = [0, 1, 2]"), 0),
        # the batch used as the loader gives it
        (("        xb, yb = labelled(x, y)\n", "        xb, yb = x, y\n"), 0),
    ],
)
def test_only_a_mask_of_the_data_filters_rows(tmp_path: Path, edit: tuple[str, str], want: int) -> None:
    assert _filtered(tmp_path, LOOP.replace(*edit), "loss = model(") == want


def test_a_row_filter_under_openxla_gets_the_mask_fix_not_drop_last() -> None:
    report = capture_report(
        FIXTURES / "torch_xla" / "corpus" / "captures" / "h24_textcnn_openxla_unlabeled_rows_dropped"
    )
    fixes = {c.fix_id for r in report.recompiles if not r.expected for c in r.causes if not c.info}
    assert fixes == {"parameter_shape.filtered_batch"}, fixes


COLLATED = """\
import torch
from torch.utils.data import DataLoader


def labelled_only(samples):
    y = torch.stack([s[1] for s in samples])
    keep = y >= 0
    return torch.stack([s[0] for s in samples])[keep], y[keep]


def train(model, data, dev):
    loader = DataLoader(data, batch_size=8, collate_fn=labelled_only)
    for i, (x, y) in enumerate(loader):
        loss = model(x.to(dev), y.to(dev))
"""


@pytest.mark.parametrize(("edit", "want"), [(("", ""), 8), (("[keep], y[keep]", ", y"), 0)])
def test_a_loader_s_collate_fn_that_filters_rows_is_found(
    tmp_path: Path, edit: tuple[str, str], want: int
) -> None:
    """The loop's batch comes from a DataLoader whose `collate_fn` (a function of the file)
    returns the masked rows: every batch is made there, so that return is the filter's line;
    a collate that keeps every row filters nothing."""
    assert _filtered(tmp_path, COLLATED.replace(*edit) if edit[0] else COLLATED, "loss = model(") == want
