"""The fingerprint capture's two files: fingerprints.jsonl (a meta line, each tensor name once with
its shape and dtype, the rank, notes) and the binary records of each step's fingerprints, kept
under XLAGRAPH_MAX_MB.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from xlagraph.capture import fingerprint_format as ff
from xlagraph.capture._fingerprint_names import Slot
from xlagraph.capture._fingerprint_records import Step, records

__all__ = ["FingerprintWriter"]


class FingerprintWriter:
    """The open files, the name ids given so far and the bytes written (XLAGRAPH_MAX_MB)."""

    def __init__(self, proc_dir: str, max_bytes: int) -> None:
        self.dir = proc_dir
        self.max_bytes = max_bytes
        self.names: dict[tuple[str, str], int] = {}
        self.bytes = 0
        self.fd_bin: int | None = None
        self.fd_jsonl: int | None = None
        self.rank_written = False

    def name_id(self, slot: Slot, t: Any) -> int:
        """The slot's name id; a name seen for the first time gets one, and its record (with the
        shape and dtype it has now) goes to fingerprints.jsonl."""
        key = (slot.name, slot.role)
        i = self.names.get(key)
        if i is None:
            if len(self.names) >= ff.MAX_NAMES:
                raise RuntimeError(f"more than {ff.MAX_NAMES} distinct tensor names")
            i = self.names[key] = len(self.names)
            dtype = str(t.dtype).removeprefix("torch.")
            self.jsonl(
                [
                    {
                        "k": "name",
                        "id": i,
                        "name": slot.name,
                        "role": slot.role,
                        "shape": list(t.shape),
                        "dtype": dtype,
                    }
                ]
            )
        slot.id = i
        return i

    def write_steps(self, steps: list[Step], rec: Any) -> bool:
        """Append the steps' records in one write; past XLAGRAPH_MAX_MB, none after that step,
        and False (no more fingerprints). `rec`: the torch_xla recorder, or None."""
        if self.fd_bin is None:
            self._open()
        more = True
        room = self.max_bytes - self.bytes
        for k, (step, _, ids, _) in enumerate(steps):
            room -= ff.RECORD.size * (1 + len(ids))
            if room < 0:
                self.jsonl(
                    [{"k": "note", "v": f"XLAGRAPH_MAX_MB reached at step {step}: no more fingerprints"}]
                )
                more = False
                steps = steps[:k]
                break
        if not steps:
            return more
        if not self.rank_written:
            self.rank_written = True
            self.jsonl([_rank_record(rec)])
        view = memoryview(records(steps))
        self.bytes += len(view)
        while view:
            view = view[os.write(self.fd_bin, view) :]  # type: ignore[arg-type]
        return more

    def _open(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        self.fd_bin = os.open(os.path.join(self.dir, ff.BIN), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def jsonl(self, records: list[dict[str, Any]]) -> None:
        """Append records to fingerprints.jsonl (opened, with its meta line, at the first)."""
        if self.fd_jsonl is None:
            os.makedirs(self.dir, exist_ok=True)
            path = os.path.join(self.dir, ff.JSONL)
            self.fd_jsonl = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            torch = sys.modules.get("torch")
            version = str(getattr(torch, "__version__", ""))
            meta = {"k": "meta", "format": ff.FORMAT, "pid": os.getpid(), "torch": version}
            records = [meta, *records]
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
        os.write(self.fd_jsonl, data)


def _rank_record(rec: Any) -> dict[str, Any]:
    """The rank the user's code sees: torch.distributed's when it is set up, else the capture
    recorder's (torch_xla), else torchrun's RANK."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return {
            "k": "rank",
            "rank": dist.get_rank(),
            "world": dist.get_world_size(),
            "source": "torch.distributed",
        }
    if rec is not None and rec.meta.get("rank") is not None:
        return {
            "k": "rank",
            "rank": rec.meta["rank"],
            "world": rec.meta.get("world_size"),
            "source": "capture",
        }
    rank, world = os.environ.get("RANK"), os.environ.get("WORLD_SIZE")
    if rank is not None and rank.isdigit():
        w = int(world) if world is not None and world.isdigit() else None
        return {"k": "rank", "rank": int(rank), "world": w, "source": "RANK"}
    return {"k": "rank", "rank": None, "world": None, "source": ""}
