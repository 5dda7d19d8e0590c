"""Generate large, real HLO modules with torch_xla (tracing only, nothing is compiled or executed).

For each size (default 30k, 120k, 600k instructions) this writes into ``benchmarks/_data/``:

``transformer_<K>k_a.hlo``
    One training step of a tiny GPT (token + position embeddings, N pre-LayerNorm blocks of causal
    self-attention + GELU MLP, final LayerNorm, LM head, cross-entropy loss, ``loss.backward()``, plain SGD
    ``p.data.sub_(lr * p.grad)``), batch 4. The HLO is what ``torch_xla._XLAC._get_xla_tensors_hlo`` returns
    for ``[all updated parameters..., loss]`` — the long text form *with* operand shapes, no metadata.
    The widths are tiny (d_model 8, 2 heads, seq 8, vocab 16); the depth N is chosen so the module has about
    the requested number of instructions (it grows linearly with N; calibrated from depths 1 and 2).
``transformer_<K>k_b.hlo``
    The same step as a user hits it at the end of an epoch when they also log an activation: the last,
    partial batch (batch 3 instead of 4, ``DataLoader(drop_last=False)``), and the hidden state after the
    middle block is kept alive (``.detach()``-ed and stored for logging), so it becomes an extra graph output.
    Both changes alter the graph hash, i.e. each one alone already forces a recompilation.
``transformer_<K>k_a.noshapes.hlo``
    ``a`` round-tripped through XLA's own parser and printer (``jaxlib._hlo``), default print options: the
    long form *without* operand shapes, as ``--xla_dump_to`` writes it in torch_xla 2.8/2.9. XLA's printer
    also reorders the non-entry computations (post order), so the text is not a line-by-line match of ``a``.

Generation is cached: sizes whose three files exist are skipped unless ``--force``. A summary of every file
(depth, batch, instruction count, bytes, timings) is kept in ``benchmarks/_data/manifest.json``.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Tracing only; never touch an accelerator, and keep the HLO free of source metadata.
os.environ["PJRT_DEVICE"] = "CPU"
os.environ["XLA_HLO_DEBUG"] = "0"
os.environ["XLA_IR_DEBUG"] = "0"

import torch
import torch.nn.functional as F
import torch_xla
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import (
    DATA_DIR,
    DEFAULT_SIZES,
    MANIFEST,
    count_instructions,
    data_path,
    load_manifest,
    parse_sizes,
    size_target,
    write_json,
)

D_MODEL = 8
N_HEAD = 2
SEQ_LEN = 8
VOCAB = 16
LR = 0.01
BATCH_A = 4
BATCH_B = 3  # last, partial batch of the epoch (drop_last=False)
SLOW_TRACE_S = 300.0


# ---------------------------------------------------------------------------------------------------------
# Model


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, seq_len: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("causal", torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (
            z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in self.qkv(x).split(d, 2)
        )
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.n_head))
        att = att.masked_fill(~self.causal[:t, :t], float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d_model: int, n_head: int, seq_len: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, seq_len)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, depth: int) -> None:
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(SEQ_LEN, D_MODEL)
        self.blocks = nn.ModuleList(Block(D_MODEL, N_HEAD, SEQ_LEN) for _ in range(depth))
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, idx: torch.Tensor, tap: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Return the logits and, if ``tap`` is given, the hidden state after block ``tap``."""
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        tapped = None
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i == tap:
                tapped = x.detach()
        return self.head(self.ln_f(x)), tapped


# ---------------------------------------------------------------------------------------------------------
# Tracing


@dataclass
class Traced:
    text: str
    depth: int
    batch: int
    keep_activation: bool
    trace_s: float  # Python forward + backward + SGD update (lazy tracing)
    lower_s: float  # _get_xla_tensors_hlo: lowering the pending graph to HLO text


