"""Span repairs that cut a span the tagger left whole: a run-on of a command and a condition, two requests in
one action span, a leading time point and its command, a condition that ran into its command."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.features.automation_lexicons import COMMAND_START_KINDS, AutomationLexicons, starts_a_command
from fastslow.models.automation.rules.analysis import TextAnalysis
from fastslow.models.automation.rules.markup import EDGE_PUNCT, Span, lowered
from fastslow.models.automation.rules.rewrites import unconditional_kind
from fastslow.models.automation.rules.starts import (
    condition_inside_action, condition_starts, ends_in_suffix_trigger, spoken_condition_starts, time_starts,
    trailing_command_start, without_trailing_connector,
)
from fastslow.models.automation.rules.words import (
    clock_times, comparison_prefix, has_time_expression, has_verb, is_bare_device, is_plain_command,
    is_plain_question, is_super_task_mention, is_whole_request, management_after_command, may_hold_command,
    plain_breaks, sentence_break, sequence_connector, strip_fillers, takes_place, time_prefix,
)

_SENTENCE_STOPS = re.compile("[。！？；!?;]+")
_BA = re.compile("把")
#: characters before a command start that join it to the one before (打开空调和播放音乐 is split elsewhere)
JOINED_BEFORE = frozenset("和与及并再把给让说")


def leading_time_condition(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 常见时间条件 (时间点): a time point said first and a command after it, tagged as one action
    (今天下午四点一刻关掉扫地机器人, 七点一刻喊我起床, 下周一提醒我交房租), are the condition and the action.
    The command must start with its verb (a verb of two characters, a reminder verb, 把, 给…): 今天好热，把空调
    打开 and 今晚有什么好看的电影 hold no time condition. A condition span is the time and its command only when
    no action follows it (七点四十五打开窗帘|就这一次)."""
    text, lex = analysis.text, analysis.lex
    out = list(spans)
    if not out or out[0].kind not in "AC" or (out[0].kind == "C" and any(sp.kind == "A" for sp in out[1:2])):
        return out
    first = out[0]
    end = time_prefix(lowered(first.text), lex)
    if not 0 < end < len(first.text):
        return out  # no time point said first, or nothing after it
    rest = strip_fillers(first.text[end:], lex)
    head = lex.action_verbs.prefix(lowered(rest)) or ""
    starts = len(head) >= 2 or lex.reminder_verbs.prefix(lowered(rest)) or rest.startswith(("把", "给"))
    if first.kind == "C" and (not is_plain_command(rest, lex) or len(head) < 2):
        return out
    if starts and (is_plain_command(rest, lex) or lex.reminder_verbs.prefix(lowered(rest))):
        m = first.start + end
        out[0:1] = [Span("C", first.start, m, text[first.start:m]),
                    Span("A", m, first.end, text[m:first.end], first.intent if first.kind == "A" else None)]
    return out


