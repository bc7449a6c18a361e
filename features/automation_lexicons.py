"""The automation parser's word classes (files of ``features/lexicons/``, read by name), loaded once and frozen.

Each becomes a ``Matcher`` (``features.lexicon``): its terms found longest first in the lower-cased
text, so ``座椅加热`` wins over ``座椅`` and ``HyperTask`` matches ``hypertask``. Devices, action verbs and
triggers are the router's files too, read in their ``automation`` column. A fitted parser keeps its
``AutomationLexicons`` object, so a saved model does not change when a file does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fastslow.features.lexicon import Matcher, read_entries, resolve_lexicon, term_pattern


#: action verbs that start a new command in a run-on (打开空调|播放音乐): automation kinds of actions.txt
COMMAND_START_KINDS = frozenset({"on", "off", "media", "nav", "comm", "query"})


def starts_a_command(term: str, kind: str) -> bool:
    """Does an action verb of ``kind`` start a new command wherever it stands in a run of commands: a verb of two
    characters or more of ``COMMAND_START_KINDS`` (打开, 播放), or a reminder verb of three (提醒我)? (``command_cuts``
    also cuts at 开/关 right before a device.)"""
    return (len(term) >= 2 and kind in COMMAND_START_KINDS) or (len(term) >= 3 and kind == "remind")


@dataclass(frozen=True)
class Builtin:
    """One built-in behaviour: any condition word, and an action word in every action; ``domain`` is whose
    behaviour it is, the car's (``car``) or a home appliance's (``home``); ``bare_reminder``: a reminder is
    the behaviour only when it asks to be told no more (洗衣机洗完的时候提醒我, but not 提醒我晾衣服)."""

    condition_words: tuple[str, ...]
    action_words: tuple[str, ...]
    domain: str = "car"
    bare_reminder: bool = False


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
    manage_verbs: Matcher  # a super-task clause with one of these keeps its own verb
    habit_change: Matcher  # verbs that change, drop or inspect a named habit (删除回家习惯)
    breaks: Matcher  # connectors that split a plain command (break), or do before a verb or 把 (joiner)
    builtins: tuple[Builtin, ...]
    signal: Signal
    #: features/lexicons/builtin_functions.txt: built-in functions by class, and the safety events the car
    #: watches itself (None in parsers fitted before it existed)
    builtin_functions: Matcher | None = None
    #: features/lexicons/directions.txt: 往后 / 向前 …, whose 前/后 are no trigger (None in older parsers)
    directions: Matcher | None = None
    #: features/lexicons/condition_subjects.txt: what a state condition is about (电量, 车速): where a run-on's
    #: condition may start (None in older parsers)
    condition_subjects: Matcher | None = None
    #: features/lexicons/questions.txt: question markers (吗, 什么, 怎么样): a question without a request verb
    #: holds no condition, its time words are content (None in older parsers)
    questions: Matcher | None = None
    #: features/lexicons/connectors.txt by the router's category: its self-corrections (不对, 说错了) take back the
    #: command said before them (None in older parsers)
    connector_kinds: Matcher | None = None

    # Tables derived from the word classes once, when the object is made; the rules read them to tell at a
    # glance that a text holds none of the words a rule needs, and then leave the text as it is.

    #: the device names that hold a condition signal of their own (后视镜, 后备箱: ``signal`` of the name), whose
    #: signal is part of a name, never a condition's (derived from ``device_kinds`` and ``signal``)
    signal_devices: frozenset = field(init=False, repr=False, compare=False)
    #: one pattern of every name ``signal_text`` blanks out (seats, directions, ``signal_devices``)
    signal_names: re.Pattern | None = field(init=False, repr=False, compare=False)
    #: one pattern of the action verbs, reminder verbs and memo words: every whole command holds one of them
    command_words: re.Pattern | None = field(init=False, repr=False, compare=False)
    #: one pattern of the words a run of commands is cut before (``command_cuts``): the verbs that start a command
    #: (``starts_a_command``), seat and device names, sequence connectors (``break``)
    cut_point_words: re.Pattern | None = field(init=False, repr=False, compare=False)
    #: one pattern of the suffix triggers of two characters or more (以后, 的时候)
    long_suffix_words: re.Pattern | None = field(init=False, repr=False, compare=False)
    #: one pattern of the suffix triggers a condition said inside an action ends with (two characters or more, or 时)
    cutting_suffix_words: re.Pattern | None = field(init=False, repr=False, compare=False)
    #: one pattern of the words an action span is cut at inside (``split_inside_action``): the long suffix
    #: triggers, the scope ends and the connectors
    action_cut_words: re.Pattern | None = field(init=False, repr=False, compare=False)
    #: the prefix, suffix and soft-suffix fillers, the characters a prefix filler starts with and the characters
    #: a suffix or soft-suffix filler ends with
    filler_prefixes: frozenset = field(init=False, repr=False, compare=False)
    filler_suffixes: frozenset = field(init=False, repr=False, compare=False)
    filler_soft: frozenset = field(init=False, repr=False, compare=False)
    filler_firsts: frozenset = field(init=False, repr=False, compare=False)
    filler_lasts: frozenset = field(init=False, repr=False, compare=False)
    #: the "that will do" fillers (就行, 就好了), and the characters a hesitation (额, 那啥) starts with
    filler_dones: tuple = field(init=False, repr=False, compare=False)
    hesitation_firsts: frozenset = field(init=False, repr=False, compare=False)
    #: the characters a device or seat name starts with
    name_firsts: frozenset = field(init=False, repr=False, compare=False)
    #: the characters a day, weekday or period word starts with
    time_point_firsts: frozenset = field(init=False, repr=False, compare=False)
    #: one pattern of the ``and`` / ``or`` triggers (且, 或者) and one of every built-in behaviour's condition words
    compound_triggers: re.Pattern | None = field(init=False, repr=False, compare=False)
    builtin_condition_words: re.Pattern | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        derived = {"signal_devices": frozenset(term for term in self.device_kinds.category if self.signal(term))}
        names = {*self.positions.category, *derived["signal_devices"]}
        if self.directions is not None:
            names |= set(self.directions.category)
        derived["signal_names"] = term_pattern(names)
        derived["command_words"] = term_pattern({*self.action_verbs.category, *self.reminder_verbs.category,
                                                 *self.memo.category})
        derived["cut_point_words"] = term_pattern(
            {t for t, cat in self.action_verbs.category.items() if starts_a_command(t, cat)}
            | set(self.positions.category) | set(self.device_kinds.category) | self.breaks.terms("break"))
        suffixes = {t for t, cat in self.triggers.category.items() if cat == "suffix"}
        long_suffixes = {t for t in suffixes if len(t) >= 2}
        derived["long_suffix_words"] = term_pattern(long_suffixes)
        derived["cutting_suffix_words"] = term_pattern({t for t in suffixes if len(t) >= 2 or t == "时"})
        derived["action_cut_words"] = term_pattern(
            {*long_suffixes, *self.scope_end.category, *self.breaks.category})
        fillers = self.fillers
        derived.update(filler_prefixes=fillers.terms("prefix"), filler_suffixes=fillers.terms("suffix"),
                       filler_soft=fillers.terms("soft_suffix"),
                       filler_firsts=frozenset(t[0] for t in fillers.terms("prefix")),
                       filler_lasts=frozenset(t[-1] for t in fillers.terms("suffix", "soft_suffix")),
                       filler_dones=tuple(sorted(fillers.terms("done"))),
                       hesitation_firsts=frozenset(t[0] for t in fillers.terms("hesitation")))
        derived["name_firsts"] = frozenset(t[0] for t in (*self.device_kinds.category, *self.positions.category))
        derived["time_point_firsts"] = frozenset(
            t[0] for t, cat in self.time_words.category.items() if cat in ("day", "week", "period"))
        derived["compound_triggers"] = term_pattern(self.triggers.terms("and", "or"))
        derived["builtin_condition_words"] = term_pattern({w for b in self.builtins for w in b.condition_words})
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    #: the matchers the tagger turns into per-character features
    FEATURE_MATCHERS = ("time_words", "triggers", "positions", "device_kinds", "action_verbs",
                        "reminder_verbs", "super_task", "memo", "once", "scope_end", "fillers", "events")


#: word lists whose every word signals a possible condition, duration, once marker, reminder or super task;
#: with the memo words of ``SIGNAL_MEMO`` and ``SIGNAL_RUN_ON``, a query with none of them (and no number with a
#: time unit) is plainly unconditional. Scope ends (另外, 现在) matter only after a condition, which has its own
#: signal.
SIGNAL_MATCHERS = ("time_words", "triggers", "once", "reminder_verbs", "super_task", "events")
#: memo words that signal on their own: the items (日程, 备忘录) and 记…; a bare 加 / 查 / 设置 does not
SIGNAL_MEMO = ("item",)
SIGNAL_MEMO_WORDS = frozenset(("记", "记一下", "记下", "记录", "帮我记"))
#: a situation said with 了 running on into what works by itself, maybe after a pause or the part that works (洗衣机洗完了|
#: 自动断电, 水开了|自己断电, 人走远了|车门自己锁上, 走远了|车门自动落锁) or into the appliance's own notice (尘盒满了|告诉我);
#: or a finished work said without 了 (扫地机扫完|自动集尘, 饭煮好|自动保温): no trigger word is said, yet the text
#: holds a condition (a signal, ``Signal``), which ends where this matches (``condition_inside_action``)
RUN_ON_SELF = re.compile(r"了(?=[，,]?[\u4e00-\u9fff]{0,6}?(?:自动|自己)|(?:提醒|提示|告诉|通知)我)|(?<=[完好])(?=自动|自己)")
#: and 自己 said of what works by itself anywhere (车门自己锁上)
SIGNAL_RUN_ON = ("自己",)
#: single characters too common to signal anything on their own
SIGNAL_STOP = frozenset("一在到等点分号月日天秒")
_CN = "零一二两三四五六七八九十百半几"
_TIME_NUMBER = (rf"(?:\d+|[{_CN}]+)\s*(?:个)?(?:分钟|小时|钟头|秒|号|%|度)|%|百分之"
                rf"|(?:\d+|[{_CN}]{{2,}}|[零二两三四五六七八九十])点|一点(?:钟|半|\d|[{_CN}]+分)|\d{{1,2}}:\d\d")

_TIME_NUMBER_RE = re.compile(_TIME_NUMBER)
#: a character every match of ``_TIME_NUMBER`` holds (a digit, %, or a Chinese numeral: 百 of 百分之, 一 of 一点):
#: a text without one (most plain requests) is answered with one character-class search
_NUMERAL = re.compile(rf"[\d%{_CN}]")
#: and a character of its units or marks every match holds as well (分 of 分钟 and 百分之, 时 of 小时, 钟 of 钟头, 点, :):
#: a text with a numeral but none of them (调到二档, 打开一下) is answered without the shapes' search
_TIME_MARK = re.compile(r"[分时钟秒号%度点:]")


@dataclass(frozen=True)
class Signal:
    """One regular expression for "might this query hold more than plain unconditional actions?".

    ``pattern`` is the definition: any of ``terms``, the time/number shapes or a situation running on into what
    works by itself (``RUN_ON_SELF``). A call answers with the terms' trie (``words``, built with the signal),
    the short time/number expression (a regular expression of a thousand alternatives tries them at every
    position) and ``RUN_ON_SELF``; the answer is the same, which a test holds."""

    pattern: re.Pattern
    terms: tuple[str, ...]  # the literal alternatives of ``pattern``
    words: re.Pattern | None = field(init=False, repr=False, compare=False)  # ``term_pattern(terms)``

    def __post_init__(self):
        object.__setattr__(self, "words", term_pattern(self.terms))

    def __call__(self, lowered_text: str) -> bool:
        return (self.words is not None and self.words.search(lowered_text) is not None) or (
            _NUMERAL.search(lowered_text) is not None and _TIME_MARK.search(lowered_text) is not None
            and _TIME_NUMBER_RE.search(lowered_text) is not None) or RUN_ON_SELF.search(lowered_text) is not None


#: each matcher of ``AutomationLexicons``: its lexicon file (by name) and column (None: the first)
MATCHER_FILES = {
    "time_words": ("time_words", None), "triggers": ("triggers", "automation"), "positions": ("positions", None),
    "positional_devices": ("positional_devices", None), "device_kinds": ("devices", "automation"),
    "action_verbs": ("actions", "automation"), "reminder_verbs": ("reminder_verbs", None),
    "super_task": ("super_task_keywords", None), "memo": ("memo_words", None), "once": ("once_markers", None),
    "scope_end": ("scope_end", None), "fillers": ("fillers", None), "events": ("events", None),
    "manage_verbs": ("manage_verbs", None), "habit_change": ("manage_verbs", "habit_change"),
    "breaks": ("connectors", "automation"), "builtin_functions": ("builtin_functions", "automation"),
    "directions": ("directions", None), "condition_subjects": ("condition_subjects", None),
    "questions": ("questions", None), "connector_kinds": ("connectors", None),
}


def load_automation_lexicons(lexicon_dir: str | Path | None = None) -> AutomationLexicons:
    """Read every automation word class of ``lexicon_dir`` (default: the bundled lexicons)."""
    folder = Path(lexicon_dir) if lexicon_dir else None
    m = {name: Matcher.load(file, column, folder) for name, (file, column) in MATCHER_FILES.items()}
    builtins = []
    behaviours = resolve_lexicon("builtin_behaviours", folder)
    domains = dict(read_entries(behaviours, "domain"))
    reminders = dict(read_entries(behaviours, "reminder"))
    for term, category in read_entries(behaviours, "actions"):
        conditions = tuple(w for w in term.split("|") if w)
        actions = tuple(w.strip().lower() for w in category.split("|") if w.strip())
        if conditions and actions:
            builtins.append(Builtin(conditions, actions, domains.get(term, "car"), reminders.get(term) == "bare"))
    return AutomationLexicons(
        **m, builtins=tuple(builtins),
        signal=build_signal([m[f] for f in SIGNAL_MATCHERS], m["memo"]),
    )


def build_signal(matchers: list[Matcher], memo: Matcher) -> Signal:
    terms = {t for m in matchers for t in m.category if t not in SIGNAL_STOP}
    terms |= {t for t, c in memo.category.items() if c in SIGNAL_MEMO or t in SIGNAL_MEMO_WORDS}
    terms |= set(SIGNAL_RUN_ON)
    ordered = tuple(sorted(terms, key=lambda t: (-len(t), t)))  # deterministic order
    return Signal(re.compile("|".join([re.escape(t) for t in ordered] + [_TIME_NUMBER, RUN_ON_SELF.pattern])), ordered)
