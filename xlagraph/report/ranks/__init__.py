"""The ranks of a multi-process run side by side: did every rank run the same graphs, step by step,
and do their collectives line up? Pure functions over the processes' `RunLog`s.

A data-parallel or SPMD job is only as stable as its least stable rank: a rank that compiles
another graph makes the others wait, and a rank whose graph holds other collectives (another
kind, shape or order) makes every rank wait forever in the first collective that does not line
up. torch_xla says nothing about either. This compares:

* the rank x step strip: which graph (variant letter, shared by all ranks) each rank ran at each
  step, `+` joining the graphs of a step that ran several (an implicit sync splits a step);
* the first step where ranks differ, the ranks grouped by what they ran, and the engine's diff
  of the first pair of graphs that differ there (baseline: the largest group);
* the collective sequences from that step on, as every rank issues them (graphs in execution
  order, collectives in program order inside each graph), and the first position where ranks
  do not issue the same collective: kind, operand shapes and replica groups must all agree.

A rank is read from the process's capture (`rank R of W`) or, for per-rank dumps without
capture, from the file's ordinal suffix (`save.hlo.3`) or folder name (`rank3`, `3`).

Reading order: `view.py` (`rank_view`) -> `sources.py` (which rank a run is), `collectives.py`
(what each rank issues), `model.py` (what the view holds).
"""

from xlagraph.report.ranks.collectives import collectives_of
from xlagraph.report.ranks.model import (
    CollectiveMismatch,
    CollectiveOp,
    RankDiff,
    RankDivergence,
    RankGroup,
    RankView,
    describe_ranks,
)
from xlagraph.report.ranks.sources import rank_dir_runs, rank_of, runlog_from_dump_dir
from xlagraph.report.ranks.view import rank_view

__all__ = [
    "CollectiveMismatch",
    "CollectiveOp",
    "RankDiff",
    "RankDivergence",
    "RankGroup",
    "RankView",
    "collectives_of",
    "describe_ranks",
    "rank_dir_runs",
    "rank_of",
    "rank_view",
    "runlog_from_dump_dir",
]
