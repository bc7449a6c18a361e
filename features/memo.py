"""Bounded memos of pure functions of a text, per process.

A ``TextMemo`` keeps the results of a function of one text (a subquery's intent, a rule helper's
answer) that the same process asks for again: within one query (the automation rules ask about the same
span many times) and across queries (打开空调 ends hundreds of different requests). A full memo is
emptied, not evicted entry by entry: cheaper, and a memo never changes a result, only its cost. A
memo is kept only where it saves more than it costs (a matcher's ``find`` is cheaper than its memo).
Memos are never pickled with a model. ``clear_memos`` empties every live memo: the benchmarks call it
before each timed run so that a run of distinct queries pays for every text once, as the target asks.
"""

from __future__ import annotations

import functools
import itertools
import weakref

_LIVE: "weakref.WeakValueDictionary[int, TextMemo]" = weakref.WeakValueDictionary()  # by creation number
_NUMBERS = itertools.count()


class TextMemo(dict):
    """A dict meant to hold at most ``size`` entries: whoever stores into it empties it first when it is
    full (``per_lexicons``, ``IntentClassifier.predict``); ``clear_memos`` reaches every one."""

    def __init__(self, size: int):
        super().__init__()
        self.size = size
        _LIVE[next(_NUMBERS)] = self

    def __reduce__(self):  # a memo pickles empty: it is this process's, never part of a model
        return (TextMemo, (self.size,))


def clear_memos() -> None:
    """Empty every memo of this process."""
    for memo in list(_LIVE.values()):
        memo.clear()


MEMO_PREFIX = "_memo_"  # attributes of a lexicons object that hold ``per_lexicons`` memos (never pickled)


def per_lexicons(size: int):
    """Decorator: memoise a pure function ``fn(text, lex)`` of a text and a word-class object, per
    word-class object (its memo lives in ``lex.__dict__`` under ``MEMO_PREFIX`` + the function's name, so
    two parsers with different lexicons never share answers). The rules ask the same question of the
    same span again and again (``strip_fillers`` of a piece and of its command, ``signal_text`` of a query
    in the signal test and in the span repairs); the answer must be immutable (a str, bool or tuple).
    ``fn`` itself stays reachable as ``__wrapped__``."""

    def wrap(fn):
        name = MEMO_PREFIX + fn.__name__

        @functools.wraps(fn)
        def memoised(text, lex):  # one dict index to the memo: the rules call these tens of times a query
            try:
                memo = lex.__dict__[name]
            except AttributeError:  # no __dict__ (slots): nowhere to keep a memo
                return fn(text, lex)
            except KeyError:
                memo = lex.__dict__[name] = TextMemo(size)
            value = memo.get(text, _MISSING)
            if value is _MISSING:
                value = fn(text, lex)
                if len(memo) >= size:  # full: emptied, not evicted entry by entry
                    memo.clear()
                memo[text] = value
            return value

        return memoised

    return wrap


_MISSING = object()


def once_per_lexicons(fn):
    """Decorator: a table that ``fn(lex)`` derives from a word-class object alone (a pattern of some of its
    words, the first characters of its names, an automaton), built on first use and kept in ``lex.__dict__``
    under ``MEMO_PREFIX`` + the function's name: once per object, never pickled with it."""
    name = MEMO_PREFIX + fn.__name__

    @functools.wraps(fn)
    def built(lex):
        try:
            return lex.__dict__[name]
        except KeyError:
            table = lex.__dict__[name] = fn(lex)
            return table

    return built
