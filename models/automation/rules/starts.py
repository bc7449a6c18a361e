"""Where a condition can start or end inside one span: what the splitting and joining span repairs ask
before they move a span's edge."""

from __future__ import annotations

import re

from fastslow.features.automation_lexicons import RUN_ON_SELF, AutomationLexicons
from fastslow.models.automation.rules.builtin import builtin_function_action
from fastslow.models.automation.rules.edges import inner_suffix_ends
from fastslow.models.automation.rules.markup import lowered
from fastslow.models.automation.rules.analysis import signal_text
from fastslow.models.automation.rules.words import (
    CLOCK, RUN_ON_SHORT, comparison_prefix, has_clock, is_plain_command, may_hold_command, time_prefix,
)

#: 不到, 没到, 快到, 要到: the word is part of the state said before it, no condition starts there
_BEFORE_NO_START = frozenset("不没快要将还已")


def condition_starts(low: str, lex: AutomationLexicons, events: bool, compared: bool = False) -> list[int]:
    """Where a condition can begin inside ``low``: a prefix trigger (如果, 要是, 等, 当 …; not 到 / 在 / 一,
    which are too often part of a request: 调到, 在家) and, if ``events``, an event word (到公司, 快到; and the
    one right after an event word that overlaps it, 到家 of 打开到家, whose 开到 the matcher finds first) or
    what a state condition is about (电量, 车速: condition_subjects.txt); if ``compared`` too, a comparison
    said without its subject (关掉空调|低于百分之十时: category ``compared``), which only starts a condition
    after a whole command (in 车里|超过三十度的时候 the words before it are its subject)."""
    starts = [a for a, b, term, cat in lex.triggers.find(low) if cat == "prefix" and (b - a >= 2 or term in RUN_ON_SHORT)]
    if events:
        found = lex.events.find(low)
        if found:  # an event word whose first character ends a verb (打开到家: 开到 of 打开) hides the one after it
            verb_ends = {b for a, b, *_ in lex.action_verbs.find(low) if b - a >= 2}
            starts += [a + 1 for a, *_ in found if a + 1 in verb_ends and lex.events.prefix(low[a + 1:])]
            starts += [a for a, *_ in found]
        if lex.condition_subjects is not None:  # start words: ``spoken_condition_starts``
            starts += [a for a, _, _, cat in lex.condition_subjects.find(low)
                       if cat not in ("start", "compared") or (compared and cat == "compared")]
    return sorted(set(starts))


def spoken_condition_starts(low: str, lex: AutomationLexicons) -> list[int]:
    """Where a condition span that begins with a whole command may start its condition, beyond the trigger and
    event words: a word people start a spoken condition with, no trigger on its own (到, 进, 我:
    condition_subjects.txt, category ``start``), never inside a trigger or an event word (快到, 不到)."""
    if lex.condition_subjects is None:
        return []
    found = lex.condition_subjects.find(low)
    words = [(a, b) for a, b, *_ in lex.triggers.find(low) + lex.events.find(low)]
    words += [(a, b) for a, b, _, cat in found if cat != "start"]
    return [p for p, _, _, cat in found if cat == "start" and not any(a < p < b for a, b in words)
            and not (p > 0 and low[p - 1] in _BEFORE_NO_START)]


def time_starts(low: str, lex: AutomationLexicons) -> list[int]:
    """Where a time point begins in ``low``: a day, weekday or period word (明天, 周五, 晚上) or a clock time."""
    starts = [a for a, _, _, cat in lex.time_words.find(low) if cat in ("day", "week", "period")]
    return starts + [m.start() for m in CLOCK.finditer(low) if has_clock(m.group())]


def ends_in_suffix_trigger(low: str, lex: AutomationLexicons) -> bool:
    """Does ``low`` end with a suffix trigger of two characters or more (以后, 的时候, 之后)?"""
    return any(e == len(low) and e - a >= 2 and cat == "suffix" for a, e, _, cat in lex.triggers.find(low))


