"""Look-alike loss cones whose inputs must follow their outputs (issue 37, held_out_40's miss).

held_out_40's openxla backward of three cross-entropy losses, two of them look-alike cones (each
its own logits, both scaled by one product `s * w` written twice), had its two updates swapped
and its inputs permuted: the outputs were paired right and the cones' own inputs crossed, a
mapping no symmetry of the module allows. Here the same shape is built otherwise, by torch_xla
2.9 itself: three losses' gradients of fresh logits (the forward's log-softmax in the graph too),
the look-alike pair cross-entropies of other class counts, with label smoothing (larger cones),
or mean squared errors (smaller ones); each module under a dozen seeds of
`swap_updates+permute_params`, judged as the metamorphic suite judges.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache

import pytest

from tests.metamorphic.check import dead_inputs, judge, output_values
from tests.metamorphic.transforms import NotApplicable, apply, normalize
from xlagraph.diff import diff_modules
from xlagraph.parse.hlo import parse_hlo

# (classes, label smoothing of the look-alike pair, their loss)
VARIANTS = ((4, 0.0, "ce"), (6, 0.0, "ce"), (4, 0.1, "ce"), (10, 0.2, "ce"), (4, 0.0, "mse"))
SEEDS = range(12)
NAMES = ("swap_updates", "permute_params")

# Runs in its own interpreter: torch_xla stays out of the test process.
_CAPTURE = """
import json, sys
import torch, torch.nn.functional as F
import torch_xla

dev = torch_xla.device()
out = []
for classes, smoothing, kind in json.loads(sys.argv[1]):
    torch.manual_seed(0)
    logits = [torch.randn(8, classes).to(dev).requires_grad_() for _ in range(3)]
    target = torch.randint(0, classes, (8,)).to(dev)
    s, w = torch.tensor(0.5).to(dev), torch.tensor(0.3).to(dev)
    loss = F.cross_entropy(logits[0], target) * s
    for x in logits[1:]:  # the look-alike pair, each scaled by `s * w` written again
        if kind == "mse":
            part = F.mse_loss(x, F.one_hot(target, classes).float())
        else:
            part = F.cross_entropy(x, target, label_smoothing=smoothing)
        loss = loss + part * (s * w)
    loss.backward()
    out.append(torch_xla._XLAC._get_xla_tensors_hlo([x.grad for x in logits]))
print(json.dumps(out))
"""


@cache
def _modules() -> tuple[str, ...]:
    proc = subprocess.run(
        [sys.executable, "-c", _CAPTURE, json.dumps(VARIANTS)], capture_output=True, text=True, check=True
    )
    return tuple(normalize(t) for t in json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("variant", range(len(VARIANTS)), ids=["-".join(map(str, v)) for v in VARIANTS])
def test_look_alike_losses_inputs_follow_their_outputs(variant: int) -> None:
    text = _modules()[variant]
    applied, failed = 0, {}  # seed: the judge's problems
    for seed in SEEDS:
        try:
            new, exp = apply(text, NAMES, seed)
        except NotApplicable:
            continue
        applied += 1
        result = diff_modules(parse_hlo(text, "a.hlo"), parse_hlo(new, "b.hlo"))
        problems = judge(result, exp, output_values(text), dead_inputs(new), text)
        if problems:
            failed[seed] = problems
    assert applied >= len(SEEDS) // 2, applied
    assert not failed, failed
