"""Bounded memos of pure functions of a text, per process.

A ``TextMemo`` keeps the results of a function of one text (a subquery's intent, a matcher's
matches) that the same process asks for again: within one query (the automation rules match the same
span many times) and across queries (打开空调 ends hundreds of different requests). A full memo is
emptied, not evicted entry by entry: cheaper, and a memo never changes a result, only its cost.
Memos are never pickled with a model. ``clear_memos`` empties every live memo: the benchmarks call it
before each timed run so that a run of distinct queries pays for every text once, as the target asks.
"""

from __future__ import annotations

import itertools
import weakref

_LIVE: "weakref.WeakValueDictionary[int, TextMemo]" = weakref.WeakValueDictionary()  # by creation number
_NUMBERS = itertools.count()


class TextMemo(dict):
    """A dict of at most ``size`` entries: ``put`` empties it when it is full."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        _LIVE[next(_NUMBERS)] = self

    def put(self, key, value) -> None:
        if len(self) >= self.size:
            self.clear()
        self[key] = value

    def __reduce__(self):  # a memo pickles empty: it is this process's, never part of a model
        return (TextMemo, (self.size,))


def clear_memos() -> None:
    """Empty every memo of this process."""
    for memo in list(_LIVE.values()):
        memo.clear()
