"""Each cause of a recompile attributed to the user's program (the lines, the live tensors, the
items it names): decided here on the diff and the capture's records, shown by the report."""

from __future__ import annotations

from xlagraph.diagnose.attribution.attribute import AttributionContext, Mark, attribute

__all__ = ["AttributionContext", "Mark", "attribute"]
