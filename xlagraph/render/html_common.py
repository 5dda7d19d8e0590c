"""What both HTML pages share: element ids, the status marks, the Jinja2 environment, the inlined
stylesheet and script, and JSON made safe for a `<script type="application/json">` block.

Reports as data: each page is one Jinja2 template in `templates/` filled from one context
dataclass (`DiffPage`, `ReportPage`); the stylesheet and script are package files inlined into
the page, so it opens offline from a bug-report attachment and fetches nothing. Every string from a
dump goes through autoescaping; the data the script needs is JSON in a
`<script type="application/json">` block with `<`, `>` and `&` escaped. These functions return
text; only the CLI writes files.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any

from jinja2 import Environment, FunctionLoader, StrictUndefined
from markupsafe import Markup

from xlagraph.source_paths import short_location, short_locations_in

__all__ = [
    "CONTEXT_LINES",
    "STATUS_MARKS",
    "STATUS_TITLES",
    "asset",
    "element_id",
    "environment",
    "page_data",
    "script_json",
]

CONTEXT_LINES = 3

STATUS_TITLES = {
    "cause": "named by a cause",
    "only-A": "only in A: the matcher found no counterpart",
    "only-B": "only in B: the matcher found no counterpart",
    "changed": "changed, as a consequence of a cause (no cause of its own)",
    "dead": "dead code: never reaches a result, ignored",
    "same": "",
}
STATUS_MARKS = {"cause": "●", "only-A": "−", "only-B": "+", "changed": "~", "dead": "†", "same": ""}

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def element_id(*parts: str, prefix: str = "") -> str:
    """`prefix` + the parts joined by `-`, each with every character but `A-Za-z0-9_.-` made `_`.

    >>> element_id("L", "main.1", "tanh.1"), element_id("R", "%c", "a b", prefix="d2-")
    ('L-main.1-tanh.1', 'd2-R-_c-a_b')
    """
    return prefix + "-".join(_ID_UNSAFE.sub("_", p) for p in parts)


def _load(name: str) -> str:
    return resources.files("xlagraph.templates").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=FunctionLoader(_load),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["grouped"] = lambda n: f"{n:,}"
    # Paths as the text shows them: installed packages from the package, the rest relative.
    env.filters["short"] = short_location
    env.filters["short_in"] = short_locations_in
    return env


def asset(name: str) -> Markup:
    """A stylesheet or script of ours, inlined as is."""
    text = _load(name)
    if "</" in text.replace("<\\/", ""):
        raise ValueError(f"{name} contains '</', which would end its inline element")
    return Markup(text)


def script_json(value: Any) -> Markup:
    """JSON safe inside `<script type="application/json">`: no `<`, `>` or `&` survive."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(raw, escaped)
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page_data(runs: dict[str, Any]) -> Markup:
    status = {k: [STATUS_MARKS[k], STATUS_TITLES[k]] for k in STATUS_MARKS}
    return script_json({"runs": runs, "status": status})
