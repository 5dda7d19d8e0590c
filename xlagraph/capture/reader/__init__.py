"""Read a capture folder back into `RunLog`s, one per process. Pure Python, no torch.

A run killed at any moment stays readable: a partial last journal line is ignored with a note,
and PT_XLA_DEBUG output the hook had not consumed yet (`pt_xla_debug.txt`, or the copy it was
reading) becomes one more step, its compiles paired with the dump files no graph claimed. Every
journal and meta field is validated (`records.py`): a bad record is skipped and counted in a
note. Files are read bounded (`XLAGRAPH_MAX_INPUT_MB`); a FIFO or device in place of one is
refused. A folder written by several runs (the same DIR used again) is split into runs by time:
`read_capture_runs`.

Reading order: `folder.py` (the entry: processes and runs) -> `process.py` (one process) ->
`meta.py`, `journal.py`, `leftover.py` (what it wrote) -> `steps.py`, `graphs.py` (what it means).
"""

from xlagraph.capture.reader.folder import (
    CaptureRun,
    is_capture,
    read_capture,
    read_capture_runs,
    read_process,
)

__all__ = ["CaptureRun", "is_capture", "read_capture", "read_capture_runs", "read_process"]
