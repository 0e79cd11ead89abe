"""A lower-cased text and the way back to the text it came from, for evidence spans.

Evaluators read answers lower-cased (`answer.lower()`), and the review pane highlights
spans of the answer as stored. Lower-casing keeps a text's length except where a
character's lower case is longer: "İ" (U+0130, in Unicode 14 the only one, but the class
takes any) becomes "i̇", an "i" and a combining dot above, so an offset in the
lower-cased text lies one character further on after each. `Lowered` holds the lower-cased
text and, only when its length changed, the original position of each of its characters;
every span an evaluator finds in `lower` goes back through `span` (or `find_all`).
Characters whose lower case is one character ("ẞ" → "ß"; ligatures such as "ﬁ", unchanged:
only case *folding* splits them; combining marks) keep every offset as it is.
"""

from __future__ import annotations


class Lowered:
    """`text.lower()` (`lower`) and the way from its offsets back to `text` (`span`)."""

    __slots__ = ("_origin", "lower", "text")

    def __init__(self, text: str):
        self.text = text
        self.lower = text.lower()
        # where each character of `lower` comes from in `text`; None: the same place. Per
        # character, `str.lower` gives as many characters as on the whole text (its only
        # context rule, a final sigma, gives one character either way).
        self._origin: list[int] | None = None
        if len(self.lower) != len(text):
            self._origin = [i for i, c in enumerate(text) for _ in c.lower()]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The span of `text` that `lower[start:end]` came from: whole characters (a span
        beginning or ending inside the lower case of "İ" covers that "İ")."""
        origin = self._origin
        if origin is None:
            return start, end
        first = origin[start] if start < len(origin) else len(self.text)
        if end <= start:
            return first, first
        return first, origin[min(end, len(origin)) - 1] + 1

    def find_all(self, needle: str) -> list[list[int]]:
        """[start, end] in `text` of every occurrence of `needle` in `lower` (each start
        after the previous one's, as repeated `str.find` finds them)."""
        spans = []
        at = self.lower.find(needle) if needle else -1
        while at != -1:
            spans.append(list(self.span(at, at + len(needle))))
            at = self.lower.find(needle, at + 1)
        return spans
