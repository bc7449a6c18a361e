"""Span repairs that keep words whole at the edges of the tagger's spans: a negation stays with its action,
a clock time, an amount of time, an event word and a once marker are never cut in two, a condition keeps its
trigger and gives back the subject of the action after it."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.models.automation.rules.analysis import TextAnalysis
from fastslow.models.automation.rules.markup import EDGE_PUNCT, Span, lowered
from fastslow.models.automation.rules.words import (
    NEGATION_BEFORE, RUN_ON_SHORT, clock_times, devices_in, has_time_expression, has_verb, is_bare_device,
    TIME_AMOUNT, is_fragment, is_plain_command, is_super_task_mention, is_whole_request,
)

#: a number said in digits or in Chinese numerals (1.5, 一个半 of 一个半小时: its 一)
_NUMBER = r"(?:\d+(?:\.\d+)?|[零一二两三四五六七八九十百半几]+)"
#: an amount of time said whole (一个半小时, 两个钟头, 1.5小时, 半个小时)
_AMOUNT_OF_TIME = re.compile(rf"{_NUMBER}?个?半?个?(?:小时|钟头|分钟|分|秒钟|秒|刻钟|天)")
#: said right after a condition span, still part of it (README 如何标注 1: trigger words included)
_TRAILING_TRIGGER = re.compile(r"的话|的时候|时候|以后|之后|时")
#: a condition span ending in one of these gave away the start of the action (十点一刻让|音箱放点白噪音)
_ACTION_LEAD = frozenset("让叫给帮替")
#: the assistant the user speaks to, said between a condition and its 就 (等我上车了|你|就…): part of neither
_ADDRESSEE = "你"
#: said after a verb to soften it (设置一下): a condition the tagger starts there starts after it
_SOFTENER = "一下"
#: an amount of time after one of these is how much earlier or later, not a duration (闹钟提前|半小时)
_SHIFT_VERB = re.compile(r"(?:提前|推迟|延后|提早|推后|往后推|往前提|早|晚)$")
#: said before a condition: it is about to happen (快|下班的时候)
_ABOUT_TO = re.compile(r"(?:快要|就要|将要|马上|快)$")
#: said before a condition that starts with 在: who it befalls, in the passive (小孩被锁|在车里的时候)
_PASSIVE_SUBJECT = re.compile(r"[\u4e00-\u9fff]{1,4}被[\u4e00-\u9fff]{1,2}$")
#: ... and when the condition starts at 被 itself (小孩|被落在车里时): the words right before it, fillers left out
_SUBJECT_BEFORE_PASSIVE = re.compile(r"[^\W嗯呃啊那这个]{1,4}$")
#: a self word after the subject of an action (熄火后|车门自己), or how it is delayed (熄火后|大灯延时)
_SELF_WORDS = re.compile(r"(?:自动|自己|自行|会|延时|延迟)+$")
_SELF_START = re.compile(r"(?:就|便|会|都)*(?:自动|自己|自行)")


def keep_negation(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """An action keeps the negation in front of it: 开会的时候别给我打电话 → ``别给我打电话``, never
    ``打电话``. A tagger that leaves 别 outside the span would otherwise turn a prohibition into a command."""
    text = analysis.text
    out: list[Span] = []
    for sp in spans:
        if sp.kind == "A":
            before = out[-1] if out else None
            # the negation may have been swallowed by the condition just before (到家时千万别|开空调)
            lo = before.start + 1 if before and before.kind == "C" else (before.end if before else 0)
            m = NEGATION_BEFORE.search(text, lo, sp.start)
            if m:
                if before and m.start() < before.end:
                    out[-1] = Span(before.kind, before.start, m.start(), text[before.start: m.start()], before.intent)
                sp = Span(sp.kind, m.start(), sp.end, text[m.start(): sp.end], sp.intent)
        out.append(sp)
    return out


def whole_clock_times(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 常见时间条件 (时间点): a clock time is one condition, never cut in two: a condition span
    ending inside 七点四十五 / 八点半 / 三点一刻 takes the rest of it from the span after it."""
    text = analysis.text
    out = list(spans)
    if not any(sp.kind == "C" for sp in out):
        return out  # only condition spans change
    for a, b in clock_times(text):
        for k, sp in enumerate(out):
            if sp.kind == "C" and a <= sp.end - 1 < b - 1 and sp.start <= a:
                nxt = out[k + 1] if k + 1 < len(out) else None
                if nxt is not None and nxt.start < b:
                    if nxt.end <= b:
                        out.pop(k + 1)
                    else:
                        out[k + 1] = Span(nxt.kind, b, nxt.end, text[b:nxt.end], nxt.intent)
                out[k] = Span("C", sp.start, b, text[sp.start:b], sp.intent)
                break
    return out


