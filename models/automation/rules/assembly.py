"""Assembly: the spec's groups ``{"condition": str | "default" | None, "querys": [{"subquery", "intent"}]}``
of a text, from its repaired spans (scopes bound, every rewrite applied) or, for a text without any condition
signal, from its plain pieces."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.features.split import join_actionless, pieces_between
from fastslow.models.automation.rules.analysis import TextAnalysis
from fastslow.models.automation.rules.builtin import DEFAULT, builtin_domain, is_reminder
from fastslow.models.automation.rules.markup import Span, lowered
from fastslow.models.automation.rules.rewrites import (
    COMMUNICATION, DURATION, add_missing_verb, clean_subquery, duration_action, duration_condition, inherit_location,
    once_condition, remind_say, reminder_from_noun, rewrite_reminder, shared_verb_split, super_task_clause,
    unconditional_kind, without_once,
)
from fastslow.models.automation.rules.scopes import RawGroup, bind_scopes, condition_text
from fastslow.models.automation.rules.splits import command_cuts
from fastslow.models.automation.rules.words import (
    devices_in, has_time_expression, has_verb, is_bare_device, is_super_task_mention, is_switch_verb,
    plain_breaks,
)

INTENT_SYSTEM = "系统控制"
INTENT_REMINDER = "提醒"
INTENT_VEHICLE = "车载控制"
INTENT_DEVICE = "设备控制"


@dataclass
class Group:
    """A group before intents: condition, subqueries, and what the rules found out about each."""

    condition: str | None
    subqueries: list[str]
    kinds: list[str]  # per subquery: "system" (super task), "memo", "reminder", "vehicle" (the car's built-in behaviour),
    # "appliance" (a home appliance's) or ""
    span_intents: list[str | None]
    builtin: bool = False
    #: where in the parser's text the spans it was made from lie (start, end): the range its confidence is read
    #: over; None until ``plan_groups`` sets it
    bounds: tuple[int, int] | None = None


def rewrite_group(analysis: TextAnalysis, raw: RawGroup) -> list[Group]:
    """One raw group → one or more groups, every rewrite rule applied in the spec's order."""
    text, lex = analysis.text, analysis.lex
    if raw.management:
        span = raw.actions[0]
        return [Group(DEFAULT, [super_task_clause(clean_subquery(span.text, lex), lex)], ["system"], [span.intent])]
    condition = condition_text(text, raw.conditions, lex)
    once = bool(raw.once)
    if condition:
        condition, said = without_once(condition, lex)
        once = once or said
    actions, intents = [], []
    for span in raw.actions:
        cleaned, said = without_once(clean_subquery(span.text, lex), lex)
        once = once or said
        if (condition or len(raw.actions) > 1) and lowered(cleaned) in lex.fillers.terms("suffix"):
            continue  # a polite tail said after the request (关上车窗好吗) is no request of its own
        if cleaned:
            for action in shared_verb_split(add_missing_verb(reminder_from_noun(cleaned, lex), lex), lex):
                actions.append(action)
                intents.append(span.intent)
    if raw.durations:
        actions = [duration_action(a, lex) for a in actions]
        durations = [clean_subquery(d.text, lex) for d in raw.durations]
        condition = duration_condition(condition, [d for d in durations if d])
    if once:
        condition = once_condition(condition)
    if condition:
        pairs = []
        for action, intent in zip(actions, intents):
            action = remind_say(rewrite_reminder(action, lex), lex)
            for inherited in inherit_location(condition, [action], lex):
                pairs.append((inherited, intent))
        subs = [a for a, _ in pairs]
        domain = builtin_domain(condition, subs, lex)
        builtin_kind = {"car": "vehicle", "home": "appliance"}.get(domain, "")
        kinds = ["reminder" if is_reminder(a) else builtin_kind for a in subs]
        return [Group(condition, subs, kinds, [i for _, i in pairs], domain is not None)]
    # no condition: default (super-task / memo management) or null, split into runs in text order
    groups: list[Group] = []
    for action, intent in zip(actions, intents):
        kind = unconditional_kind(action, lex)
        sub_kind = "" if kind is None else ("system" if is_super_task_mention(action, lex) else "memo")
        if groups and groups[-1].condition == kind:
            groups[-1].subqueries.append(action)
            groups[-1].kinds.append(sub_kind)
            groups[-1].span_intents.append(intent)
        else:
            groups.append(Group(kind, [action], [sub_kind], [intent]))
    return groups


