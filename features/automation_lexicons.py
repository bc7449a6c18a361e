"""The automation parser's word lists (``features/lexicons/automation/*.txt``), loaded once and frozen.

Each list becomes a ``Matcher``: one regular expression of its terms, longest first, matched on the
lower-cased text, so ``座椅加热`` wins over ``座椅`` and ``HyperTask`` matches ``hypertask``. A fitted
parser keeps its ``AutomationLexicons`` object, so a saved model does not change when a file does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fastslow.features.lexicon import LEXICON_DIR, read_entries

AUTOMATION_LEXICON_DIR = LEXICON_DIR / "automation"
BUILTIN_FUNCTIONS_FILE = LEXICON_DIR / "builtin_functions.txt"


@dataclass(frozen=True)
class Matcher:
    """Longest-first, non-overlapping matching of a word list; ``category`` maps term → category."""

    name: str
    pattern: re.Pattern | None
    category: dict

    @classmethod
    def build(cls, name: str, entries: list[tuple[str, str]]) -> "Matcher":
        category: dict[str, str] = {}
        for term, cat in entries:
            category.setdefault(term, cat)
        terms = sorted(category, key=lambda t: (-len(t), t))
        pattern = re.compile("|".join(re.escape(t) for t in terms)) if terms else None
        return cls(name, pattern, category)

    def find(self, lowered: str) -> list[tuple[int, int, str, str]]:
        """(start, end, term, category) of every match in ``lowered`` (already lower-cased)."""
        if self.pattern is None:
            return []
        return [(m.start(), m.end(), m.group(), self.category[m.group()]) for m in self.pattern.finditer(lowered)]

    def search(self, lowered: str):
        return self.pattern.search(lowered) if self.pattern is not None else None

    def prefix(self, lowered: str) -> str | None:
        """The longest term that ``lowered`` starts with, or None."""
        if self.pattern is None:
            return None
        m = self.pattern.match(lowered)
        return m.group() if m else None

    def terms(self, *categories: str) -> frozenset:
        return self._terms_by.get(categories) or self._terms_by.setdefault(
            categories, frozenset(t for t, c in self.category.items() if not categories or c in categories))

    @cached_property
    def _terms_by(self) -> dict:
        return {}

    @cached_property
    def max_len(self) -> int:
        return max((len(t) for t in self.category), default=0)


@dataclass(frozen=True)
class Builtin:
    """One built-in vehicle behaviour: any condition word, and an action word in every action."""

    condition_words: tuple[str, ...]
    action_words: tuple[str, ...]


@dataclass(frozen=True)
class AutomationLexicons:
    time_words: Matcher
    triggers: Matcher
    positions: Matcher
    positional_devices: Matcher
    device_kinds: Matcher
    action_verbs: Matcher
    reminder_verbs: Matcher
    super_task: Matcher
    memo: Matcher
    once: Matcher
    scope_end: Matcher
    fillers: Matcher
    events: Matcher
    builtins: tuple[Builtin, ...]
    signal: Signal
    #: features/lexicons/builtin_functions.txt: built-in functions by class, and the safety events the car
    #: watches itself (None in parsers fitted before it existed)
    builtin_functions: Matcher | None = None

    #: the matchers the tagger turns into per-character features
    FEATURE_MATCHERS = ("time_words", "triggers", "positions", "device_kinds", "action_verbs",
                        "reminder_verbs", "super_task", "memo", "once", "scope_end", "fillers", "events")


#: word lists whose words signal a possible condition, duration, once marker, reminder, super task or
#: memo; a query with none of them (and no number with a time unit) is plainly unconditional. Scope
#: ends (另外, 现在) matter only after a condition, which has its own signal.
SIGNAL_MATCHERS = ("time_words", "triggers", "once", "reminder_verbs", "super_task", "memo", "events")
#: memo words that signal on their own: the items (日程, 备忘录) and 记…; a bare 加 / 查 / 设置 does not
SIGNAL_MEMO = ("item",)
SIGNAL_MEMO_WORDS = frozenset(("记", "记一下", "记下", "记录", "帮我记"))
#: single characters too common to signal anything on their own
SIGNAL_STOP = frozenset("一在到等点分号月日天秒")
_CN = "零一二两三四五六七八九十百半几"
_TIME_NUMBER = (rf"(?:\d+|[{_CN}]+)\s*(?:个)?(?:分钟|小时|钟头|秒|号|%|度)|%|百分之"
                rf"|(?:\d+|[{_CN}]{{2,}}|[零二两三四五六七八九十])点|一点(?:钟|半|\d|[{_CN}]+分)|\d{{1,2}}:\d\d")


@dataclass(frozen=True)
class Signal:
    """One regular expression for "might this query hold more than plain unconditional actions?"."""

    pattern: re.Pattern

    def __call__(self, lowered_text: str) -> bool:
        return self.pattern.search(lowered_text) is not None


MATCHER_FILES = ("time_words", "trigger_markers", "positions", "positional_devices", "device_kinds",
                 "action_verbs", "reminder_verbs", "super_task_keywords", "memo_words", "once_markers",
                 "scope_end", "fillers", "events")


def load_automation_lexicons(lexicon_dir: str | Path | None = None) -> AutomationLexicons:
    """Read every automation word list of ``lexicon_dir`` (default: the bundled one)."""
    folder = Path(lexicon_dir) if lexicon_dir else AUTOMATION_LEXICON_DIR
    m = {name: Matcher.build(name, read_entries(folder / f"{name}.txt")) for name in MATCHER_FILES}
    builtins = []
    for term, category in read_entries(folder / "builtin_behaviours.txt"):
        conditions = tuple(w for w in term.split("|") if w)
        actions = tuple(w.strip().lower() for w in category.split("|") if w.strip())
        if conditions and actions:
            builtins.append(Builtin(conditions, actions))
    return AutomationLexicons(
        time_words=m["time_words"], triggers=m["trigger_markers"], positions=m["positions"],
        positional_devices=m["positional_devices"], device_kinds=m["device_kinds"],
        action_verbs=m["action_verbs"], reminder_verbs=m["reminder_verbs"], super_task=m["super_task_keywords"],
        memo=m["memo_words"], once=m["once_markers"], scope_end=m["scope_end"], fillers=m["fillers"], events=m["events"],
        builtins=tuple(builtins),
        builtin_functions=Matcher.build("builtin_functions", read_entries(BUILTIN_FUNCTIONS_FILE))
        if BUILTIN_FUNCTIONS_FILE.is_file() else None,
        signal=build_signal([m[f] for f in ("time_words", "trigger_markers", "once_markers", "reminder_verbs",
                                             "super_task_keywords", "events")], m["memo_words"]),
    )


def build_signal(matchers: list[Matcher], memo: Matcher) -> Signal:
    terms = {t for m in matchers for t in m.category if t not in SIGNAL_STOP}
    terms |= {t for t, c in memo.category.items() if c in SIGNAL_MEMO or t in SIGNAL_MEMO_WORDS}
    alternatives = sorted((re.escape(t) for t in terms), key=len, reverse=True)
    return Signal(re.compile("|".join(alternatives + [_TIME_NUMBER])))
