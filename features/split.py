"""The one connector splitter: a sequence (tokens, or characters) cut at its connectors and pauses into
pieces, and pieces without an action joined to their neighbours.

The router's subrequest splitter (``models/routing/splitter.py``: jieba tokens, the ``category`` view
of ``connectors.txt``) and the automation parser's split of a plain command (``plain_groups``:
characters, its ``automation`` view) differ only in what they cut at and what counts as an action.
"""

from __future__ import annotations

from typing import Iterable, Sequence


def pieces_between(length: int, cuts: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The non-empty spans of ``0..length`` between the ``(start, end)`` cuts (left to right, not
    overlapping); the cuts themselves belong to no piece."""
    pieces, pos = [], 0
    for start, end in cuts:
        if start > pos:
            pieces.append((pos, start))
        pos = end
    if pos < length:
        pieces.append((pos, length))
    return pieces


def join_actionless(pieces: Sequence[tuple[int, int]], has_action: Sequence[bool]) -> list[tuple[int, int]]:
    """A piece without an action (太冷了，调一下空调; 哎那个，打开空调) joins the next piece; trailing ones
    join the last piece with an action; with no action at all, everything is one piece."""
    merged: list[list[int]] = []
    pending = None
    for (start, end), action in zip(pieces, has_action):
        if not action:
            pending = start if pending is None else pending
            continue
        merged.append([start if pending is None else pending, end])
        pending = None
    if pending is not None:
        if merged:
            merged[-1][1] = pieces[-1][1]
        else:
            merged.append([pending, pieces[-1][1]])
    return [(a, b) for a, b in merged]
