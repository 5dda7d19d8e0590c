"""XLA's own parser test modules, with jaxlib's parser as the oracle (fixtures/xla_conformance).

Every module XLA accepts is read with XLA's instruction and computation counts; every module XLA
refuses is refused with ParseError / InputError, and `xlagraph graphs FILE` exits 2 with one line
naming the file. Except, listed one by one in `score.OTHER_VERSIONS` with the reason: a module
today's XLA refuses only for a spelling that an XLA printer of another version wrote is read, with
a note, and with jaxlib's counts once that spelling alone is removed (issue 18).

The figures go to the terminal (`-s`) and to the junit properties; the same figures, with the
mismatches by category: `python fixtures/xla_conformance/score.py --cli`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "xla_conformance"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"xla_conformance_{name}", CORPUS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


score = _load("score")
extract = _load("extract")
MANIFEST = score.load_manifest()
ENTRIES = {e["file"]: e for e in MANIFEST["modules"]}
ACCEPTED = sorted(f for f, e in ENTRIES.items() if e["xla"]["accepted"])
OTHER_VERSIONS = sorted(score.OTHER_VERSIONS)
REFUSED = sorted(f for f, e in ENTRIES.items() if not e["xla"]["accepted"] and f not in score.OTHER_VERSIONS)


@pytest.fixture(scope="module")
def answers() -> dict[str, dict]:
    return score.read_all(list(ENTRIES))


@pytest.fixture(scope="module")
def judged(answers: dict[str, dict]) -> dict[str, object]:
    return {f: score.judge(ENTRIES[f], answers[f]) for f in ENTRIES}


@pytest.fixture(scope="module")
def cli_refusals() -> dict[str, str]:
    """`xlagraph graphs FILE` on every refused module, two at a time: '' when clean, else why not."""
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(REFUSED, pool.map(score.cli_refusal, REFUSED), strict=True))


def test_corpus_is_whole() -> None:
    files = {p.name for p in (CORPUS / "modules").glob("*.hlo")}
    assert files == set(ENTRIES)
    for name, entry in ENTRIES.items():
        assert hashlib.sha256((CORPUS / "modules" / name).read_bytes()).hexdigest() == entry["sha256"], name
    assert len(ACCEPTED) > 200 and len(REFUSED) > 50


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_module_counted_as_xla_counts(name: str, judged: dict) -> None:
    j = judged[name]
    assert j.alike, f"{j.category}: {j.detail}"


@pytest.mark.parametrize("name", REFUSED)
def test_refused_module_refused_cleanly(name: str, judged: dict, cli_refusals: dict[str, str]) -> None:
    j = judged[name]
    assert j.alike, f"{j.category} (XLA: {ENTRIES[name]['xla']['message']})"
    assert not cli_refusals[name], f"xlagraph graphs {name}: {cli_refusals[name]}"


def test_other_versions_are_exactly_the_listed_cases() -> None:
    """Loosening is per case: each listed module exists, and jaxlib refuses it (else it would not
    need the exception)."""
    assert set(OTHER_VERSIONS) <= set(ENTRIES)
    for name in OTHER_VERSIONS:
        assert not ENTRIES[name]["xla"]["accepted"], name
        assert (CORPUS / "modules" / name).read_text().count(score.OTHER_VERSIONS[name].spelling) == 1


@pytest.mark.parametrize("name", OTHER_VERSIONS)
def test_other_version_spelling_read_with_a_note(name: str, answers: dict, judged: dict) -> None:
    """Read with a note (never an error), with the counts jaxlib gives without the spelling."""
    j = judged[name]
    assert j.alike, f"{j.category}: {j.detail} ({score.OTHER_VERSIONS[name].why})"
    assert answers[name]["notes"] >= 1


@pytest.mark.parametrize("name", OTHER_VERSIONS)
def test_other_version_counts_are_jaxlibs_without_the_spelling(name: str) -> None:
    """The expected counts are jaxlib's, today, on the text with only that spelling removed."""
    other = score.OTHER_VERSIONS[name]
    text = (CORPUS / "modules" / name).read_text()
    assert not extract.run_oracle(text)["accepted"]
    verdict = extract.run_oracle(text.replace(other.spelling, ""))
    assert verdict["accepted"], verdict.get("message", "")
    assert (verdict["computations"], verdict["instructions"]) == (other.computations, other.instructions)


def test_figures(judged: dict, record_property) -> None:
    """Not a check: prints the figures the README quotes (run with -s to see them)."""
    figures = score.figures(list(judged.values()), {})
    for key, value in figures.items():
        record_property(key, value)
    print("\n" + score.report(list(judged.values()), {}).split("\n\n")[0])


# A spread over the corpus (accepted and refused, small and nested), re-run through jaxlib today.
SAMPLE = ACCEPTED[:: max(1, len(ACCEPTED) // 8)] + REFUSED[:: max(1, len(REFUSED) // 4)]


@pytest.mark.parametrize("name", SAMPLE)
def test_manifest_matches_jaxlib_today(name: str) -> None:
    """The oracle cannot rot: jaxlib, as installed, still says what the MANIFEST says."""
    text = (CORPUS / "modules" / name).read_bytes().decode("utf-8", "surrogateescape")
    verdict = extract.run_oracle(text)
    xla = ENTRIES[name]["xla"]
    assert verdict["accepted"] == xla["accepted"], verdict.get("message", "")
    if xla["accepted"]:
        counts = (verdict["computations"], verdict["instructions"])
        assert counts == (xla["computations"], xla["instructions"])
        assert hashlib.sha256(verdict["printed"].encode()).hexdigest() == xla["printed_sha256"]
    else:
        assert extract.first_error(verdict["message"]) == xla["message"]


def test_every_module_read_diffs_identical_with_itself() -> None:
    """`xlagraph diff X X` on every module of fixtures/xla_conformance and fixtures/xla_versions:
    exit 0 (identical), or exit 1 saying `undetermined` where the dump elides a constant's values;
    never `different`, and a module the reader refuses exits 2 with one line."""
    from click.testing import CliRunner
    from xlagraph.cli.main import xlagraph

    runner = CliRunner()
    paths = sorted((ROOT / "fixtures" / "xla_conformance" / "modules").iterdir())
    paths += sorted((ROOT / "fixtures" / "xla_versions" / "modules").iterdir())
    wrong = []
    for path in paths:
        out = runner.invoke(xlagraph, ["diff", str(path), str(path)])
        first = out.output.strip().splitlines()[0] if out.output.strip() else ""
        ok = {
            0: first == "identical",
            1: first.startswith("undetermined"),
            2: first.startswith("xlagraph: error"),
        }
        if not ok.get(out.exit_code, False):
            wrong.append((path.name, out.exit_code, first[:120]))
    assert len(paths) > 500
    assert not wrong