def split_inside_action(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """An action span holding two requests the tagger did not cut: a sentence stop ends it (打开加湿器。导航去公司);
    a condition said first is cut from its command (上班的路上|播放早间新闻); a scope end said inside it (提醒我充电|
    对了|今天天气怎么样: scope_end.txt, ``scope_end``) ends it; a reminder after a sequence connector (仪表上亮灯|并且|
    提醒我: connectors.txt, ``break``) and a super-task clause said after a whole command (关闭所有的灯|把这个存成
    智能场景) are their own actions. An action span holding none of the words a cut is made at (a sentence stop,
    ``lex.action_cut_words``, 把) is left as it is."""
    lex = analysis.lex
    out: list[Span] = []
    for sp in spans:
        if sp.kind != "A" or not (_SENTENCE_STOPS.search(sp.text) or "把" in sp.text or (
                lex.action_cut_words is not None and lex.action_cut_words.search(lowered(sp.text)))):
            out.append(sp)
            continue
        for sentence in sentences(sp):
            out += split_one_request(analysis, sentence)
    return out


def sentences(sp: Span) -> list[Span]:
    """The action span ``sp`` cut at every sentence stop inside it (打开加湿器。导航去公司: a sentence ends the request
    and the condition's scope); a stop at its start or its end cuts nothing."""
    out = []
    while True:
        stop = _SENTENCE_STOPS.search(sp.text.rstrip(EDGE_PUNCT))
        if not stop or stop.start() == 0:
            out.append(sp)
            return out
        out.append(Span("A", sp.start, sp.start + stop.start(), sp.text[:stop.start()], sp.intent))
        sp = Span("A", sp.start + stop.end(), sp.end, sp.text[stop.end():])


def split_one_request(analysis: TextAnalysis, sp: Span) -> list[Span]:
    """``split_inside_action`` of one action span without a sentence stop: the spans it becomes (``[sp]`` when it
    holds one request)."""
    lex = analysis.lex
    low = lowered(sp.text)
    said_first = condition_said_first(sp.text, lex)
    if said_first:  # 上班的路上|播放早间新闻: a condition said first, tagged with its command
        return [Span("C", sp.start, sp.start + said_first, sp.text[:said_first]),
                Span("A", sp.start + said_first, sp.end, sp.text[said_first:], sp.intent)]
    ends = [(a, b) for a, b, _, cat in lex.scope_end.find(low) if cat == "scope_end" and 0 < a and b < len(low)]
    if ends:
        a, b = ends[0]
        return [Span("A", sp.start, sp.start + a, sp.text[:a], sp.intent),
                Span("E", sp.start + a, sp.start + b, sp.text[a:b]), Span("A", sp.start + b, sp.end, sp.text[b:])]
    reminder = next(((a, b) for a, b, _, cat in lex.breaks.find(low) if cat == "break" and a > 0
                     and lex.reminder_verbs.prefix(low[b:])), None)
    if reminder is not None:  # 仪表上亮灯|并且|提醒我: a reminder after a sequence connector is its own request
        a, b = reminder
        return [Span("A", sp.start, sp.start + a, sp.text[:a], sp.intent), Span("A", sp.start + b, sp.end, sp.text[b:])]
    cut = next((m.start() for m in _BA.finditer(sp.text) if m.start() > 0
                and management_after_command(sp.text[:m.start()], sp.text[m.start():], lex)), None)
    if cut is not None:
        return [Span("A", sp.start, sp.start + cut, sp.text[:cut], sp.intent),
                Span("A", sp.start + cut, sp.end, sp.text[cut:])]
    return [sp]


def condition_said_first(action: str, lex: AutomationLexicons) -> int:
    """Where the whole command after a condition said first begins inside one action span (上班的路上|播放早间新闻:
    a suffix trigger of two characters or more, then a whole command); 0 when there is none, or the span is said
    verb first, or is a reminder, a memo or a super-task clause (提醒我下班的时候买菜: its time is content)."""
    low = lowered(action)
    if lex.long_suffix_words is None or lex.long_suffix_words.search(low) is None:
        return 0  # no suffix trigger of two characters or more
    if lex.action_verbs.prefix(low) or lex.reminder_verbs.prefix(low):
        return 0  # said verb first: no condition before its command
    ends = [b for a, b, _, cat in lex.triggers.find(low) if cat == "suffix" and b - a >= 2 and 0 < a and b < len(low)]
    if not ends or lex.memo.search(low) or is_super_task_mention(action, lex):
        return 0
    return next((b for b in ends if is_plain_command(action[b:], lex)), 0)


def command_before_sequence(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span that is a whole plain command followed by a sequence connector and another condition
    (空调开到二十六度|然后|出发前十分钟…: 开到 read as a state) is that command: 然后 never joins two conditions."""
    text, lex = analysis.text, analysis.lex
    out = list(spans)
    for k in range(len(out) - 1):
        sp, nxt = out[k], out[k + 1]
        if sp.kind == "C" and nxt.kind == "C" and is_plain_command(sp.text, lex) \
                and sequence_connector(lowered(text[sp.end:nxt.start].strip(EDGE_PUNCT)), lex):
            out[k] = Span("A", sp.start, sp.end, sp.text)
    return out


def split_trailing_command(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span that runs past its own trigger into a whole command (下班的时候放点音乐|就一次) is
    that condition and the action (and, when another condition follows the command, that condition:
    ``split_run_on`` then cuts it off); a first action span that holds a condition (前方有行人突然横穿时|自动紧急
    制动) is cut the same way. Not before a 就 that ends a compound condition (晚饭前20分钟后转向灯关闭就…:
    spec 复合条件完整性); a 就 that only starts a once marker (就一次) ends nothing."""
    text, lex = analysis.text, analysis.lex
    then = tuple(lex.triggers.terms("then"))
    out: list[Span] = []
    for k, sp in enumerate(spans):
        if sp.kind == "A" and k == 0:
            nxt = spans[k + 1] if k + 1 < len(spans) else None
            # 电热水壶水开了|自动断电, 卧室温度低于十八度 开电暖器: cut already, or at a pause
            if nxt is not None and nxt.kind == "A" and text[sp.end:nxt.start].strip(" ") in ("", *_PAUSES):
                cut = condition_inside_action(sp.text + nxt.text, lex)
                if cut == len(sp.text):
                    out.append(Span("C", sp.start, sp.end, sp.text))
                    continue
            cut = condition_inside_action(sp.text, lex)
            if cut is not None:
                m = sp.start + cut
                out += [Span("C", sp.start, m, text[sp.start:m]), Span("A", m, sp.end, text[m:sp.end], sp.intent)]
                continue
        if sp.kind == "C":
            follows = analysis.low[sp.end:]
            if not follows.startswith(then) or lex.once.prefix(follows) or lex.once.prefix(follows[1:]):
                cut = trailing_command_start(sp.text, lex)
                if cut is not None:
                    m = sp.start + cut
                    # a command, then a condition (split_run_on cuts the rest): after a time point said first,
                    # always (早上八点|导航去公司周末早上九点: the time in it is the next condition, not content)
                    then_time = time_prefix(lowered(sp.text), lex) == cut
                    rest = "A" if not then_time and is_plain_command(sp.text[cut:], lex) else "C"
                    out += [Span("C", sp.start, m, text[sp.start:m], sp.intent), Span(rest, m, sp.end, text[m:sp.end])]
                    continue
        out.append(sp)
    return out


def split_run_on(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 不向左回溯 on an unpunctuated run-on (action + condition + action): a condition span that
    starts with a whole plain command (关闭车窗|到公司的时候, 导航去公司|快到的时候) is that action and
    the condition after it; an action span ending in a condition (先放首歌|等我上车了) followed by
    another action is split the same way, and so is a clock time between two commands in one action span
    (打开空调|七点四十五|关掉空调). A condition span may start with a whole question too (今天天气怎么样|下午四点).
    No cut falls inside an event word but right after a verb (热水器水烧到设定温度的时候 is one condition;
    把氛围灯打开|到家的时候 is cut though 开到 is an event word too).
    The command before the cut must hold no condition signal, so 关闭后排空调且后排有人时 (且) stays whole
    (复合条件完整性)."""
    text, lex = analysis.text, analysis.lex
    out: list[Span] = []
    for k, sp in enumerate(spans):
        nxt = spans[k + 1] if k + 1 < len(spans) else None
        cut, cut_head = None, 0
        said_first = sp.kind == "C" and (may_hold_command(sp.text, lex) or (  # a command or a question
            lex.questions is not None and lex.questions.search(lowered(sp.text)) is not None))
        if said_first or (sp.kind == "A" and nxt is not None and nxt.kind == "A"
                          and not sentence_break(text, sp.end, nxt.start)
                          and not lex.reminder_verbs.prefix(lowered(sp.text))):
            low = lowered(sp.text)
            starts = set(condition_starts(low, lex, events=sp.kind == "C", compared=sp.kind == "C"))
            if sp.kind == "C" or ends_in_suffix_trigger(low, lex):  # 关上天窗|到服务区的时候, 关掉电视机|我睡着以后
                starts |= set(spoken_condition_starts(low, lex))
            if sp.kind == "C":  # 打开座椅通风|七点半: a time point said after a whole command
                starts |= set(time_starts(low, lex))
            # no cut inside an event word (设定|温度) but right after a verb that hides one (打开|到家: 开到)
            inside = {p for a, b, *_ in lex.events.find(low) for p in range(a + 1, b)}
            inside -= {b for _, b, *_ in lex.action_verbs.find(low)}
            for p in sorted(starts - inside):
                head = without_trailing_connector(sp.text[:p], lex) if sp.kind == "C" else sp.text[:p]
                whole = is_plain_command(head, lex) or (sp.kind == "C" and is_plain_question(head, lex))
                if p > 0 and whole and sp.text[p:].strip() and not takes_place(head, lex):
                    cut, cut_head = p, len(head)
                    break
        if cut is not None:  # 空调开到二十六度|然后|出发前十分钟: 然后 is neither
            m, h = sp.start + cut, sp.start + cut_head
            out.append(Span("A", sp.start, h, text[sp.start:h], sp.intent if sp.kind == "A" else None))
            out.append(Span("C", m, sp.end, text[m:sp.end]))
            continue
        if sp.kind == "A":
            clock = next(((a, b) for a, b in clock_times(sp.text) if a > 0 and is_plain_command(sp.text[:a], lex)
                          and has_verb(sp.text[b:], lex)), None)
            if clock is not None:  # 打开空调七点四十五关掉空调: a clock time between two commands in one action span
                m, e = sp.start + clock[0], sp.start + clock[1]
                out += [Span("A", sp.start, m, text[sp.start:m], sp.intent), Span("C", m, e, text[m:e]),
                        Span("A", e, sp.end, text[e:sp.end])]
                continue
        out.append(sp)
    return out


#: a change of state said before a command, after a pause (…，雨停了|打开车窗): up to six characters and 了
_STATE_CHANGE = re.compile(r"^(?P<state>[^，,。；;]{2,6}?了)")
#: a pause between two spans
_PAUSES = frozenset("，,、;；")


def split_second_condition(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """An action span that runs on, with no pause, into a condition of its own and that condition's command
    (提醒我带伞|中午十二点|提醒我订餐, 提醒我减速|到公司后|关掉空调) is the action, the condition and the command:
    spec 不向左回溯, each condition binds the command after it. See ``second_condition`` for when it is cut. After a
    condition, an action span said after a pause that starts with a change of state and then a whole command
    (下雨时关闭车窗，|雨停了|打开车窗) is that state's condition and its command (``state_change``). The command of a
    condition that runs on into a bare event and its command (到家|开灯离家关灯) is cut there too (``second_event``)."""
    text, lex = analysis.text, analysis.lex
    out: list[Span] = []
    for sp in _run_ons_cut(text, spans, lex):
        if sp.kind == "A" and any(o.kind == "C" for o in out) and out[-1].kind == "A" \
                and text[out[-1].end:sp.start].strip(" ") in _PAUSES:
            said = state_change(sp.text, lex)
            if said:
                m = sp.start + said
                out += [Span("C", sp.start, m, text[sp.start:m]), Span("A", m, sp.end, text[m:sp.end], sp.intent)]
                continue
        if sp.kind == "A" and out and out[-1].kind == "C":
            cut = state_change_after_command(sp.text, lex)
            if cut is not None:
                out += _cut_at(text, sp.start, sp.end, (*cut, cut[1]), sp.intent)
                continue
        cut = None
        if sp.kind == "A":
            after_condition = bool(out) and out[-1].kind == "C"
            cut = second_condition(sp.text, lex) or (second_event(sp.text, lex) if after_condition else None)
        if cut is None:
            out.append(sp)
            continue
        out += _cut_at(text, sp.start, sp.end, cut, sp.intent)
    return out


def _cut_at(text: str, start: int, end: int, cut: tuple[int, int, int], intent) -> list[Span]:
    """The spans of ``text[start:end]`` cut where ``cut`` says (``second_condition``'s places in it): the command,
    the condition, its command."""
    c, e, a = (start + k for k in cut)
    return [Span("A", start, c, text[start:c], intent), Span("C", c, e, text[c:e]), Span("A", a, end, text[a:end])]


def second_condition(action: str, lex: AutomationLexicons) -> tuple[int, int, int] | None:
    """(where the condition starts, where it ends, where its command starts) inside ``action``, or None. Cut only
    where everything is whole: before the condition a plain command or a reminder with content of its own (提醒我带伞;
    提醒我下午三点开会 keeps its time as the reminder's content, spec 提醒我说), then a time point (中午十二点), a
    condition ending in a suffix trigger (到公司后), a state compared with an amount (低于二十二度) or what is said
    before 就 (我回来|就), then, after a 就 if one is said, a plain command or a reminder (提醒我订餐, 关掉空调)."""
    low = lowered(action)
    if len(low) < 8 or (not has_time_expression(low, lex) and lex.triggers.search(low) is None):
        return None
    starts = set(time_starts(low, lex)) | set(spoken_condition_starts(low, lex)) | set(
        condition_starts(low, lex, events=True, compared=True))
    for p in sorted(q for q in starts if q >= 3):
        if not is_whole_request(action[:p], lex):
            continue
        end = time_prefix(low[p:], lex) or next(
            (b for a, b, _, cat in lex.triggers.find(low[p:]) if cat == "suffix" and b < len(low) - p), 0) \
            or comparison_prefix(low[p:], lex, subject=False) or comparison_prefix(low[p:], lex) \
            or _said_before_then(low[p:], lex)
        command = p + end + (low[p + end:p + end + 1] == "就")
        rest = strip_fillers(action[command:], lex)
        if end and (is_plain_command(rest, lex) or lex.reminder_verbs.prefix(lowered(rest))):
            return p, p + end, command
    return None


#: the most characters a condition said before 就 inside a run of commands may have (我回来|就…)
_BEFORE_THEN_REACH = 6


def _said_before_then(low: str, lex: AutomationLexicons) -> int:
    """How many characters at the start of ``low`` are said before a 就 that ends them as a condition (spec
    复合条件完整性: 就 之前的所有内容整体构成 condition): a few words that start with no request verb; 0 when none."""
    j = low.find("就", 1, _BEFORE_THEN_REACH + 1)
    return j if j > 0 and lex.action_verbs.prefix(low) is None and not lex.reminder_verbs.prefix(low) else 0


def _run_ons_cut(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """Two action spans after a condition that touch and together run on into a condition of their own and its
    command, the tagger's cut put after that condition (到家|开灯离家|关灯, 温度高于二十八度|开空调低于二十度|开暖气,
    下午三点|提醒我开会五点|提醒我去接孩子), cut where ``second_condition`` or ``second_event`` says: the command, the
    condition, its command."""
    out: list[Span] = []
    for sp in spans:
        if sp.kind == "A" and len(out) >= 2 and out[-1].kind == "A" and out[-2].kind == "C" \
                and _THEN_GAP.fullmatch(text, out[-1].end, sp.start):
            said = text[out[-1].start:sp.end]
            cut = second_condition(said, lex) or second_event(said, lex)
            if cut:
                *before, sp = _cut_at(text, out[-1].start, sp.end, cut, out[-1].intent)
                out[-1:] = before
        out.append(sp)
    return out


#: what the tagger may leave out between the command of a second condition and the one before it: the condition's
#: last characters and its 就 (提醒我充电电量低于|十就|关掉空调), or nothing
_THEN_GAP = re.compile(r"(?:[^，,。；;\s]{0,4}就)?")


def second_event(action: str, lex: AutomationLexicons) -> tuple[int, int, int] | None:
    """(where the condition starts, where it ends, where its command starts) inside ``action``, the command of a
    condition, when it runs on into a bare event of its own (到家开灯|离家|关灯, 进隧道开大灯|出隧道|关大灯,
    主驾上车开主驾座椅加热|副驾上车|开副驾座椅加热): a whole command, an event word (events.txt, with the seat it
    happens at and a 了 after it), then a plain command, maybe after a 就. Cut only in the command of a condition,
    whose two events stand side by side; 导航回家 is one command, its 回家 no event after a whole command."""
    low = lowered(action)
    for a, b, *_ in lex.events.find(low):
        seat = next((s for s, e, *_ in lex.positions.find(low[:a]) if e == a), a)
        end = b + (low[b:b + 1] == "了")
        command = end + (low[end:end + 1] == "就")
        if seat >= _SHORTEST and is_whole_request(action[:seat], lex) \
                and is_plain_command(strip_fillers(action[command:], lex), lex):
            return seat, end, command
    return None


#: how far into an action span the first 了 of a change of state said after a command may be
_STATE_CHANGE_REACH = 24


def state_change_after_command(action: str, lex: AutomationLexicons) -> tuple[int, int] | None:
    """(where the change of state starts, where its command starts) in an action span that follows a condition
    and runs on, with no pause, from a whole command into a change of state and its command (天黑了|开阳台灯|天亮了|
    关阳台灯); None when there is none. Only the first 了 is looked at, within ``_STATE_CHANGE_REACH``."""
    j = action.find("了", 0, _STATE_CHANGE_REACH)
    if j < 0:
        return None
    for p in range(max(3, j - 6), j - 1):
        said = state_change(action[p:], lex)
        if said == j + 1 - p and is_whole_request(action[:p], lex):
            return p, p + said
    return None


def state_change(action: str, lex: AutomationLexicons) -> int:
    """How many characters at the start of ``action`` are a change of state said as a condition (雨停了 of
    雨停了打开车窗): two to six characters ending in 了 with no request verb, and a whole command after it; 0 when
    there is none."""
    m = _STATE_CHANGE.match(action)
    if m is None or has_verb(m.group("state"), lex) or lex.reminder_verbs.prefix(lowered(action)):
        return 0
    return m.end() if is_plain_command(action[m.end():], lex) else 0


def _name_with_own_verb(text: str, lex: AutomationLexicons) -> bool:
    """Does ``text``, which starts with a name, go on with a verb of its own whose object names no device (亮度|调高一点,
    音量|调到十二)? Not when its verb starts the next command (空调|打开加湿器: the name ends the object before it)."""
    low = lowered(text)
    verb = next((b for a, b, *_ in lex.action_verbs.find(low) if a > 0), None)
    return verb is not None and not lex.device_kinds.find(low[verb:])


#: the fewest characters of a whole command on either side of a cut: a verb and a device (开灯开空调)
_SHORTEST = 2


def _inside_a_name(start: int, end: int, names) -> bool:
    """Does ``start:end`` lie inside a longer name of ``names`` (device matches: the 加热 of 座椅加热)?"""
    return any(a <= start and end <= b and b - a > end - start for a, b, *_ in names)


def command_cuts(text: str, lex: AutomationLexicons) -> list[int]:
    """Where an unpunctuated run of commands (关掉客厅的灯打开扫地机器人, 主驾座椅往前调一点副驾座椅加热打开)
    starts a new one: at a verb of two characters or more (打开, 播放, 导航) when what comes before is a
    whole command (``is_plain_command``) and so is what follows (打开导航回家 is one); at a seat or a device only
    after a command said object first (主驾座椅往前调一点|副驾…), never inside a verb's object (关掉家里所有的灯,
    打开天窗遮阳帘); at a sequence connector (然后, 再) between two whole commands. A whole command has two
    characters or more on each side of a cut (开灯|开空调). Nothing is cut after a joiner (和, 再, 把), after a message's 说, in a
    reminder or a prohibition (提醒我打开空调关闭车窗 is one reminder), or in a super-task or memo clause (修改我的
    回家习惯). So a text shorter than four characters, or in which no verb, name or connector begins where a cut
    could be (``lex.cut_point_words``), or without a verb, reminder or memo word before the last point or after the
    first (``may_hold_command``), is one command."""
    if len(text) < 2 * _SHORTEST:
        return []
    low = lowered(text)
    first = lex.cut_point_words.search(low, _SHORTEST) if lex.cut_point_words is not None else None
    if first is None or first.start() > len(text) - _SHORTEST + 1:  # 开/关 is cut at one before its name (开灯|关窗)
        return []
    if lex.reminder_verbs.prefix(low) or low.startswith(("提醒", "别", "不要")):
        return []
    if not may_hold_command(text[:len(text) - _SHORTEST], lex):
        return []
    seats = lex.positions.find(low)
    devices = lex.device_kinds.find(low)
    names = {a for a, *_ in seats} | {a for a, *_ in devices}
    # a verb of two characters or more, or 开/关 right before a device (打开雾灯|开双闪), or a verb of adjusting
    # right before one and no part of a name (关掉客厅灯|拉上窗帘; not the 加热 of 座椅加热); a reminder after a
    # whole command (关掉空调|提醒我找地方充电)
    verbs = {a for a, b, term, cat in lex.action_verbs.find(low)
             if starts_a_command(term, cat) or (b in names and (cat in COMMAND_START_KINDS or (
                 cat == "adjust" and len(term) >= 2 and not _inside_a_name(a, b, devices))))}
    after_seat = {b for _, b, *_ in seats}
    breaks = {a for a, _, kind in plain_breaks(low, lex) if kind == "break"}  # 然后, 再, 顺便 before a command
    points = sorted(p for p in verbs | names | breaks if _SHORTEST <= p <= len(text) - _SHORTEST)
    if not points or not may_hold_command(text[:points[-1]], lex) or not may_hold_command(text[points[0]:], lex):
        return []
    cuts, last = [], 0
    for p in points:
        if p - last < _SHORTEST or (p not in breaks and low[p - 1] in JOINED_BEFORE) or "说" in low[last:p]:
            continue
        left = strip_fillers(text[last:p], lex)
        right = strip_fillers(text[p:], lex)
        if p not in verbs and p not in breaks and lex.action_verbs.prefix(lowered(left)) \
                and (p in after_seat or not _name_with_own_verb(right, lex)):
            continue  # a name inside the object of a verb-first command (打开天窗遮阳帘, 关掉卧室空调打开加湿器)
        if is_plain_command(left, lex) and is_plain_command(right, lex):
            cuts.append(p)
            last = p
    if cuts and unconditional_kind(text, lex):
        return []
    return cuts


def retracted(text: str, lex: AutomationLexicons) -> list[tuple[int, int]]:
    """(start, end) of every command ``text`` takes back with the self-correction after it, left to right
    (打开空调不对|打开座椅加热, 上车的时候|打开空调不对|打开座椅加热: connectors.txt, category ``correction``): the
    longest whole command (``is_plain_command``; of a run of them, the last: ``command_cuts``) that ends right
    before the correction and starts after the one before it, when a request starts after it (a verb, 把, a device
    or a seat, and a verb or a whole device name in it). After no whole command (空调温度不对), or before no
    request, the word is content. One pass: each correction reads only as far back as the one before it and as
    far on as the one after it, so a long text full of them costs no more than its length."""
    if lex.connector_kinds is None:
        return []
    low = lowered(text)
    corrections = [(a, b) for a, b, _, cat in lex.connector_kinds.find(low) if cat == "correction"]
    taken, since = [], 0
    for k, (a, b) in enumerate(corrections):
        end = len(text) - len(text[b:].lstrip(EDGE_PUNCT))
        lo, since = since, end
        if a - lo < 3:
            continue
        upto = corrections[k + 1][0] if k + 1 < len(corrections) else len(text)
        rest = lowered(strip_fillers(text[end:upto], lex))  # what is said before the next correction
        if not (lex.action_verbs.prefix(rest) or lex.reminder_verbs.prefix(rest) or rest.startswith(("把", "给"))
                or lex.device_kinds.prefix(rest) or lex.positions.prefix(rest)) \
                or not (has_verb(rest, lex) or is_bare_device(rest, lex)):
            continue  # 胎压不对的时候: no request follows; 打开主驾座椅加热我是说副驾: only a seat, a slot corrected
        before = low[lo:a]
        names = [(x, y) for x, y, *_ in lex.device_kinds.find(before)]
        starts = {0, *(m.end() for m in _PAUSE_MARKS.finditer(before)), *(x for x, _ in names)}
        starts |= {p for p, *_ in lex.action_verbs.find(before) if not any(x < p < y for x, y in names)}  # 空调's 调
        starts |= {p for p, *_ in lex.positions.find(before)} | {m.start() for m in _BA.finditer(before)}
        for p in sorted(starts):
            said = text[lo + p:a].strip(EDGE_PUNCT)
            if is_plain_command(said, lex):  # of a run of commands, the last one is taken back
                cuts = command_cuts(said, lex)
                taken.append((lo + p + (cuts[-1] if cuts else 0), end))
                break
    return taken


#: the marks a said command starts after, and the words a command said object first starts with
_PAUSE_MARKS = re.compile(r"[,，、;；。!！?？\s]+")
_BA = re.compile("[把给]")


def split_joined_actions(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Every action span holding an unpunctuated run of commands (``command_cuts``) becomes one span per
    command: 早上出门的时候|关掉家里所有的灯|打开扫地机器人 has two actions."""
    text = analysis.text
    out: list[Span] = []
    for sp in spans:
        if sp.kind != "A":
            out.append(sp)
            continue
        cuts = command_cuts(sp.text, analysis.lex)
        if not cuts and text.startswith(sp.text, sp.start) and sp.end - sp.start == len(sp.text):
            out.append(sp)  # one command, and the span quotes the text: it would be made again as it is
            continue
        bounds = [0, *cuts, len(sp.text)]
        for a, b in zip(bounds, bounds[1:]):
            out.append(Span("A", sp.start + a, sp.start + b, text[sp.start + a: sp.start + b],
                            sp.intent if a == 0 else None))
    return out
