"""The user's line that changes a model config during the run, for causes with library lines only.

transformers reads its options from `self.config` when the step runs: ViTMAE keeps
`int(seq_length * (1 - self.config.mask_ratio))` patches, so `model.config.mask_ratio = 0.75` in
the user's loop changes op sizes whose lines are all in modeling_vit_mae.py. Where a cause cites
library lines only and those lines (or the assignments of the names they read, a few lines above)
read `config.<option>`, the user's assignment to that option (`model.config.<option> = ...`,
`setattr(model.config, "<option>", ...)`) is the line to cite, first. The kind is not changed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace

from xlagraph.diagnose.causes import Cause
from xlagraph.diagnose.evidence import NOTHING, Evidence, Recognized, Recognizer
from xlagraph.diagnose.frames import is_user_location
from xlagraph.diagnose.recognizers._assignments import assigned_from
from xlagraph.diagnose.recognizers._source import source_text, user_files
from xlagraph.diagnose.recognizers._statements import call_name, lines_where

__all__ = ["RECOGNIZER"]

_CONFIG = re.compile(r"\bconfig\.([A-Za-z_]\w*)")
_SPAN = 30  # lines above a library line searched for the assignment of a name it reads


def _options(location: str) -> set[str]:
    """The `config.<option>` names a library line reads, directly or through a local assigned
    from one within a few lines above (`len_keep = int(L * (1 - self.config.mask_ratio))`)."""
    found = set(_CONFIG.findall(source_text(location).split("#", 1)[0]))
    site = assigned_from(location, _CONFIG, _SPAN)
    if site:
        found |= set(_CONFIG.findall(source_text(site).split("#", 1)[0].partition("=")[2]))
    return found


def _sets(tree: ast.Module, option: str) -> Iterator[int]:
    """Lines that set `option` on a config: `model.config.<option> = ...` (the object named
    `config` or ending in it) or `setattr(model.config, "<option>", ...)`."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Attribute) and t.attr == option and call_name(t.value) == "config"
            for t in n.targets
        ):
            yield n.lineno
        elif isinstance(n, ast.Call) and call_name(n.func) == "setattr" and len(n.args) > 1:
            obj, key = n.args[:2]
            if call_name(obj).endswith("config") and isinstance(key, ast.Constant) and key.value == option:
                yield n.lineno


def _recognize(evidence: Evidence, pending: tuple[Cause, ...]) -> Recognized:
    if not any(c.sources and not c.info and not any(is_user_location(s) for s in c.sources) for c in pending):
        return NOTHING  # most diffs: every cause has a user line, or none has a line at all
    files = user_files(evidence)
    if not files:
        return NOTHING
    out: list[Cause] = []
    changed = False
    for cause in pending:
        if cause.info or not cause.sources or any(is_user_location(s) for s in cause.sources):
            out.append(cause)
            continue
        options = set().union(*(_options(s) for s in cause.sources[:6]))
        sites: list[str] = []
        for option in sorted(options):
            sites += lines_where(files, lambda tree, o=option: _sets(tree, o), 2)
        if not sites:
            out.append(cause)
            continue
        changed = True
        out.append(replace(cause, sources=tuple(dict.fromkeys([*sites, *cause.sources]))[:6]))
    if not changed:
        return NOTHING
    return Recognized(tuple(out), frozenset(range(len(pending))))


RECOGNIZER = Recognizer("config_site", _recognize)
