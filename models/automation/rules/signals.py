"""Condition signals: whether a text can hold a condition at all, and the span repairs that turn a
condition without a signal of its own (a seat, a direction, a device name) or a plain question back into a
request."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.analysis import TextAnalysis, analyse
from fastslow.models.automation.rules.markup import EDGE_PUNCT, Span, lowered


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
    out: list[Span] = []
    demoted = False  # was the last span of ``out`` a demoted condition?
    for sp in spans:
        was_condition = False
        if sp.kind == "C":
            named = "\x00" in masked[sp.start:sp.end]
            follows = analysis.low[sp.end:sp.end + 2]
            if named and not lex.signal(masked[sp.start:sp.end]) and not any(follows.startswith(t) for t in then):
                sp, was_condition = Span("A", sp.start, sp.end, sp.text, sp.intent), True
        if sp.kind == "A" and out and out[-1].kind == "A" and out[-1].end == sp.start and (demoted or was_condition):
            prev = out.pop()
            sp = Span("A", prev.start, sp.end, analysis.text[prev.start:sp.end], prev.intent)
            was_condition = True
        out.append(sp)
        demoted = was_condition
    return out


def question_as_said(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """README 如何标注 5: a question with a condition span but no request in it (今晚有什么好看的电影, 下周三限行吗:
    questions.txt, and no action or reminder verb, trigger, duration, once marker, super-task or memo word) is one
    plain request; its time words are what it asks about, never a condition."""
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
