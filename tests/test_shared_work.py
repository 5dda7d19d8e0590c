"""Work an added output shares with the others, compiled another way (recognizers/shared_work.py):
real programs compiled by JAX here, a MoE layer that also returns its load-balancing loss (with a
second reader of the routing indices XLA keeps the top_k as a sort), and the same beside a real
change, which must stay named."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from xlagraph.diff import diff_files

jax = pytest.importorskip("jax")
jnp = jax.numpy

_D, _E = 32, 4


def _moe(p: dict[str, Any], x: Any, aux: bool, k: int = 2, inner: float = 1.0, outer: float = 1.0) -> Any:
    logits = x @ p["router"]
    vals, idx = jax.lax.top_k(logits, k)
    combine = (jax.nn.softmax(vals * inner, -1)[..., None] * jax.nn.one_hot(idx, _E)).sum(1)
    h = jax.nn.gelu(jnp.einsum("td,edh->teh", x, p["w1"]))
    y = jnp.einsum("te,ted->td", combine, jnp.einsum("teh,ehd->ted", h, p["w2"])) * outer
    if not aux:
        return y
    load = jax.nn.one_hot(idx[:, 0], _E).mean(0)
    return y, _E * (load * jax.nn.softmax(logits, -1).mean(0)).sum()


@cache
def _compiled(tmp: Path, name: str, **kw: Any) -> str:
    f32 = jnp.float32
    spec = {
        "router": jax.ShapeDtypeStruct((_D, _E), f32),
        "w1": jax.ShapeDtypeStruct((_E, _D, 64), f32),
        "w2": jax.ShapeDtypeStruct((_E, 64, _D), f32),
    }
    x = jax.ShapeDtypeStruct((16, _D), f32)
    text = jax.jit(lambda p, x: _moe(p, x, **kw)).lower(spec, x).compile().as_text()
    path = tmp / f"{name}.hlo"
    path.write_text(text)
    return str(path)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared_work")


def _kinds(tmp: Path, **kw: Any) -> list[str]:
    a = _compiled(tmp, "a", aux=False)
    b = _compiled(tmp, "b_" + "_".join(f"{k}{v}" for k, v in sorted(kw.items())), aux=True, **kw)
    return [c.kind.value for c in diff_files(a, b).causes]


def test_added_loss_alone_is_one_output_added(tmp: Path) -> None:
    assert _kinds(tmp) == ["output_added"]


def test_removed_loss_alone_is_one_output_removed(tmp: Path) -> None:
    a, b = _compiled(tmp, "a", aux=False), _compiled(tmp, "b_", aux=True)
    assert [c.kind.value for c in diff_files(b, a).causes] == ["output_removed"]


@pytest.mark.parametrize("change", [{"k": 3}, {"inner": 2.0}, {"outer": 2.0}])
def test_a_real_change_beside_it_stays_named(tmp: Path, change: dict[str, Any]) -> None:
    """A top_k of another k, a scale inside the routing or on the output both graphs return: not
    XLA's staging of the same work, so not folded into the added output."""
    kinds = _kinds(tmp, **change)
    assert "output_added" in kinds and len(kinds) > 1, kinds
