"""`sources.first_meaningful` reads line by line what splitting the text gave (a property over
generated texts: blank lines, `//` comments, fewer and more than 200 lines)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from xlagraph.parse.sources import first_meaningful


def _by_split(text: str) -> str:
    for line in text.split("\n", 200)[:200]:
        s = line.strip()
        if s and not s.startswith("//"):
            return s
    return ""


_LINES = st.sampled_from(
    ["", "  ", "// note", "  // x", "HloModule m", " \t", "x", "\r", "/* c */ HloModule"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=260), st.booleans())
def test_line_by_line_equals_split(lines: list[str], trailing: bool) -> None:
    text = "\n".join(lines) + ("\n" if trailing else "")
    assert first_meaningful(text) == _by_split(text)


def test_past_two_hundred_lines_nothing_is_read() -> None:
    assert first_meaningful("\n" * 200 + "HloModule m") == _by_split("\n" * 200 + "HloModule m") == ""
    assert first_meaningful("\n" * 199 + "HloModule m") == "HloModule m"
