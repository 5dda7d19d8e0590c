"""The distribution users get: every subpackage listed, `pip install .` from anywhere works, and
the core needs no torch."""

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


def test_pip_install_from_another_directory_gives_a_working_command(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    # System site-packages provide the dependencies; the project itself is installed for real.
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    pip = venv / "bin" / "pip"
    subprocess.run(
        [str(pip), "install", "--quiet", "--no-deps", "--no-build-isolation", str(ROOT)],
        check=True,
        cwd=tmp_path,
    )
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import xlagraph, os; print(os.path.dirname(xlagraph.__file__))",
        ],
        check=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert str(venv) in site, site  # the installed copy, not the checkout
    installed = Path(site)
    assert (installed / "cli" / "main.py").exists()
    assert (installed / "templates" / "diff.html").exists()
    assert not (installed.parent / "cli").exists(), "no top-level `cli` module in site-packages"
    pair = ROOT / "fixtures" / "jax" / "pairs" / "constant_change"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [str(venv / "bin" / "xlagraph"), "diff", str(pair / "a.hlo"), str(pair / "b.hlo"), "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.returncode == 1, run.stderr
    assert '"constant_value"' in run.stdout


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
        "from xlagraph.render.html import render_diff_html\n"
        f"r = diff_files({str(ROOT / 'fixtures/jax/pairs/shape_change/a.hlo')!r}, "
        f"{str(ROOT / 'fixtures/jax/pairs/shape_change/b.hlo')!r})\n"
        "render_diff_html(r)\n"
        "print(r.verdict)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "different"
