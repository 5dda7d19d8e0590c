"""The ranks of a multi-process run side by side: did every rank run the same graphs, step by step,
and do their collectives line up? Pure functions over the processes' `RunLog`s.

A data-parallel or SPMD job is only as stable as its least stable rank: a rank that compiles
another graph makes the others wait, and a rank whose graph holds other collectives (another
kind, shape or order) makes every rank wait forever in the first collective that does not line
up. torch_xla says nothing about either. What the view compares (the rank x step strip, the
first divergent step and its diff, the collective sequences) and where a rank comes from are
docs/ranks.md.

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