def trace_step(depth: int, batch: int, keep_activation: bool) -> Traced:
    """Trace one training step of a fresh model and return its HLO text, without executing it."""
    device = torch_xla.device()
    torch.manual_seed(0)
    model = TinyGPT(depth).to(device)  # parameters become device data (a transfer, not a computation)
    generator = torch.Generator().manual_seed(1)
    idx = torch.randint(0, VOCAB, (batch, SEQ_LEN), generator=generator).to(device)
    targets = torch.randint(0, VOCAB, (batch, SEQ_LEN), generator=generator).to(device)

    start = time.perf_counter()
    logits, tapped = model(idx, tap=depth // 2 if keep_activation else None)
    loss = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
    loss.backward()
    params = list(model.parameters())
    for p in params:
        p.data.sub_(LR * p.grad)
    outputs = [*params, loss] + ([tapped] if tapped is not None else [])
    traced = time.perf_counter()
    text = torch_xla._XLAC._get_xla_tensors_hlo(outputs)
    lowered = time.perf_counter()
    return Traced(text, depth, batch, keep_activation, traced - start, lowered - traced)


def calibrate() -> tuple[int, int]:
    """Instructions of a depth-1 module and per extra block (the count is linear in depth)."""
    one = count_instructions(trace_step(1, BATCH_A, False).text)
    two = count_instructions(trace_step(2, BATCH_A, False).text)
    return one, two - one


def depth_for(target: int, base: int, per_block: int) -> int:
    return max(1, round((target - base) / per_block) + 1)


# ---------------------------------------------------------------------------------------------------------
# Files


def noshapes_text(text: str) -> tuple[str, float]:
    """Round-trip through XLA's parser/printer with default options (no operand shapes)."""
    from jaxlib import _hlo

    start = time.perf_counter()
    options = _hlo.HloPrintOptions()
    options.print_operand_shape = False
    out = _hlo.hlo_module_from_text(text).to_string(options)
    return out, time.perf_counter() - start


def write_module(path: Path, text: str, extra: dict[str, Any]) -> dict[str, Any]:
    start = time.perf_counter()
    path.write_text(text)
    entry = {
        "file": path.name,
        "instructions": count_instructions(text),
        "bytes": len(text.encode()),
        **extra,
        "write_s": time.perf_counter() - start,
    }
    print(
        f"  {path.name:34} {entry['instructions']:>9,} instr {entry['bytes'] / 1e6:8.1f} MB  "
        + "  ".join(f"{k}={v:.2f}s" for k, v in entry.items() if k.endswith("_s")),
        flush=True,
    )
    return entry


def traced_info(traced: Traced) -> dict[str, Any]:
    info = asdict(traced)
    del info["text"]
    return info


def generate_size(size: str, depth: int) -> list[dict[str, Any]]:
    entries = []
    for variant, batch, keep in (("a", BATCH_A, False), ("b", BATCH_B, True)):
        traced = trace_step(depth, batch, keep)
        if traced.trace_s + traced.lower_s > SLOW_TRACE_S:
            print(f"  warning: tracing took {traced.trace_s + traced.lower_s:.0f} s (> {SLOW_TRACE_S:.0f} s)")
        entries.append(write_module(data_path(size, variant), traced.text, traced_info(traced)))
        if variant == "a":
            text, roundtrip_s = noshapes_text(traced.text)
            info = {k: v for k, v in traced_info(traced).items() if not k.endswith("_s")}
            info["roundtrip_s"] = roundtrip_s
            entries.append(write_module(data_path(size, "a.noshapes"), text, info))
        del traced
        gc.collect()
    return entries


def is_cached(size: str) -> bool:
    return all(data_path(size, v).exists() for v in ("a", "b", "a.noshapes"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=parse_sizes, default=list(DEFAULT_SIZES), help="e.g. 30k,120k,600k")
    parser.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    args = parser.parse_args(argv)

    DATA_DIR.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest()
    todo = [s for s in args.sizes if args.force or not is_cached(s)]
    for size in args.sizes:
        if size not in todo:
            cached = [e for e in manifest.get(size, {}).get("files", [])]
            desc = (
                ", ".join(f"{e['file']} {e['instructions']:,} instr" for e in cached) or "no manifest entry"
            )
            print(f"{size}: cached ({desc}); use --force to regenerate")
    if not todo:
        return 0

    start = time.perf_counter()
    base, per_block = calibrate()
    took = time.perf_counter() - start
    print(f"calibration: depth 1 = {base:,} instructions, +{per_block:,} per block ({took:.1f} s)")
    for size in todo:
        depth = depth_for(size_target(size), base, per_block)
        print(f"{size}: depth {depth} (~{base + (depth - 1) * per_block:,} instructions)", flush=True)
        size_start = time.perf_counter()
        files = generate_size(size, depth)
        manifest[size] = {"depth": depth, "files": files, "total_s": time.perf_counter() - size_start}
        print(f"{size}: done in {manifest[size]['total_s']:.1f} s", flush=True)
        write_json(MANIFEST, manifest)
    print(f"generation took {time.perf_counter() - start:.1f} s in total; manifest: {MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