def without_trailing_connector(text: str, lex: AutomationLexicons) -> str:
    """``text`` less a sequence connector it ends with (然后, 并且, 接着: connectors.txt, automation ``break``)."""
    low = lowered(text)
    for a, b, _, cat in lex.breaks.find(low):
        if b == len(low) and a > 0 and cat == "break":
            return text[:a]
    return text


def trailing_command_start(condition: str, lex: AutomationLexicons) -> int | None:
    """Where a whole command starts right after a suffix trigger inside a condition span: the command runs
    to the span's end (下班的时候|放点音乐) or to a condition after it (车速超过一百的时候|把音量调高|车速低于…).
    After a time point said first, a whole command starts only where another time point follows it (早上七点|
    开窗帘|晚上十点: spec 不向左回溯, the second time binds the command after it)."""
    low = lowered(condition)
    said_first = time_prefix(low, lex)
    if 0 < said_first < len(low):
        rest = condition[said_first:]
        if any(0 < p and is_plain_command(rest[:p], lex) and time_prefix(low[said_first + p:], lex)
               for p in time_starts(low[said_first:], lex)):
            return said_first
    for e in inner_suffix_ends(condition, lex):
        rest = condition[e:]
        if not may_hold_command(rest, lex):
            continue  # no verb, reminder or memo word after the trigger: no whole command in any piece of it
        if is_plain_command(rest, lex):
            return e
        for p in condition_starts(lowered(rest), lex, events=True, compared=True):
            if p > 0 and is_plain_command(rest[:p], lex):
                return e
    return None


def condition_inside_action(action: str, lex: AutomationLexicons) -> int | None:
    """Where the condition ends in a first action span that holds one (前方有行人突然横穿时|自动紧急制动): after a
    suffix trigger (时, 的时候, 以后) with no whole command before it and a command or a built-in function
    after it, or after a state compared with an amount said first with no trigger (室内温度高于二十六度|开空调, and
    on to a second comparison: …|开空调|低于二十二度关空调), or after the 了 of a known built-in behaviour's
    situation that runs on into what works by itself or its own notice (洗衣机洗完了|自动断电, 尘盒满了|告诉我:
    builtin_behaviours.txt). None when the span is one request (打开空调,
    查一下明天什么时候下雨), or holds none of those triggers (``lex.cutting_suffix_words``)."""
    low = lowered(action)
    said = RUN_ON_SELF.search(low)  # 洗衣机洗完了|自动断电: a known situation right before 了, running on into 自动
    if said and lex.builtin_condition_words is not None and not lex.action_verbs.prefix(low) and any(
            m.end() in (said.start(), said.end()) for m in lex.builtin_condition_words.finditer(low[:said.end()])):
        return said.end()
    compared = comparison_prefix(low, lex)  # 室内温度高于二十六度|开空调: a state said first, with no trigger
    if 0 < compared < len(low):
        rest = action[compared:]
        if is_plain_command(rest, lex) or any(
                0 < p and is_plain_command(rest[:p], lex) and comparison_prefix(low[compared + p:], lex, subject=False)
                for p in condition_starts(low[compared:], lex, events=True, compared=True)):
            return compared
    if lex.cutting_suffix_words is None or lex.cutting_suffix_words.search(low) is None:
        return None
    for _, e, term, cat in lex.triggers.find(signal_text(action, lex)):
        if cat != "suffix" or e >= len(action) or len(term) < 2 and term != "时":
            continue
        before, rest = action[:e], action[e:]
        if is_plain_command(before, lex) or lex.action_verbs.prefix(lowered(before)) \
                or lex.reminder_verbs.search(lowered(before)):
            return None
        if is_plain_command(rest, lex) or builtin_function_action(rest, lex) or lex.reminder_verbs.prefix(lowered(rest)):
            return e
    return None

