"""The distribution users get: every subpackage listed, `pip install .` into a fresh virtual
environment (no system site packages) from anywhere works, and the core needs no torch.

The install test reaches the package index (build requirements and dependencies), as any user's
`pip install` does, and builds the Rust reader (cargo; its target folder is rust/target).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import tomllib

from tests.conftest import ROOT


def test_every_subpackage_is_in_the_distribution() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        "xlagraph." + ".".join(p.parent.relative_to(ROOT / "xlagraph").parts)
        for p in (ROOT / "xlagraph").rglob("__init__.py")
        if p.parent != ROOT / "xlagraph"
    }
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"


def _fresh_venv(path: Path) -> Path:
    """A virtual environment with no site packages but its own, from the base interpreter.

    Inside a venv `sys.executable -m venv` builds on the base Python, which may have nothing
    (no setuptools, no wheel): the install below must not rely on it. pip's build isolation
    fetches the build requirements (setuptools, wheel, setuptools-rust) and the dependencies
    from the package index, as a user's `pip install` does.
    """
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / "bin"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    # The Rust extension is compiled once per checkout, not once per test run.
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "rust" / "target"))
    return env


def test_pip_install_from_another_directory_gives_a_working_command(tmp_path: Path) -> None:
    bin_dir = _fresh_venv(tmp_path / "venv")
    install = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", str(ROOT)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    site = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import xlagraph, os; print(os.path.dirname(xlagraph.__file__))",
        ],
        check=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
    ).stdout.strip()
    assert str(tmp_path / "venv") in site, site  # the installed copy, not the checkout
    installed = Path(site)
    assert (installed / "cli" / "main.py").exists()
    assert (installed / "templates" / "diff.html").exists()
    assert not (installed.parent / "cli").exists(), "no top-level `cli` module in site-packages"
    pair = ROOT / "fixtures" / "jax" / "pairs" / "constant_change"
    run = subprocess.run(
        [str(bin_dir / "xlagraph"), "diff", str(pair / "a.hlo"), str(pair / "b.hlo"), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert run.returncode == 1, run.stderr
    assert '"constant_value"' in run.stdout
    # The installed core has no torch, jax or test tools: only what the package declares.
    bare = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import importlib.util as u; print([m for m in "
            "('torch', 'torch_xla', 'jax', 'pytest') if u.find_spec(m)])",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=_env(),
    ).stdout.strip()
    assert bare == "[]", bare


def test_core_runs_without_torch() -> None:
    code = (
        "import sys, builtins\n"
        "real = builtins.__import__\n"
        "def guard(name, *a, **k):\n"
        "    if name.split('.')[0] in ('torch', 'torch_xla', 'jax', 'jaxlib'):\n"
        "        raise ImportError('no ' + name)\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = guard\n"
        "from xlagraph.diff import diff_files\n"
        "from xlagraph.graphs import list_graphs\n"
        "from xlagraph.render.html_diff import render_diff_html\n"
        f"r = diff_files({str(ROOT / 'fixtures/jax/pairs/shape_change/a.hlo')!r}, "
        f"{str(ROOT / 'fixtures/jax/pairs/shape_change/b.hlo')!r})\n"
        "render_diff_html(r)\n"
        "print(r.verdict)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "different"
