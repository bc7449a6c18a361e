"""Condition signals: whether a text can hold a condition at all, and the span repairs that turn a
condition without a signal of its own (a seat, a direction, a device name) or a plain question back into a
request."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.analysis import TextAnalysis, analyse
from fastslow.models.automation.rules.markup import EDGE_PUNCT, Span, lowered
from fastslow.models.automation.rules.words import CLOCK, devices_in, has_clock


def has_condition_signal(text: str, lex: AutomationLexicons) -> bool:
    """Can ``text`` hold a condition at all (``TextAnalysis.signalled``)? 副驾座椅往后调一点 cannot (its 后 is a
    seat's); 后排有人的时候 can (的时候)."""
    return analyse(text, lex).signalled


#: the gap between a 把 clause and the action its 就 leads to (把空调打开就…, 把电视关了 呃 你就…)
_THEN = re.compile(r"^[\s，,]*(?:呃|嗯)?[\s，,]*你?就[\s，,]*$")


def ba_jiu_condition(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 条件定义 lists 把……就 as a trigger, and 复合条件完整性 makes everything before 就 the condition: an
    action span then 就 then another action is that action's condition, however the tagger read it, when it
    starts with 把 (把空调打开就把窗户关上) or holds a condition signal without starting with a verb
    (热水器水烧到设定温度就保温); a command said verb first (导航回家就…) is left to the tagger."""
    if "就" not in analysis.text:
        return list(spans)  # nearly every query
    out = list(spans)
    for k, (sp, after) in enumerate(zip(spans, spans[1:])):
        if sp.kind == "A" and after.kind == "A" and (k == 0 or spans[k - 1].kind != "C") \
                and _THEN.match(analysis.text[sp.end:after.start]) \
                and (lowered(sp.text).startswith("把") or _states_a_condition(lowered(sp.text), analysis.lex)):
            out[k] = Span("C", sp.start, sp.end, sp.text, sp.intent)
    return out


def _states_a_condition(low: str, lex: AutomationLexicons) -> bool:
    """Does ``low`` say a condition (a signal word in it) rather than a command (no verb first)?"""
    return lex.action_verbs.prefix(low) is None and bool(lex.signal(low))


def demote_signalless_conditions(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span naming a seat, direction or device with no condition signal of its own outside
    those names (副驾座椅往前挪一点, 主驾后|视镜往下调) is a plain command, not a condition: it becomes an
    action, joined to an action span that touches it. One followed by 就 / 便 / 那么 stays."""
    lex, masked = analysis.lex, analysis.masked
    if "\x00" not in masked or not any(sp.kind == "C" for sp in spans):
        return list(spans)  # no name blanked out, or no condition: nothing to demote, and nothing joins
    then = lex.triggers.terms("then")

    def names_without_signal(sp: Span) -> bool:
        follows = analysis.low[sp.end:sp.end + 2]
        return "\x00" in masked[sp.start:sp.end] and not lex.signal(masked[sp.start:sp.end]) \
            and not any(follows.startswith(t) for t in then)

    return _conditions_as_requests(analysis, spans, names_without_signal)


def _conditions_as_requests(analysis: TextAnalysis, spans: Sequence[Span], is_request) -> list[Span]:
    """The condition spans ``is_request(span)`` holds to be part of the request become actions, one with the action
    spans they touch."""
    text = analysis.text
    out: list[Span] = []
    demoted = False  # was the last span of ``out`` such a condition, or joined to one?
    for sp in spans:
        was_condition = sp.kind == "C" and is_request(sp)
        if was_condition:
            sp = Span("A", sp.start, sp.end, sp.text, sp.intent)
        if sp.kind == "A" and out and out[-1].kind == "A" and out[-1].end == sp.start and (demoted or was_condition):
            prev = out.pop()
            sp = Span("A", prev.start, sp.end, text[prev.start:sp.end], prev.intent)
            was_condition = True
        out.append(sp)
        demoted = was_condition
    return out


def numbers_with_no_time(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span whose only signal is a number said with 点 that is no clock time (FM一零三点七, 九十七点四: a
    frequency; ``has_clock``) is part of the request."""
    lex = analysis.lex
    if "点" not in analysis.low or not any(sp.kind == "C" for sp in spans):
        return list(spans)
    def no_time(sp: Span) -> bool:
        low = lowered(sp.text)
        return "点" in low and not has_clock(low) and not lex.signal(CLOCK.sub("", low))

    return _conditions_as_requests(analysis, spans, no_time)


def settings_as_requests(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span that sets a value and holds no trigger or event word (亮度调到百分之五十, 温度设成二十六度) is
    a request: the amount is what it is set to, not a threshold reached (电量到百分之二十)."""
    lex = analysis.lex
    if not any(sp.kind == "C" for sp in spans) \
            or not any(cat == "adjust" for *_, cat in analysis.found["action_verbs"]):
        return list(spans)

    def sets_a_value(sp: Span) -> bool:
        low = lowered(sp.text)
        setting = [(a, b) for a, b, _, cat in lex.action_verbs.find(low) if cat == "adjust" and _AMOUNT_NEXT.match(low, b)]
        return bool(setting) and not lex.events.find(low) and all(  # the 到 of 调到 is the verb's, no trigger
            any(a <= ta and tb <= b for a, b in setting) for ta, tb, *_ in lex.triggers.find(low))

    return _conditions_as_requests(analysis, spans, sets_a_value)


def appliances_started_as_requests(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span that is a home appliance said with the verb that starts it and no trigger word (洗衣机启动,
    净化器开启: the 启动 of a car's start is an event) is a request: the appliance is told to start."""
    lex = analysis.lex
    if not any(sp.kind == "C" for sp in spans) or not analysis.found["events"]:
        return list(spans)

    def starts_an_appliance(sp: Span) -> bool:
        low = lowered(sp.text)
        named = [(a, b) for a, b, _, kind in devices_in(low, lex) if kind == "home"]
        return bool(named) and lex.triggers.search(low) is None and any(
            low.startswith(_STARTED, b) and b == len(low.rstrip(EDGE_PUNCT)) - 2 for _, b in named)

    return _conditions_as_requests(analysis, spans, starts_an_appliance)


#: the verbs a home appliance is started with when said after it (洗衣机启动)
_STARTED = ("启动", "开启", "打开")


#: what a verb that sets a value is followed by when the value is an amount (百分之五十, 二十六度, 50, 三档)
_AMOUNT_NEXT = re.compile(r"百分之|\d|[零一二两三四五六七八九十]")


def question_as_said(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """README 如何标注 5: a question with a condition span but no request in it (今晚有什么好看的电影, 下周三限行吗,
    晚上开车的时候远光灯怎么开: questions.txt, and no reminder, once marker, super-task or memo word, nor a verb
    requested outside the condition: ``_requested``) is one plain request; its time words and triggers are what it
    asks about, never a condition."""
    lex, found = analysis.lex, analysis.found
    if lex.questions is None or not any(sp.kind == "C" for sp in spans):
        return list(spans)
    if any(sp.kind not in "CA" for sp in spans) or not found["questions"] \
            or any(_requested(analysis, spans, a, b) for a, b, *_ in found["action_verbs"]) \
            or found["reminder_verbs"] or found["super_task"] or found["once"] \
            or any(cat == "item" for *_, cat in found["memo"]):  # 明天有什么安排: a memo query
        return list(spans)
    text = analysis.text
    body = text.strip(EDGE_PUNCT)
    start = text.index(body) if body else 0
    return [Span("A", start, start + len(body), body)]


def _requested(analysis: TextAnalysis, spans: Sequence[Span], at: int, end: int) -> bool:
    """Is the action verb at ``at``…``end`` a request: in no condition span, and neither asked how (远光灯怎么开)
    nor asked where or what (去哪里玩比较好)?"""
    if any(sp.kind == "C" and sp.start <= at < sp.end for sp in spans):
        return False
    questions = analysis.found["questions"]
    asked_how = any(b == at and cat == "how" for _, b, _, cat in questions)
    asked_where = any(a == end and cat in ("where", "which", "what") for a, _, _, cat in questions)
    return not (asked_how or asked_where)
