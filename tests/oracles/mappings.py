"""The reference matcher's mutable pairing, built by its phases in turn."""

from __future__ import annotations

from xlagraph.match import Matching

__all__ = ["Mappings"]


class Mappings:
    """Mutable left<->right pairing used while matching; the first phase to claim a pair keeps it."""

    def __init__(self) -> None:
        self.left: dict[str, str] = {}
        self.right: dict[str, str] = {}
        self.matcher: dict[str, str] = {}
        # Pairs whose operands the strict top-down phase already paired: expanding them again
        # cannot pair anything new, since paired instructions never become free.
        self.expanded: set[str] = set()

    def add(self, left: str, right: str, matcher: str) -> bool:
        if left in self.left or right in self.right:
            return False
        self.left[left] = right
        self.right[right] = left
        self.matcher[left] = matcher
        return True

    def freeze(self) -> Matching:
        return Matching(dict(self.left), dict(self.right), dict(self.matcher))
