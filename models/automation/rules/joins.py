"""Span repairs that join what the tagger cut apart: a verb and its object, a 把 and its verb, a device and
what it does by itself, and the words a condition took from the command before it."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.analysis import TextAnalysis
from fastslow.models.automation.rules.builtin import function_prefix
from fastslow.models.automation.rules.markup import EDGE_PUNCT, Span, lowered
from fastslow.models.automation.rules.starts import condition_starts, spoken_condition_starts
from fastslow.models.automation.rules.words import (
    devices_in, has_time_expression, has_verb, is_bare_device, is_fragment, is_plain_command, is_super_task_mention,
    management_after_command, only_fillers, sequence_connector, strip_fillers, takes_place,
)

_BA_LEAD = re.compile(r"把(?:那个|这个)?$")
_PAUSE_OR_SPACE = re.compile(r"[，,。；;！!？?\s]")
_OBJECT_JOINERS = frozenset({"和", "与", "及", "跟", "以及", "还有", "、"})
#: words that make what is said before them the name of the habit after them (把上班放音乐|那个|习惯删掉)
_NAMING = ("那个", "这个", "那条", "这条")


def join_split_object(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A run-on cut at the wrong place between a command and the condition after it (spans in text order):
    a command ending in a verb that takes a place (``takes_place``: 打开导航|回家到小区门口的时候) gets its
    object back when the condition holds a later start of its own and does not open with a prefix trigger
    (把座椅加热打开|等我上车的时候); a command ending in the word a spoken
    condition starts with (暂停音乐进|停车场的时候: condition_subjects.txt, ``start``) or in what a state is
    about (打开空调车内温度降|到二十二度的时候) gives it to the condition. Nothing moves across a pause or when
    what would be left is no whole command."""
    text, lex = analysis.text, analysis.lex
    out = sorted(spans, key=lambda sp: sp.start)
    for k in range(len(out) - 1):
        sp, nxt = out[k], out[k + 1]
        if sp.kind != "A" or nxt.kind != "C" or nxt.start != sp.end:
            continue
        low = lowered(sp.text)
        moved = False
        if takes_place(low, lex) and 0 not in condition_starts(lowered(nxt.text), lex, events=False):
            both = lowered(sp.text + nxt.text)  # (a condition said with its own trigger first, 等我上车的时候, is whole)
            for p in sorted(set(condition_starts(both, lex, events=True)) | set(spoken_condition_starts(both, lex))):
                if p > len(sp.text) and nxt.text[p - len(sp.text):].strip() and is_plain_command(both[:p], lex) \
                        and not takes_place(both[:p], lex):
                    m = sp.start + p
                    out[k] = Span("A", sp.start, m, text[sp.start:m], sp.intent)
                    out[k + 1] = Span("C", m, nxt.end, text[m:nxt.end], nxt.intent)
                    moved = True
                    break
        if moved or lex.condition_subjects is None:
            continue
        for a, b, _, cat in lex.condition_subjects.find(low):
            # 暂停音乐进|停车场的时候 (a start word at the end), 打开空调车内温度降|到二十二度的时候 (what the
            # state is about and what follows it)
            if (b == len(low) or cat != "start") and a > 0 and is_plain_command(sp.text[:a], lex) \
                    and not takes_place(low[:a], lex):
                m = sp.start + a
                out[k] = Span("A", sp.start, m, text[sp.start:m], sp.intent)
                out[k + 1] = Span("C", m, nxt.end, text[m:nxt.end], nxt.intent)
                break
    return out


#: what joins a super task's name to its keyword (离家|那个|智能场景), and the keyword to a name said after it
#: (小米任务|里那个|下班回家的先关一下)
_NAME_BEFORE = frozenset({"那个", "这个", "的那个", "的", "那条", "这条"})
_NAME_AFTER = re.compile(r"(?:里|中|里面|里的)?(?:那个|这个|那条|这条)")
_IN_IT = re.compile(r"(?:里|中|里面|里的)?")


