"""Which character of a literal to find first: the one least likely to occur in a model's output.

`str.find` of a one-character needle runs `memchr` (about 0.01 ns a character); of a short literal it
steps a few characters at a time (0.2-0.7 ns a character: a 10,000-character message costs 2-7 µs per
search, as much as the rest of a whole-message parse). The end-of-stream scans for long texts therefore
find a literal `L` from `pos` as: the first `L[k]` at or after `pos + k`, then `L` from `k` before it.
Every occurrence of `L` at `s >= pos` has `L[k]` at `s + k`, so none starts before that candidate, and
the answer is the same; when the character is rarer than the literal's occurrences the second search
starts right at the match, and otherwise it costs one call more than before. That call is why short
texts keep the plain scans: used everywhere, this made short whole-message parses up to 10% slower
(the first `|` after `<|start|>` is usually the next special token's).

The character is chosen, as prefilters of fast grep tools do, by a fixed ranking of how often
characters occur in text: anything outside ASCII or printable ASCII punctuation of markup and code
first, then the punctuation of prose, never letters, digits or whitespace (a literal made only of
those keeps the plain search). The template's other delimiters are what the response is made of, so
their characters are sure to occur: a character more than half of them have is never chosen (an
independent review measured long gpt-oss and Qwen texts with many delimiters 1.1-1.4x slower when
`|` or `<` was: its first occurrence was another delimiter's, a call for nothing at every search), and
within a class one that fewer of them have wins.
"""

from __future__ import annotations

__all__ = ["rare_char"]

# Printable ASCII outside letters, digits and space, from the rarest in chat output to the most common:
# first what prose never writes and markup or code writes sometimes, then the punctuation of prose.
_MARKUP = "|~^`\\@$%&#{}[]<>=+*_"
_PROSE = "/;!?\"()':-,."


def _rank(char: str) -> tuple[int, int] | None:
    """(class, position within it), lower is rarer; None for letters, digits and spaces."""
    if not char.isascii():
        return (0, 0)  # a special token's `｜` or `▁`: any one non-ASCII character is rare
    if char in _MARKUP:
        return (1, _MARKUP.index(char))
    if char in _PROSE:
        return (2, _PROSE.index(char))
    if char.isalnum() or char.isspace():
        return None  # letters, digits and whitespace: every line of prose has them
    return (0, 0)  # control characters (the other printable characters are in the two lists)


def rare_char(needles: tuple[str, ...], elsewhere: tuple[str, ...]) -> tuple[str, int] | None:
    """`(char, offset)`: a character every one of `needles` has at `offset`, the least likely one to
    occur in text made of the `elsewhere` delimiters and prose; None when no such character is rarer
    than a letter, or a needle is one character long (its `str.find` is `memchr` already)."""
    if not needles or min(map(len, needles)) < 2:
        return None
    best: tuple | None = None
    for offset in range(min(len(needle) for needle in needles)):
        char = needles[0][offset]
        rank = _rank(char)
        if rank is None or any(needle[offset] != char for needle in needles):
            continue
        shared = sum(char in text for text in elsewhere)
        if shared * 2 > len(elsewhere):
            continue  # most of the other delimiters have it: where they cluster, its first one is theirs
        key = (rank[0], shared, rank[1], offset)
        if best is None or key < best[0]:
            best = (key, char, offset)
    return None if best is None else (best[1], best[2])
