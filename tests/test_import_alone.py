"""Every library module can be the first one imported.

`tests/test_layering.py` leaves out the edges of a package `__init__` that Python runs on the way
to a submodule, so a knot through one (a diagnose module reading a recognizer helper, whose package
`__init__` imports every recognizer, one of which imports that diagnose module back) only shows when
that module is imported before the others: a user's `import xlagraph.diagnose.value_origin` failed.
One child process imports each module with no xlagraph module loaded before it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "xlagraph" or m.startswith("xlagraph.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ": " + traceback.format_exc().strip().splitlines()[-1])
print("\n".join(failed))
"""


def _modules() -> list[str]:
    out = []
    for path in sorted((ROOT / "xlagraph").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__main__" or "cli" in parts:
            continue
        out.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def test_every_module_imports_first() -> None:
    names = _modules()
    assert len(names) > 150
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, *names], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", "modules that fail when imported first:\n" + done.stdout