def named_super_task(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 超级任务 (明确修改/删除/取消某个已命名习惯或规则): a super task managed by what it does, its manage
    verb, its name and its keyword are one request (编辑一下离家|那个|智能场景, 关闭下班回家那个小米任务,
    小米任务里那个下班回家的先关一下), not a command and a new super task. The tagger's action span before the
    keyword starts with a manage verb (manage_verbs.txt) and only a naming word lies between them; or the keyword
    comes first with 里那个 after it, and what the spans after it do is done to that super task."""
    lex, low = analysis.lex, analysis.low
    if lex.super_task.search(low) is None:
        return list(spans)
    out = sorted(spans, key=lambda sp: sp.start)
    for a, b, _, cat in analysis.found["super_task"]:
        # the keyword said on its own: in no span, or in an action span of its own (小米任务, 小米任务里)
        if cat != "keyword" or any(sp.kind != "A" or _IN_IT.fullmatch(lowered(sp.text).strip()[b - a:]) is None
                                   for sp in out if sp.start <= a < sp.end):
            continue
        out = [sp for sp in out if not (sp.start <= a and b <= sp.end)]
        before = [sp for sp in out if sp.end <= a]
        if before and before[-1].kind == "A" and low[before[-1].end:a] in _NAME_BEFORE \
                and lex.manage_verbs.prefix(lowered(before[-1].text)):
            sp = before[-1]
            out[out.index(sp)] = Span("A", sp.start, b, analysis.text[sp.start:b], sp.intent)
            continue
        named = _NAME_AFTER.match(low, b)
        after = [sp for sp in out if sp.start >= b]
        if named and after and any(has_verb(sp.text, lex) for sp in after):
            end = max(sp.end for sp in after)
            out = [sp for sp in out if sp.start < b] + [Span("A", a, end, analysis.text[a:end])]
            continue
        out = sorted(out + [sp for sp in spans if sp.start <= a and b <= sp.end], key=lambda sp: sp.start)
    return out


#: what may lie between a super task named alone and the change said of it after a pause (先, 就)
_BEFORE_CHANGE = re.compile(r"^[\s，,]*(?:先|就|再)?$")


def change_after_super_task(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 超级任务: a super task named alone (把睡眠那个自定义场景, 小米任务大师里面的离家模式) and, after a pause, the
    change said of it with no device of its own (重命名成晚安, 先停用一下) are one management request, not a new
    super task and a bare command."""
    lex = analysis.lex
    if lex.super_task.search(analysis.low) is None:
        return list(spans)
    out: list[Span] = []
    for sp in spans:
        prev = out[-1] if out else None
        if prev is not None and prev.kind == "A" and sp.kind == "A" \
                and _BEFORE_CHANGE.match(analysis.text[prev.end:sp.start]) \
                and is_super_task_mention(prev.text, lex) \
                and not lex.manage_verbs.prefix(lowered(prev.text).lstrip("把")) \
                and lex.manage_verbs.prefix(lowered(strip_fillers(sp.text, lex))) and not devices_in(sp.text, lex):
            out[-1] = Span("A", prev.start, sp.end, analysis.text[prev.start:sp.end], prev.intent)
            continue
        out.append(sp)
    return out


def join_fragments(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Two action spans that touch (or have only a filler between them: 把钓鱼出行|那个|习惯删掉), one of them
    a fragment (``is_fragment``: 打开|导航回家, 把窗帘|拉上), are one action; and the words a condition span took
    from the action before it (把空调调到|二十三度电量低于三十的时候) go back to that action when they complete it."""
    text, lex = analysis.text, analysis.lex
    has_ba = "把" in text  # every lead holds it
    out: list[Span] = []
    for sp in spans:
        prev = out[-1] if out else None
        if sp.kind == "A" and has_ba:  # 把那个|叫露营的自动化停掉: a 把 (and its demonstrative) left outside starts the action
            lo = prev.end if prev is not None else 0
            lead = _BA_LEAD.search(text[lo: sp.start])
            if lead:
                sp = Span("A", lo + lead.start(), sp.end, text[lo + lead.start(): sp.end], sp.intent)
        if prev is not None and prev.kind == "A" and sp.kind == "A":
            sp = _after_joiner(text, prev, sp)
        if prev is not None and prev.kind == "A" and only_fillers(text[prev.end:sp.start], lex):
            gap = lowered(text[prev.end:sp.start].strip(EDGE_PUNCT))
            if sp.kind == "A" and management_after_command(prev.text, sp.text, lex):
                pass  # 关闭所有的灯|把这个存成智能场景: a whole command, then the clause that saves it
            elif sp.kind == "A" and gap and lex.reminder_verbs.prefix(lowered(sp.text)) and sequence_connector(gap, lex):
                pass  # 仪表上亮灯|并且|提醒我: a reminder after a sequence connector is its own request
            elif sp.kind == "A" and (is_fragment(prev.text, lex) or is_fragment(sp.text, lex)
                                     or second_object(text[prev.end:sp.start], prev.text, sp.text, lex)
                                     or (prev.text.startswith("把") and is_super_task_mention(sp.text, lex)
                                         and (not is_plain_command(prev.text, lex)
                                              or _names_it(text[prev.end:sp.start] + sp.text, prev.text)))
                                     or _said_to_happen_by_itself(prev.text, sp.text, lex)):
                out[-1] = Span("A", prev.start, sp.end, text[prev.start:sp.end], prev.intent)
                continue
            if sp.kind == "C" and not _PAUSE_OR_SPACE.search(text, prev.end, sp.start):
                # 关掉电视|机我睡着以后: 我 starts the condition, 机 completes the command (never across a pause:
                # 打开空调，|车里降到二十四度的时候); a seat said before the event is who it happens to
                # (打开主驾座椅加热|副驾上车时), never the command's
                low_c = lowered(sp.text)
                for p in sorted(set(condition_starts(low_c, lex, events=True)) | set(spoken_condition_starts(low_c, lex))):
                    took = sp.text[:p]
                    # 把空调调|到二十三度电量…: the 到 is the complement of the verb before it, no trigger
                    said = took[1:] if took.startswith("到") and takes_place(prev.text, lex) else took
                    if p > 0 and not has_time_expression(took, lex) and not lex.triggers.search(lowered(said)) \
                            and not lex.events.search(lowered(took)) and not is_super_task_mention(prev.text, lex) \
                            and lex.positions.prefix(lowered(took)) != lowered(took) \
                            and is_plain_command(prev.text + took, lex):
                        m = sp.start + p
                        out[-1] = Span("A", prev.start, m, text[prev.start:m], prev.intent)
                        sp = Span("C", m, sp.end, text[m:sp.end], sp.intent)
                        break
        if prev is not None and prev.kind == "C" and sp.kind == "A" and sp.start == prev.end \
                and _object_of_condition(prev.text, sp.text, lex):
            out[-1] = Span("C", prev.start, sp.end, text[prev.start:sp.end], prev.intent)
            continue
        out.append(sp)
    return out


#: a condition that ends in a verb of moving somewhere, waiting for the place (出了, 开进, 离开)
_CONDITION_WANTS_PLACE = re.compile(r"(?:出|进|到|过|离开|回)了?$")
#: how long a place said after such a condition may be (地库, 小区, 收费站)
_PLACE_CHARS = 4


def _object_of_condition(condition: str, action: str, lex: AutomationLexicons) -> bool:
    """Is ``action``, touching the condition before it, the place that condition's verb of moving waits for
    (出了|地库, 开进|小区): a few characters with no verb, device or time, so no request of its own?"""
    low = lowered(action)
    return (len(low) <= _PLACE_CHARS and _CONDITION_WANTS_PLACE.search(lowered(condition)) is not None
            and not has_verb(low, lex) and not devices_in(low, lex) and not has_time_expression(low, lex))


def second_object(gap: str, before: str, after: str, lex: AutomationLexicons) -> bool:
    """A verb with two objects is one action span. ``after`` is a bare device joined to a verb-first ``before``
    by 和 / 与 / 、 (打开座椅通风|和|方向盘加热); 打开氛围灯和解锁车门 has two verbs. The span becomes one subquery
    per device later (``rewrites.shared_verb_split``)."""
    return (gap.strip(" ") in _OBJECT_JOINERS and is_bare_device(after, lex)
            and bool(lex.action_verbs.prefix(lowered(strip_fillers(before, lex)))))


def _names_it(after: str, before: str) -> bool:
    """Is the 把-request ``before`` the name of the super task or habit ``after`` it (把上车开空调|那个习惯删了,
    把下班关窗的|智能场景停掉)? A request said whole before a habit would need no 那个 or 的."""
    return after.startswith(_NAMING) or before.endswith("的")


def _after_joiner(text: str, prev: Span, sp: Span) -> Span:
    """The second of two action spans, started after the joiner between them when the tagger began it inside
    a word (打开车库门|和玄|关灯: the object is 玄关灯, not 关灯)."""
    gap = text[prev.end:sp.start]
    if not gap:
        return sp  # spans that touch (most of them)
    for joiner in _OBJECT_JOINERS:
        if gap.startswith(joiner) and len(gap) > len(joiner) and not _PAUSE_OR_SPACE.search(gap):
            start = prev.end + len(joiner)
            return Span("A", start, sp.end, text[start:sp.end], sp.intent)
    return sp


def _said_to_happen_by_itself(before: str, after: str, lex: AutomationLexicons) -> bool:
    """A bare device or function said first and what it does by itself after it (车窗|自动升上去,
    哨兵模式|自动录像): one action, the subject of its own verb."""
    functions = lex.builtin_functions
    if functions is None or not (is_bare_device(before, lex) or lowered(before) in functions.category):
        return False
    head = function_prefix(lowered(after), lex)
    return bool(head) and functions.category.get(head) == "self"


#: what opens the words a message or a reminder is to say (发个微信说, 跟他说, 提醒我告诉)
_SAYS = ("说", "告诉")


def message_content_as_said(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """What a message or a reminder is to say is its content, whatever it holds: a duration or a condition the
    tagger found right after the command that says it (给老王发个微信说我晚到|二十分钟, 发消息给老婆说|我半小时后到家)
    joins that command. Only with nothing between them: across a pause or a connector (再, 然后) the next span is
    a request of its own."""
    text, lex = analysis.text, analysis.lex
    out = sorted(spans, key=lambda sp: sp.start)
    k = 0
    while k < len(out) - 1:
        sp, nxt = out[k], out[k + 1]
        if sp.kind == "A" and nxt.kind in "CD" and nxt.start == sp.end and _says(sp.text, lex):
            out[k] = Span("A", sp.start, nxt.end, text[sp.start:nxt.end], sp.intent)
            del out[k + 1]
            continue
        k += 1
    return out


def _says(action: str, lex: AutomationLexicons) -> bool:
    """Does ``action`` send a message or set a reminder (actions.txt, automation ``comm`` / ``remind``) and then
    start what it is to say (``_SAYS``)?"""
    low = lowered(action)
    at = max(low.rfind(word) for word in _SAYS)
    return at > 0 and any(cat in ("comm", "remind") and b <= at for a, b, _, cat in lex.action_verbs.find(low))
