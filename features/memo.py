"""Bounded memos of pure functions of a text, per process.

A ``TextMemo`` keeps the results of a function of one text (a subquery's intent) that the same process
asks for again across queries (打开空调 ends hundreds of different requests). A full memo is
emptied, not evicted entry by entry: cheaper, and a memo never changes a result, only its cost. A
memo is kept only where it saves more than it costs (a matcher's ``find`` is cheaper than its memo).
Memos are never pickled with a model. ``clear_memos`` empties every live memo: the benchmarks call it
before each timed run so that a run of distinct queries pays for every text once, as the target asks.
"""

from __future__ import annotations

import itertools
import weakref

_LIVE: "weakref.WeakValueDictionary[int, TextMemo]" = weakref.WeakValueDictionary()  # by creation number
_NUMBERS = itertools.count()


class TextMemo(dict):
    """A dict meant to hold at most ``size`` entries: whoever stores into it empties it first when it is
    full (``keep``, ``IntentClassifier.predict``); ``clear_memos`` reaches every one."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        _LIVE[next(_NUMBERS)] = self

    def keep(self, answers: dict) -> None:
        """Store ``answers``, emptying the memo first if they would take it over ``size``."""
        if len(self) + len(answers) > self.size:
            self.clear()
        self.update(answers)

    def __reduce__(self):  # a memo pickles empty: it is this process's, never part of a model
        return (TextMemo, (self.size,))


def clear_memos() -> None:
    """Empty every memo of this process."""
    for memo in list(_LIVE.values()):
        memo.clear()