def missing_super_task_clauses(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 超级任务: a super-task keyword that no span covers still yields its management clause."""
    text = analysis.text
    if analysis.lex.super_task.search(analysis.low) is None:
        return []  # no super-task word at all (most texts)
    covered = [(s.start, s.end) for s in spans]
    extra = []
    for a, b, _, cat in analysis.found["super_task"]:
        if cat == "keyword" and not any(s <= a and b <= e for s, e in covered):
            extra.append(Span("A", a, b, text[a:b]))
    return extra


_TRIGGER_WORDS = re.compile(r"如果|要是|假如|一旦|只要|每当|每次|的时候|时候")


_MEMO_EDITS = frozenset({"delete", "modify", "query"})


_REMIND_SOMEONE = re.compile(r"提醒(一下)?(我|你|他|她|大家)|叫(醒)?我|喊我|通知(一下)?我|告诉我")


def memo_edit_group(text: str, lex: AutomationLexicons) -> Group | None:
    """Spec default: deleting, changing or looking up a memo-like item, as one subquery.

    The words that pick the item are part of it, not a condition or a second action: in
    删掉昨天建的那个提醒 or 把下午那个提醒删了, 昨天/下午 date the item, 把 starts no trigger, 那个 splits
    nothing. So a query whose first memo verb deletes, changes or looks up (not 提前, which sets
    a reminder's lead time) and that names a memo item, with no trigger word, is one ``default``
    group of the whole cleaned request; None for anything else."""
    low = lowered(text)
    if lex.memo.search(low) is None:
        return None  # no memo word at all (most queries)
    if _TRIGGER_WORDS.search(low) or COMMUNICATION.search(low) or _REMIND_SOMEONE.search(low):
        return None  # a trigger, a message (发消息说会议推迟) or a new reminder (提醒我检查胎压)
    found = lex.memo.find(low)
    verbs = [(a, term, cat) for a, _, term, cat in found if cat != "item"]
    if not verbs or verbs[0][2] not in _MEMO_EDITS or verbs[0][1] == "提前":
        return None
    at = verbs[0][0]
    if lex.reminder_verbs.prefix(low[at:]) and has_time_expression(text[:at], lex):
        return None  # 每天早上八点|念一下今天的日程: read out at a time said first, a reminder with its condition
    if is_super_task_mention(text, lex):
        return None  # a named rule or habit (取消洗车提醒这条规则) is super-task management, not a memo
    if not any(cat == "item" for *_, cat in found):
        return None
    action = clean_subquery(text, lex)
    return Group(DEFAULT, [action], ["memo"], [None]) if action else None


_DEMONSTRATIVES = ("那个", "那条", "这个", "这条")
_TASK_WORD = r"(?:超级|智能|自定义|自动化)?(?:场景|自动化|规则|习惯|任务|联动)"
#: an automation the user set before, named by what it does: 下班开空调那个场景, 早上放新闻的那个规则, 那个周末洗车的任务,
#: or inside the super task that holds it (hypertask里那个离家关灯的)
_DESCRIBED_TASK = re.compile(rf"(?:{'|'.join(_DEMONSTRATIVES)})(?:[^，,。；;]{{1,12}}的)?{_TASK_WORD}"
                             r"|(?:hypertask|hypermind|任务大师|小米任务|超级任务|自动化|智能场景|智能习惯)(?:里面|里|中)的?(?:那个|那条)")
#: the same named by what it does alone, with no 那个 (晚上十点关灯的规则删了): only a change said after it makes it one
#: (建一个离家关掉所有灯的场景 creates one)
_DESCRIBED_ALONE = re.compile(rf"[^，,。；;]{{2,12}}的{_TASK_WORD}")
#: a change said first, right before such a description (取消早上放新闻的习惯, 帮我删除回家开空调的规则)
_TASK_CHANGE_FIRST = re.compile(r"(?:帮我|请|麻烦)?(?:取消|删掉|删除|去掉|暂停|停掉|停用|禁用|恢复|启用)(?:掉|一下)?")
#: what is done to it: dropped, paused, changed (改成, 改到七点半), brought back or asked after
_TASK_CHANGE = re.compile(r"不要了|不用了|删掉|删了|删除|去掉|取消|暂停|停掉|停了|停用|禁用|关掉|关了|关闭|换成|改成|改为|改到|挪到|恢复|启用"
                          r"|重新打开|重新开启|还在吗|还在不在|还有吗|还有没有")


def described_task_group(text: str, lex: AutomationLexicons) -> Group | None:
    """Spec default (超级任务 management): dropping, pausing or changing an automation the user set before,
    named by what it does instead of by a keyword (上周设的下班开空调那个场景不要了, 回家开灯那个自动化换成开
    落地灯, 暂停早上放新闻的那个规则, 取消早上放新闻的习惯), as one ``default`` group of the whole cleaned request (系统控制). The
    condition and command said inside the description name the task; they set up nothing new."""
    low = lowered(text)
    described = _DESCRIBED_TASK.search(low)
    if described is None or _TASK_CHANGE.search(low) is None:
        alone = _DESCRIBED_ALONE.search(low)
        first = _TASK_CHANGE_FIRST.match(low)
        if (alone is None or _TASK_CHANGE.search(low, alone.end()) is None) \
                and (first is None or _DESCRIBED_ALONE.fullmatch(low, first.end()) is None):
            return None
    action = clean_subquery(text, lex)
    if described is not None and low.startswith(_DEMONSTRATIVES, described.start()):
        said = text[described.start():described.start() + 2]  # 那个 of 那个回家开灯的习惯: which one, no filler
        if not action.startswith(said) and action.startswith(text[described.start() + 2:described.end()]):
            action = said + action
    return Group(DEFAULT, [action], ["system"], [None]) if action else None


def management_group(text: str, lex: AutomationLexicons) -> Group | None:
    """The one ``default`` group of a query that manages what exists, a memo item (``memo_edit_group``) or an
    automation described by what it does (``described_task_group``); None for anything else."""
    return memo_edit_group(text, lex) or described_task_group(text, lex)


def plain_groups(text: str, lex: AutomationLexicons) -> list[Group]:
    """The groups of a query without any condition, duration, once, reminder, super-task or memo word
    (``lex.signal`` is false): one ``null`` group whose subqueries are the pieces between sequence
    connectors (然后, 并且, ，) and at the start of each command of an unpunctuated run (``command_cuts``).
    A piece without an action (哎那个, 太暗了) joins the next one. The tagger is not needed to find
    actions where nothing can be a condition."""
    subs = []
    for a, b in plain_pieces(text, lex):
        piece = text[a:b]
        cuts = command_cuts(piece, lex)
        for command in ([piece[c:d] for c, d in zip([0, *cuts], [*cuts, len(piece)])] if cuts else [piece]):
            sub = clean_subquery(command, lex)
            if sub:
                subs.extend(shared_verb_split(add_missing_verb(sub, lex), lex))
    return [Group(None, subs, [""] * len(subs), [None] * len(subs))] if subs else []


def plain_pieces(text: str, lex: AutomationLexicons) -> list[tuple[int, int]]:
    """(start, end) of the pieces of ``plain_groups`` before its command cuts: ``text`` between its pauses and
    split connectors (``plain_breaks``), a piece without an action joined to the next one. One piece stays
    itself, action or not; and after pieces without an action the last one takes them in either way, so it is
    asked only when a piece before it has one."""
    breaks = plain_breaks(text, lex)
    if not breaks:
        return [(0, len(text))] if text else []
    low = lowered(text)
    cuts = [(start, end) for start, end, kind in breaks
            # 打开空调和座椅加热: one action; 打开氛围灯和解锁车门, 车窗降一半再给老婆打个电话: two
            if kind != "joiner" or lex.action_verbs.prefix(low[end:]) or low.startswith("把", end)
            or (low.startswith("给", end) and not low.startswith("给我", end))]  # 给我 is a 请, not a recipient
    bounds = pieces_between(len(text), cuts)
    if len(bounds) <= 1:
        return bounds

    def has_action(a: int, b: int) -> bool:
        return has_verb(text[a:b], lex) or is_bare_device(text[a:b], lex)

    actions = [has_action(a, b) for a, b in bounds[:-1]]
    actions.append(any(actions) and has_action(*bounds[-1]))
    return join_actionless(bounds, actions)


IntentFn = Callable[[list[str]], list[str]]


def assemble(analysis: TextAnalysis, spans: Sequence[Span], intent_of: IntentFn | None = None) -> list[dict]:
    """Spans of ``text`` → the spec's groups. ``intent_of`` labels a batch of subqueries (the intent
    classifier); without it, intents are None (or the annotation's own ``[A/intent:...]``)."""
    groups = plan_groups(analysis, spans)
    subs = [s for g in groups for s in g.subqueries]
    predicted = iter(intent_of(subs) if (intent_of and subs) else [None] * len(subs))
    return [group_dict(g, [next(predicted) for _ in g.subqueries]) for g in groups]


def plan_groups(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Group]:
    """Everything of ``assemble`` but the intents."""
    spans = sorted(list(spans) + missing_super_task_clauses(analysis, spans), key=lambda s: s.start)
    groups: list[Group] = []
    for raw in bind_scopes(analysis, spans):
        members = raw.conditions + raw.actions + raw.durations + raw.once
        bounds = (min(sp.start for sp in members), max(sp.end for sp in members)) if members \
            else (0, len(analysis.text))
        for g in rewrite_group(analysis, raw):
            if g.condition is not None or g.subqueries:
                g.bounds = bounds
                groups.append(g)
    return complete_bare_switches(duration_of_the_command_before(groups, analysis.lex), analysis.lex)


def duration_of_the_command_before(groups: list[Group], lex: AutomationLexicons) -> list[Group]:
    """Spec 持续时间, said after the command: 方向盘加热打开 开个五分钟 is one group, 持续五分钟 + the command. A
    duration group whose only action is a bare 'on' verb (开个, 开着) takes the last command of the plain group
    before it instead."""
    out: list[Group] = []
    for group in groups:
        prev = out[-1] if out else None
        if prev is not None and prev.condition is None and prev.subqueries and len(group.subqueries) == 1 \
                and (group.condition or "").startswith(DURATION) \
                and lex.action_verbs.category.get(lowered(group.subqueries[0]).rstrip("个着一下")) == "on":
            group.subqueries, group.kinds, group.span_intents = \
                [duration_action(prev.subqueries.pop(), lex)], [prev.kinds.pop()], [prev.span_intents.pop()]
            if prev.bounds and group.bounds:
                group.bounds = (min(prev.bounds[0], group.bounds[0]), max(prev.bounds[1], group.bounds[1]))
            if not prev.subqueries:
                out.pop()
        out.append(group)
    return out


#: what a bare switch may be said after (再关掉, 就关了): dropped with the object it gets
_BEFORE_SWITCH = "再就也"


def complete_bare_switches(groups: list[Group], lex: AutomationLexicons) -> list[Group]:
    """A condition's action that is a bare switch (打开, 关掉) gets the devices switched before it in the query:
    把客厅灯打开 十点以后关掉 → 十点以后: 关掉客厅灯, as most dev writers write it (the subquery must say what it
    switches); media switched before it is 音乐 (放点轻音乐 半小时后关掉 → 关掉音乐). When the group before
    switched several (离家时关掉灯和空调 回家时再打开), the switch is said of each. Changed in place."""
    def bare_switch(group: Group, sub: str) -> str | None:
        verb = sub.lstrip(_BEFORE_SWITCH)
        conditioned = group.condition not in (None, DEFAULT)
        return verb if conditioned and is_switch_verb(lowered(verb), lex) else None

    if not any(bare_switch(g, s) for g in groups for s in g.subqueries):
        return groups  # nearly every query: no bare switch, nothing to look up
    last, last_group = [], None  # the devices switched last, all of one group
    for group in groups:
        k = 0
        while k < len(group.subqueries):
            sub = group.subqueries[k]
            verb = bare_switch(group, sub)
            if last and verb:
                n = len(last)
                group.subqueries[k:k + 1] = [verb + name for name in last]
                group.kinds[k:k + 1] = group.kinds[k:k + 1] * n
                group.span_intents[k:k + 1] = group.span_intents[k:k + 1] * n
                k += n
                continue
            found = devices_in(sub, lex)
            if found:
                _, _, name, kind = max(found, key=lambda d: (d[1], d[1] - d[0]))
                name = "音乐" if kind == "media" else switched_object(sub, name, lex)
                last = last + [name] if last_group is group else [name]
                last_group = group
            k += 1
    return groups


#: how much a switched object may say beyond its device's name (所有的灯, 客厅的灯) and still be quoted whole
_OBJECT_WORDS = 3


def switched_object(sub: str, device: str, lex: AutomationLexicons) -> str:
    """What ``sub`` switches, as said (关掉所有的灯 → 所有的灯; 把客厅灯打开 → 客厅灯), when it is ``device`` with a
    few words more; else ``device``."""
    low = lowered(sub)
    obj = sub
    if low.startswith("把"):
        said = low.rstrip("了吧")  # 把卧室的灯关了
        obj = next((sub[1:len(said) - n] for n in (3, 2, 1) if len(said) > n + 1 and is_switch_verb(said[-n:], lex)),
                   sub)
    else:
        verb = lex.action_verbs.prefix(low)
        if verb and is_switch_verb(verb, lex):
            obj = sub[len(verb):]
    return obj if device in obj and len(obj) <= len(device) + _OBJECT_WORDS else device


def group_dict(group: Group, intents: Sequence[str | None]) -> dict:
    """The spec's group object; intents of management and reminder clauses are fixed by rule."""
    querys = []
    for sub, kind, span_intent, predicted in zip(group.subqueries, group.kinds, group.span_intents, intents):
        intent = _FIXED_INTENTS.get(kind) or span_intent or predicted
        querys.append({"subquery": sub, "intent": intent})
    out = {"condition": group.condition, "querys": querys}
    if group.builtin:
        out["builtin"] = True
    return out


#: the intent fixed by rule for a subquery of each kind (``Group.kinds``), whatever the classifier says. Spec:
#: super-task management clauses are 系统控制; reminders and memo items are 提醒; what a built-in vehicle behaviour
#: does (后视镜自动折叠, 自动打开双闪, 发出警报) is the car's own: 车载控制; what a home appliance does by itself
#: (自动除霜, 自动回充) is a device's: 设备控制
_FIXED_INTENTS = {"system": INTENT_SYSTEM, "memo": INTENT_REMINDER, "reminder": INTENT_REMINDER,
                  "vehicle": INTENT_VEHICLE, "appliance": INTENT_DEVICE}
