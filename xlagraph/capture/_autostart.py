"""Run by `xlagraph-capture.pth` at interpreter start, only when XLAGRAPH_CAPTURE is set.

Sets torch_xla's debug variables before torch_xla can read them and arms the import hook.
Must never stop the interpreter from starting: any error is one line on stderr.
"""

from __future__ import annotations

import sys

try:
    from xlagraph.capture._hook import start_from_env

    start_from_env()
except Exception as e:  # a broken capture must not break `python`
    print(f"xlagraph capture: disabled after error: {type(e).__name__}: {e}", file=sys.stderr)