#: the rest of an amount a span boundary fell inside (超过三十|五度): more digits or numerals and maybe a unit
_AMOUNT_REST = re.compile(r"[\d零一二两三四五六七八九十百千]+(?:度|%|档|级|公里|米|分钟|小时|个)?")
_NUMERAL_END = re.compile(r"[\d零一二两三四五六七八九十百千]$")


def whole_amounts(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """An amount is never cut in two: a condition span that ends inside a number (车内温度超过三十|五度) takes
    the rest of it from the span right after it, which goes if nothing else is left of it."""
    text = analysis.text
    out = list(spans)
    for k in range(len(out) - 1):
        cur, nxt = out[k], out[k + 1]
        if cur is None or nxt is None or cur.kind != "C" or nxt.start != cur.end or not _NUMERAL_END.search(cur.text):
            continue
        m = _AMOUNT_REST.match(text, nxt.start)
        if m is None or m.end() > nxt.end:
            continue
        out[k] = Span("C", cur.start, m.end(), text[cur.start:m.end()], cur.intent)
        out[k + 1] = Span(nxt.kind, m.end(), nxt.end, text[m.end():nxt.end], nxt.intent) if m.end() < nxt.end else None
    return [sp for sp in out if sp is not None]


def percent_sign_kept(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A span that ends on a number right before a % no span covers takes it (亮度调到50|%): it is the number's."""
    text = analysis.text
    if "%" not in text:
        return list(spans)
    starts = {sp.start for sp in spans}
    return [Span(sp.kind, sp.start, sp.end + 1, text[sp.start:sp.end + 1], sp.intent)
            if text[sp.end:sp.end + 1] == "%" and sp.end not in starts and sp.text[-1:].isdigit() else sp
            for sp in spans]


_LASTING = "持续"


def whole_durations(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 持续时间: a duration is its whole amount, never cut in two (把除湿机打开一个|半小时): a duration
    span starting inside an amount of time takes its beginning from the span before it, and so does one right
    after the span's 持续 (外循环开一下持续|五分钟)."""
    text = analysis.text
    out = list(spans)
    for k in range(1, len(out)):
        sp, prev = out[k], out[k - 1]
        if sp.kind != "D" or prev.end != sp.start:
            continue
        if prev.text.endswith(_LASTING) and len(prev.text) > len(_LASTING):
            m = prev.end - len(_LASTING)
            out[k - 1] = Span(prev.kind, prev.start, m, text[prev.start:m], prev.intent)
            out[k] = sp = Span("D", m, sp.end, text[m:sp.end], sp.intent)
            continue
        for m in _AMOUNT_OF_TIME.finditer(text, max(prev.start, sp.start - 8), sp.end):
            if m.start() < sp.start < m.end() and m.start() > prev.start:
                out[k - 1] = Span(prev.kind, prev.start, m.start(), text[prev.start:m.start()], prev.intent)
                out[k] = Span("D", m.start(), sp.end, text[m.start():sp.end], sp.intent)
                break
    return out


#: a media verb and an amount of time said before what is played (来|半小时|轻音乐, 放|一个小时的|白噪音)
_MEDIA_DURATION = re.compile(rf"(?:来点|来|放点|放|播放|播|听|讲)(?P<amount>{_NUMBER}个?半?个?(?:小时|钟头|分钟|刻钟))的?")
#: who media is played for, said right before its verb (给宝宝|放半小时儿歌): no condition
_PLAYED_FOR = re.compile(r"给[^，,。；;\s]{1,4}")


def media_durations(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 持续时间 said of media: a media verb, an amount of time and what is played after it (来半小时轻音乐,
    放一个小时的白噪音, 播放二十分钟新闻, 讲半个小时的有声书, 上车以后来半小时轻音乐) is the duration (持续半小时) and what is played,
    whatever the tagger made of the verb and the amount (a condition 来半小时, an action 播放 on its own); a
    condition said before keeps its part. What is played runs to the end of the action it starts; it gets its
    verb back from the rewrites (播放 before media content, ``add_missing_verb``). One media duration a query."""
    text = analysis.text
    m = _MEDIA_DURATION.search(text)
    if m is None or not spans:
        return list(spans)
    start, end = m.start(), m.end()
    holding = [sp for sp in spans if sp.kind in "AC" and sp.start <= end < sp.end]  # the span what is played starts in
    if not holding or any(sp.kind not in "ACD" for sp in spans if sp.start < end and sp.end > start):
        return list(spans)
    played = holding[0]
    out = []
    for sp in spans:
        if sp.kind == "C" and sp.start < start <= sp.end and _PLAYED_FOR.fullmatch(text[sp.start:start].strip()):
            continue
        if sp.end <= start or sp.start >= played.end:
            out.append(sp)
        elif sp.start < start and (sp.kind == "C" or has_verb(text[sp.start:start], analysis.lex)):
            # a condition said before the verb (上车以后|来半小时…) keeps its part, and so does a request; who it is
            # played for (给孩子|放一个小时儿歌) is no request of its own, nor a condition when the tagger made it one
            out.append(Span(sp.kind, sp.start, start, text[sp.start:start], sp.intent))
    a, b = m.span("amount")
    out += [Span("D", a, b, text[a:b]), Span("A", end, played.end, text[end:played.end], played.intent)]
    return sorted(out, key=lambda sp: sp.start)


#: the characters of a word in letters (and digits): carplay, wifi, usb, 5g
_LETTER_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def letter_word_before_condition(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A word in letters said right before a condition, which no span holds (CarPlay|连上以后, wifi|连上的时候), is
    what the condition is about: the tagger reads characters and often leaves such a word out; the condition
    takes it, from its first letter on, when it has two letters or more (a single letter is often part of a
    name: 小P). The word is found walking back from the condition, each character looked at once."""
    text, low = analysis.text, analysis.low
    out = list(spans)
    for k, cur in enumerate(out):
        if cur.kind != "C" or cur.start == 0:
            continue
        a = cur.start
        while a > 0 and low[a - 1] in _LETTER_WORD_CHARS:
            a -= 1
        while a < cur.start and low[a].isdigit():
            a += 1  # the word starts at its first letter
        letters = sum(ch.isalpha() for ch in low[a:cur.start])
        if letters >= 2 and a >= (out[k - 1].end if k > 0 else 0):
            out[k] = Span("C", a, cur.end, text[a:cur.end], cur.intent)
    return out


def scope_words_outside(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A span never starts inside a word that ends a condition's scope (scope_end.txt: 现在, 另外, 马上): where the
    tagger starts one there (现|在放首歌等会上车的时候), it starts after the word, which no span holds."""
    text = analysis.text
    words = [(a, b) for a, b, *_ in analysis.found["scope_end"] if b - a >= 2]
    if not words:
        return list(spans)
    out = []
    for sp in spans:
        inside = next((b for a, b in words if a < sp.start < b < sp.end), None)
        out.append(sp if inside is None else Span(sp.kind, inside, sp.end, text[inside:sp.end], sp.intent))
    return out


def _recut_before_condition(analysis: TextAnalysis, spans: Sequence[Span], cut) -> list[Span]:
    """``spans`` with each action span said right before a condition span (no gap) cut again where ``cut(prev,
    condition)`` says: ``(action_end, condition_start)``, absolute; an action left empty (``action_end`` at its start)
    goes, its words the condition's. ``cut`` returns None to leave the two as they are."""
    text = analysis.text
    out: list[Span] = []
    for sp in spans:
        prev = out[-1] if out else None
        where = cut(prev, sp) if sp.kind == "C" and prev is not None and prev.kind == "A" and prev.end == sp.start \
            else None
        if where is None:
            out.append(sp)
            continue
        action_end, start = where
        if action_end > prev.start:
            out[-1] = Span("A", prev.start, action_end, text[prev.start:action_end], prev.intent)
        else:
            out.pop()
        out.append(Span("C", start, sp.end, text[start:sp.end], sp.intent))
    return out


def device_before_condition(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """An action span that is a device's name and nothing else, said right before a condition with no pause
    (空气净化器|检测到空气变差时, 扫地机器人|碰到台阶的时候), is what the condition is about, not a command: a name
    alone asks nothing, and the tagger often cuts such a subject off its condition. So is a device's name with what
    of it the condition measures and no verb (热水器水温|到了设定温度). So is 把 and an object with no verb: the
    condition's verb is said after it (把音乐|暂停了就…, the spec's 把……就)."""
    lex = analysis.lex

    def cut(prev: Span, condition: Span) -> tuple[int, int] | None:
        subject = any(a == prev.start and (b == prev.end or b < prev.end and not has_verb(prev.text, lex))
                      for a, b, *_ in analysis.found["device_kinds"])
        taken = subject or len(prev.text) > 1 and prev.text.startswith("把") and not has_verb(prev.text, lex)
        return (prev.start, prev.start) if taken else None
    return _recut_before_condition(analysis, spans, cut)


def condition_after_pause(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """An action span that runs over a pause into words that are no request of their own, right before a condition
    (打开空调，车里降|到二十四度的时候), ends at that pause: the words after it are where the condition starts."""
    lex = analysis.lex

    def cut(prev: Span, condition: Span) -> tuple[int, int] | None:
        pause = max(prev.text.rfind("，"), prev.text.rfind(","))
        head, tail = prev.text[:pause].rstrip("，,"), prev.text[pause + 1:]
        if pause > 0 and head and tail and is_plain_command(head, lex) and not is_plain_command(tail, lex):
            return prev.start + len(head), prev.start + pause + 1
        return None
    return _recut_before_condition(analysis, spans, cut)


def event_object_back(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span that starts with an event word said right before another time (提醒我吃|早饭中午十二点):
    the event is the object of the action before it (吃早饭), and the condition is the time after it."""
    lex = analysis.lex

    def cut(prev: Span, condition: Span) -> tuple[int, int] | None:
        words = lex.time_words.find(lowered(condition.text))
        if len(words) >= 2 and words[0][0] == 0 and words[0][3] == "event" and words[1][0] == words[0][1] \
                and words[1][3] != "event":
            return (condition.start + words[0][1],) * 2
        return None
    return _recut_before_condition(analysis, spans, cut)


def whole_words_at_edges(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition never starts inside an event word or an amount of time, nor after its own prefix trigger:
    where it does (暂停播客回|到家以后, 一个|半小时后, 先放首歌等我|上车了) it takes the whole word, from the span
    before it or from what no span covered."""
    text, lex = analysis.text, analysis.lex
    out = list(spans)
    if not any(sp.kind == "C" and sp.start > 0 for sp in out):
        return out  # only a condition span with text before it changes: what it takes comes from before it
    words = [(a, b) for a, b, *_ in analysis.found["events"]] + [m.span() for m in TIME_AMOUNT.finditer(analysis.low)]
    days = [(a, b) for a, b, _, cat in analysis.found["time_words"] if cat in ("day", "week")]
    prefixes = lex.triggers.terms("prefix")
    for k, cur in enumerate(out):
        if cur.kind != "C":
            continue
        prev = out[k - 1] if k > 0 else None
        if prev is not None and prev.kind == "A" and prev.end == cur.start:
            ending = [(a, b) for a, b in words + days if b == prev.end and a > prev.start]
            if ending:  # 创建一个智能场景下班|上车的时候, 提醒我开例会周五|下午: said last, it opens the condition after it
                a = min(a for a, _ in ending)
                rest = text[prev.start:a]
                if not is_fragment(rest, lex) and (is_super_task_mention(rest, lex) or is_whole_request(rest, lex)):
                    out[k - 1] = prev = Span("A", prev.start, a, rest, prev.intent)
                    out[k] = cur = Span("C", a, cur.end, text[a:cur.end], cur.intent)
                    continue
            said = lowered(prev.text)
            for who in ("我", "你", ""):
                head = said[: len(said) - len(who)] if who and said.endswith(who) else (said if not who else None)
                # the longest that fits (每当 before its 当): ``prefixes`` is a set, whose order changes per process
                trigger = max((t for t in prefixes if head and head.endswith(t) and len(t) < len(head)
                               and (len(t) >= 2 or t in RUN_ON_SHORT)), key=len, default=None)
                if trigger:  # 先放首歌等我|上车了: the prefix trigger (and its subject) start the condition
                    a = prev.end - len(trigger) - len(who)
                    out[k - 1] = Span("A", prev.start, a, text[prev.start:a], prev.intent)
                    out[k] = cur = Span("C", a, cur.end, text[a:cur.end], cur.intent)
                    break
        for a, b in words:
            if not a < cur.start < b:
                continue
            prev = out[k - 1] if k > 0 else None
            if prev is not None and prev.end > a:
                if prev.start >= a:
                    break  # the span before lies inside the word: nothing to give back
                out[k - 1] = Span(prev.kind, prev.start, a, text[prev.start:a], prev.intent)
            out[k] = Span("C", a, cur.end, text[a:cur.end], cur.intent)
            break
    return out


def inner_suffix_ends(condition: str, lex) -> list[int]:
    """Where each suffix trigger of a condition span (以后, 的时候, 时) ends short of the span's end: where a command
    or the subject of the action after it may start."""
    return [e for _, e, _, cat in lex.triggers.find(lowered(condition)) if cat == "suffix" and e < len(condition)]


def subject_after_trigger(condition: str, lex) -> int | None:
    """Where a condition span that ran past its suffix trigger into the subject of the action after it
    (熄火后|车门, 人走开以后|车门自己, 熄火后|大灯延时: what the car does by itself, said subject first) should end: after
    the trigger, when all that follows it is device names and a self word. None otherwise."""
    for e in inner_suffix_ends(condition, lex):
        rest = _SELF_WORDS.sub("", condition[e:])
        if rest and is_bare_device(rest, lex):
            return e
    return None


def trailing_subject(condition: str, lex) -> int | None:
    """Where the device name a condition span ends with starts, when something comes before it (…门把手|车门):
    before an action said to happen by itself, that name is the action's subject."""
    found = [(a, b) for a, b, *_ in devices_in(condition, lex) if b == len(condition)]
    if not found:
        return None
    a = min(a for a, _ in found)
    return a if a > 0 else None


def give_back_subject(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span ending in the subject of the action right after it gives the subject back
    (``subject_after_trigger``): 熄火后车门|自动解锁 → 熄火后|车门自动解锁."""
    text, lex = analysis.text, analysis.lex
    out = list(spans)
    for k in range(len(out) - 1):
        cur, nxt = out[k], out[k + 1]
        if cur.kind != "C" or nxt.kind != "A" or nxt.start != cur.end:
            continue
        cut = subject_after_trigger(cur.text, lex)
        if cut is None and _SELF_START.match(nxt.text):
            cut = trailing_subject(cur.text, lex)  # 我一拉门把手车门|就自动解锁
        if cut is not None:
            m = cur.start + cut
            out[k] = Span("C", cur.start, m, text[cur.start:m], cur.intent)
            out[k + 1] = Span("A", m, nxt.end, text[m:nxt.end], nxt.intent)
    return out


def whole_condition_edges(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A condition span keeps what no span took right before it that says it is about to happen (快|下班的时候)
    or who it befalls, in the passive (小孩被锁|在车里的时候, 小孩|被落在车里时), and the trigger said right after it (…亮着灯|的话|就 → …亮着灯的话), gives a
    causative 让/叫 at its end to the action after it (晚上十点一刻让|音箱… → 让音箱…) and drops the 你 it ends in
    before 就 (等我上车了你|就…: the assistant spoken to, no part of the situation) and the 一下 it starts with
    after a managing verb (用超级任务设置一下|到家时); an amount of time said
    after 提前/推迟 at the end of an action is part of that action, not a duration (把闹钟提前|半小时)."""
    text = analysis.text
    out: list[Span | None] = list(spans)
    for k, cur in enumerate(out):
        nxt = out[k + 1] if k + 1 < len(out) else None
        if cur.kind == "C":
            lo = out[k - 1].end if k > 0 and out[k - 1] is not None else 0
            about = _ABOUT_TO.search(text[lo:cur.start])  # 快|下班的时候: about to happen is part of it
            if about is None and cur.text.startswith("在"):
                about = _PASSIVE_SUBJECT.search(text[lo:cur.start])  # 小孩被锁|在车里的时候: who it befalls
            elif about is None and cur.text.startswith("被"):
                about = _SUBJECT_BEFORE_PASSIVE.search(text[lo:cur.start])  # 小孩|被落在车里时
            if about:
                a = lo + about.start()
                out[k] = cur = Span("C", a, cur.end, text[a:cur.end], cur.intent)
            if cur.text.startswith(_SOFTENER) and len(cur.text) > len(_SOFTENER) + 2 \
                    and any(b == cur.start for _, b, *_ in analysis.found["manage_verbs"]):
                a = cur.start + len(_SOFTENER)  # 设置一下|到家时: the verb's 一下, no part of the situation
                out[k] = cur = Span("C", a, cur.end, text[a:cur.end], cur.intent)
            if cur.text.endswith(_ADDRESSEE) and len(cur.text) > 3 and text.startswith("就", cur.end):
                out[k] = cur = Span("C", cur.start, cur.end - 1, cur.text[:-1], cur.intent)
            m = _TRAILING_TRIGGER.match(text, cur.end)
            if m and (nxt is None or nxt.start >= m.end()):
                out[k] = cur = Span("C", cur.start, m.end(), text[cur.start:m.end()], cur.intent)
            if nxt is not None and nxt.kind == "A" and nxt.start == cur.end and cur.text[-1:] in _ACTION_LEAD \
                    and len(cur.text) > 2:
                m = cur.end - 1
                out[k] = Span("C", cur.start, m, text[cur.start:m], cur.intent)
                out[k + 1] = Span("A", m, nxt.end, text[m:nxt.end], nxt.intent)
        elif cur.kind == "D" and k > 0 and out[k - 1].kind == "A" and out[k - 1].end == cur.start \
                and _SHIFT_VERB.search(out[k - 1].text):
            prev = out[k - 1]
            out[k - 1] = Span("A", prev.start, cur.end, text[prev.start:cur.end], prev.intent)
            out[k] = None
    return [sp for sp in out if sp is not None]


def once_markers_as_said(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Spec 执行一次: a once marker (once_markers.txt) the tagger left out of every span (仅限一次|快到公司时…) or
    read as an action of its own (…播放周杰伦的歌，|仅这一次) is a once span, when the query has a condition or a
    duration for it to join."""
    text = analysis.text
    hits = analysis.found["once"]
    if not hits or not any(sp.kind in "CD" for sp in spans):
        return list(spans)
    out = []
    for sp in spans:
        said = text[sp.start:sp.end].strip(EDGE_PUNCT)
        if sp.kind == "A" and any(text[a:b] == said for a, b, *_ in hits):
            a = sp.start + text[sp.start:sp.end].index(said)
            out.append(Span("N", a, a + len(said), said))
        else:
            out.append(sp)
    out += [Span("N", a, b, text[a:b]) for a, b, *_ in hits if not any(sp.start < b and a < sp.end for sp in out)]
    return sorted(out, key=lambda sp: sp.start)


def snap_once_spans(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """A once span (N) is the once marker it holds: characters the tagger added past the marker
    (只执行这一次明|天七点) go back to the condition span that touches it, or become the condition when
    they are a time and no condition span follows (只执行这一次明天七点|叫我起床)."""
    text, lex = analysis.text, analysis.lex
    out = list(spans)
    k = 0
    while k < len(out):
        sp = out[k]
        hits = [(a, b) for a, b, _, _ in analysis.found["once"] if a < sp.end and b > sp.start] if sp.kind == "N" else []
        if not hits:
            k += 1
            continue
        a, b = hits[0][0], hits[-1][1]
        nxt = out[k + 1] if k + 1 < len(out) else None
        prv = out[k - 1] if k > 0 else None
        if b < sp.end and nxt is not None and nxt.kind == "C" and nxt.start == sp.end:
            out[k + 1] = Span("C", b, nxt.end, text[b:nxt.end], nxt.intent)
            out[k] = sp = Span("N", sp.start, b, text[sp.start:b])
        elif b < sp.end and has_time_expression(text[b:sp.end], lex):
            out[k:k + 1] = [Span("N", sp.start, b, text[sp.start:b]), Span("C", b, sp.end, text[b:sp.end])]
            sp = out[k]
        if a > sp.start and prv is not None and prv.kind == "C" and prv.end == sp.start:
            out[k - 1] = Span("C", prv.start, a, text[prv.start:a], prv.intent)
            out[k] = Span("N", a, sp.end, text[a:sp.end])
        k += 1
    return out
