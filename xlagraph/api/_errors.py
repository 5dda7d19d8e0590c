"""The API's error boundary (`xlagraph.errors.reading`): whatever Python raises while a file is
read becomes `InputError`, worded as the CLI words it, so a caller catches one type."""

from __future__ import annotations

from xlagraph.errors import reading

__all__ = ["reading"]
