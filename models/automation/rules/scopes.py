"""Spec 条件作用域: which actions a condition binds (默认向右绑定, 不向左回溯, 多个条件各自作用域,
复合条件完整性, ``或`` 连接多个触发条件), and the one condition text of a group."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.analysis import TextAnalysis
from fastslow.models.automation.rules.markup import EDGE_PUNCT, Span, lowered
from fastslow.models.automation.rules.words import (
    is_plain_command, is_super_task_mention, sentence_break, sequence_connector, strip_fillers,
)


@dataclass
class RawGroup:
    """Spans bound together before the rewrites: conditions, actions, durations, once markers."""

    conditions: list[Span] = field(default_factory=list)
    actions: list[Span] = field(default_factory=list)
    durations: list[Span] = field(default_factory=list)
    once: list[Span] = field(default_factory=list)
    management: bool = False  # a super-task management clause: always its own `default` group


def scope_end_between(gap: str, lex: AutomationLexicons) -> bool:
    """A scope-end word (另外, 此外, 对了: scope_end.txt, category scope_end) said between two spans that the
    tagger left outside both: 晚上八点提醒我打电话|对了现在|把空调关了 ends the condition's scope as an E span
    would; 顺便 (category weak) does not."""
    return bool(gap) and any(cat == "scope_end" for *_, cat in lex.scope_end.find(lowered(gap)))


def bind_scopes(analysis: TextAnalysis, spans: Sequence[Span]) -> list[RawGroup]:
    """Spec 条件作用域: a condition binds to the actions on its right until a new condition, a scope
    end (E span, end of sentence) or the end of the query; never to the actions on its left.

    Adjacent conditions with no action between them are one compound condition (且 / 或 / 就 ...:
    spec 复合条件完整性 and ``或`` 连接多个触发条件). A super-task management clause is its own group."""
    text, lex = analysis.text, analysis.lex
    groups: list[RawGroup] = []
    current: RawGroup | None = None
    pending_once: list[Span] = []
    last_end = 0

    def open_group(**fields) -> RawGroup:
        """A new group, taking the 执行一次 markers said before it."""
        nonlocal pending_once
        group = RawGroup(once=pending_once, **fields)
        pending_once = []
        groups.append(group)
        return group

    for span in sorted(spans, key=lambda s: s.start):
        if current is not None and (sentence_break(text, last_end, span.start)
                                    or scope_end_between(text[last_end:span.start], lex)):
            current = None
        if span.kind == "C":
            if current is not None and current.conditions and not current.actions and not current.durations:
                current.conditions.append(span)
            else:
                current = open_group(conditions=[span])
        elif span.kind == "A":
            if is_super_task_mention(span.text, lex):
                groups.append(RawGroup(actions=[span], management=True))
            else:
                if current is None:
                    current = open_group()
                current.actions.append(span)
        elif span.kind == "D":
            if current is None:
                current = open_group()
            elif not current.conditions and not current.durations and len(current.actions) > 1 \
                    and all(is_plain_command(a.text, lex) for a in current.actions[:-1]) \
                    and sequence_gap(text[current.actions[-2].end:current.actions[-1].start], lex):
                # 打开方向盘加热然后座椅加热开十五分钟: a duration lasts the action it is said with, not the whole
                # commands said before it (客厅空调|再|吹半个钟头 is one request)
                current = open_group(actions=[current.actions.pop()])
            current.durations.append(span)
        elif span.kind == "N":
            if current is None or (not current.conditions and not current.actions):
                pending_once.append(span)
            else:
                current.once.append(span)
        elif span.kind == "E":
            current = None
        last_end = span.end
    if pending_once:
        if groups:
            groups[-1].once.extend(pending_once)
        else:
            groups.append(RawGroup(once=pending_once))
    return groups


_CONDITION_TAIL = re.compile(r"(就|便|那么|则|的时候就|都|,|，)+$")


def condition_text(text: str, conditions: Sequence[Span], lex: AutomationLexicons) -> str | None:
    """Spec 复合条件完整性: one condition from the first condition span to the last, kept whole
    (且 / 或 and everything before 就 included), without the 就 (or the 都 of 每次…都) itself or edge fillers."""
    if not conditions:
        return None
    whole = text[conditions[0].start: conditions[-1].end]
    whole = strip_fillers(whole, lex)
    whole = _CONDITION_TAIL.sub("", whole) or whole  # 每次上车都 → 每次上车
    return whole or None


def sequence_gap(gap: str, lex: AutomationLexicons) -> bool:
    """Is ``gap`` (text between two spans) a pause or a sequence connector (，, 然后, 接着: connectors.txt ``break``)?"""
    if any(ch in EDGE_PUNCT and not ch.isspace() for ch in gap):
        return True
    return sequence_connector(lowered(gap).strip(EDGE_PUNCT), lex)
