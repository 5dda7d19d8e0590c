"""An answer read from source text never depends on what the process read before (issue 37's
branch-residue tests failed after the metamorphic tests): the caches of what a file's text says
key on the text being read (`frames.sources_key`), not on the file's name alone."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

from tests.conftest import FIXTURES
from xlagraph.api import diff
from xlagraph.capture.stored_sources import INDEX, SOURCES_DIR, StoredSources
from xlagraph.diagnose.frames import SourceText, is_user_location, reading_sources, sources_key
from xlagraph.diagnose.recognizers.random_skip import skip_sites
from xlagraph.diff import diff_modules
from xlagraph.parse.hlo import parse_hlo
from xlagraph.source_paths import is_library_path

HLO = FIXTURES / "torch_xla" / "corpus" / "captures" / "h28_intent_eager_optional_pad_mask" / "hlo"
PLAIN = HLO / "module_0007.step_fn.250.before_optimizations.txt.xz"
MASKED = HLO / "module_0011.step_fn.267.before_optimizations.txt.xz"


def _without_sources() -> list[str]:
    """The pair diffed from its text alone (as the metamorphic tests do): no source, no `if`."""
    a, b = (parse_hlo(lzma.decompress(p.read_bytes()).decode()) for p in (PLAIN, MASKED))
    return sorted(c.fix_id for c in diff_modules(a, b).causes)


def _with_sources() -> list[str]:
    """The same pair read from the capture's folder, whose stored sources show the `if`."""
    return [c.fix_id for c in diff(str(PLAIN), str(MASKED)).causes]


def test_a_diff_without_sources_first_leaves_the_capture_s_answer_as_it_is_alone() -> None:
    """The failing order (`scripts/...:20` read with no source text, then with the capture's),
    and back: each answer is the one it gives alone."""
    alone = ["parameter_added", "parameter_removed"]  # nothing to read: the inputs only
    assert _without_sources() == alone
    assert _with_sources() == ["conditional_work.host_branch"]
    assert _without_sources() == alone


def test_the_same_file_name_under_other_bases_is_read_again(tmp_path: Path) -> None:
    """Two projects' `train.py`: a draw that decides an `if` in one, none in the other."""
    drawn, plain = tmp_path / "a", tmp_path / "b"
    drawn.mkdir()
    plain.mkdir()
    (drawn / "train.py").write_text("import torch\np = torch.rand([])\nif p < 0.1:\n    pass\n")
    (plain / "train.py").write_text("import torch\np = 0.5\nif p < 0.1:\n    pass\n")
    keys = []
    for base, sites in ((drawn, (3,)), (plain, ()), (drawn, (3,))):
        with reading_sources(SourceText(bases=(str(base),))):
            assert skip_sites("train.py") == sites
            keys.append(sources_key())
    assert keys[0] == keys[2] != keys[1]


def test_a_path_one_capture_marks_as_library_is_the_user_s_when_other_text_is_read(tmp_path: Path) -> None:
    """`h31lib/util.py` is library to the capture whose stored sources mark it so (an installed
    package of its machine, its root stripped), and a user file of any other text read later in
    the same process: the mark holds while that capture is read, not from then on."""
    proc = tmp_path / "proc"
    (proc / SOURCES_DIR).mkdir(parents=True)
    index = {"lines": {"h31lib/util.py": {"lib": True, "lines": {"1": "x = 1\n"}}}}
    (proc / SOURCES_DIR / INDEX).write_text(json.dumps(index))
    stored = StoredSources.load(str(proc))
    assert stored is not None
    with reading_sources(SourceText(stored=stored)):
        assert is_library_path("h31lib/util.py")
        assert not is_user_location("h31lib/util.py:1")
    with reading_sources(SourceText(bases=(str(tmp_path),))):
        assert not is_library_path("h31lib/util.py")
        assert is_user_location("h31lib/util.py:1")
    with reading_sources(SourceText(stored=stored)):
        assert is_library_path("h31lib/util.py")
