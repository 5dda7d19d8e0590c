"""Run as a script by tests/test_hlo_proto.py: for every HLO text file given, XLA's own parser
(jaxlib) reads it and writes the module as an HloModuleProto (`N.pb`) beside XLA's own print of
the same module (`N.ref`, large constants in full) and the source path (`N.src`). jaxlib aborts on a
few malformed inputs, so a crash restarts the work after the file it died on.

    python tests/_xla_protos.py OUT FILE...
"""

from __future__ import annotations

import os
import subprocess
import sys


def _work(out: str, files: list[str], start: int) -> None:
    import jaxlib._hlo as hlo

    options = hlo.HloPrintOptions()
    options.print_large_constants = True
    for i in range(start, len(files)):
        with open(os.path.join(out, "_at"), "w") as f:
            f.write(str(i))
        try:
            with open(files[i], errors="replace") as f:
                module = hlo.hlo_module_from_text(f.read())
            ref, data = module.to_string(options), module.as_serialized_hlo_module_proto()
        except Exception:
            continue
        with open(os.path.join(out, f"{i}.pb"), "wb") as f:
            f.write(data)
        with open(os.path.join(out, f"{i}.ref"), "w") as f:
            f.write(ref)
        with open(os.path.join(out, f"{i}.src"), "w") as f:
            f.write(files[i])
    with open(os.path.join(out, "_at"), "w") as f:
        f.write(str(len(files)))


def main() -> None:
    out, files = sys.argv[1], sys.argv[2:]
    if os.environ.get("XLAGRAPH_PROTO_WORKER"):
        _work(out, files, int(os.environ["XLAGRAPH_PROTO_WORKER"]))
        return
    os.makedirs(out, exist_ok=True)
    start = 0
    while start < len(files):
        env = dict(os.environ, XLAGRAPH_PROTO_WORKER=str(start))
        subprocess.run(
            [sys.executable, __file__, out, *files], env=env, stderr=subprocess.DEVNULL, check=False
        )
        with open(os.path.join(out, "_at")) as f:
            at = int(f.read())
        start = at if at >= len(files) else at + 1


if __name__ == "__main__":
    main()
