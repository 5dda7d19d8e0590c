"""Run a training script unmodified (as `python SCRIPT`), then print torch_xla's own compile count.

    python run_and_count.py SCRIPT [ARGS...]

The count comes from torch_xla's CompileTime metric, independently of xlagraph's capture, so a
test can compare the two.
"""

import runpy
import sys
from pathlib import Path

script = Path(sys.argv[1]).resolve()
sys.argv = [str(script), *sys.argv[2:]]
sys.path[0] = str(script.parent)
try:
    runpy.run_path(str(script), run_name="__main__")
finally:
    import torch_xla.debug.metrics as met

    data = met.metric_data("CompileTime")
    print(f"XLAGRAPH_TEST_COMPILES={data[0] if data else 0}", flush=True)
