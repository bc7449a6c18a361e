"""Automation group assembly and rewrite rules (spec ``automation-tasks.md``), as small pure functions.

The span tagger (``models/automation.py``) marks, character by character, five kinds of span:

====  ==========================================================================================
C     condition: trigger events, time points/periods, delays, compounds with 且 / 或 / 就
A     action (one subquery each)
D     duration of the action (十分钟 in 座椅加热十分钟): becomes ``持续+时间``
N     "执行一次" and its kin: becomes ``执行一次+condition``
E     end of a condition's scope (另外, 现在, 马上): the actions after it are unconditional
====  ==========================================================================================

Everything else here is deterministic: ``assemble`` turns the spans into the spec's groups
``{"condition": str | "default" | None, "querys": [{"subquery", "intent"}]}``. Each spec rule is
one function named after it; none does I/O or keeps state, and a model can never vote them away.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Sequence

import ahocorasick

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.features.lexicon import term_pattern
from fastslow.features.memo import once_per_lexicons, per_lexicons
from fastslow.features.split import join_actionless, pieces_between
from fastslow.features.spoken import chinese_to_int
from fastslow.features.normalise import chinese_punctuation, surface, without_final_stop, without_spaces_near_chinese

SPAN_KINDS = ("C", "A", "D", "N", "E")
DEFAULT = "default"
REMIND = "提醒我"
REMIND_SAY = "提醒我说"
DURATION = "持续"
ONCE = "执行一次"

INTENT_SYSTEM = "系统控制"
INTENT_REMINDER = "提醒"
INTENT_VEHICLE = "车载控制"

_EDGE_PUNCT = " \t,，、;；:：。.!！?？~～…\"'“”‘’()（）[]【】"
#: punctuation that ends a sentence, and with it every condition's scope
_SENTENCE_END = frozenset("。；;！!？?\n")
#: distinct texts whose answer a memoised helper (``per_lexicons``) keeps per lexicons object
RULE_MEMO = 16384

#: the literal patterns of the rules below, compiled once (``re.search(string, …)`` looks its pattern up per call)
_HOUR_ONLY = re.compile(r".+点钟?|.+:")
_AMOUNT_UNIT = re.compile(r"度|%|倍|公里|米|档|级")
_MINUTES_END = re.compile(r"(半|刻|分)$")
_SENTENCE_STOP_CHARS = "。！？；!?;"
_SENTENCE_STOPS = re.compile(f"[{_SENTENCE_STOP_CHARS}]+")
_BA = re.compile("把")
_MINUTES_OR_HOUR_END = re.compile(r"(半|刻|分|整|钟)$")
_BA_LEAD = re.compile(r"把(?:那个|这个)?$")
_PAUSE_OR_SPACE = re.compile(r"[，,。；;！!？?\s]")
_AFTER_ONE_OCLOCK = re.compile(r"(钟|半|\d|[一二三四五六七八九十]+分)")
_CONDITION_TAIL = re.compile(r"(就|便|那么|则|的时候就|都|,|，)+$")
_DURATION_VERBS = re.compile(r"^(持续|保持|开启|打开|开着|开|维持|共)+")
_ONE_ITEM = re.compile(r"^(一个|一条|个|条)")
_REMINDED_ME = re.compile(r"^(一下|我一下|我)+")
_REMIND_HEAD = re.compile(r"^(提醒我|提醒)(一下)?")
_NOTE_VERB = re.compile(r"^(记一下|记下|记住|帮我记|记录一下|记录|记)")


@dataclass(frozen=True)
class Span:
    """A tagged stretch ``text[start:end]`` of one kind (see the module doc)."""

    kind: str
    start: int
    end: int
    text: str
    intent: str | None = None  # only in hand annotations (``[A/导航:去公司]``)


# --------------------------------------------------------------------------------------------
# Text and spans
# --------------------------------------------------------------------------------------------

def automation_text(query) -> str:
    """The text the parser reads and quotes from: ``features.normalise.surface`` (the one normaliser, letter
    case and Chinese punctuation kept, so ``HyperTask`` is quoted as written)."""
    return surface(query)


def lowered(text: str) -> str:
    """Lower case for lexicon matching, only where that keeps every character's position. İ is the one
    character whose lower case is longer (``EXPANDS_WHEN_LOWERED``): a text without it is lowered whole."""
    if EXPANDS_WHEN_LOWERED not in text:
        return text.lower()
    return "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)


#: the one character whose ``str.lower`` is two characters (i and a combining dot; a test holds it)
EXPANDS_WHEN_LOWERED = "\u0130"


_MARKUP = re.compile(r"\[(C|A|D|N|E)(?:/([^:\]]+))?:([^\]]*)\]")


def parse_markup(markup: str) -> tuple[str, list[Span]]:
    """``"[C:上车时][A:打开空调]"`` → (``"上车时打开空调"``, spans). Text outside brackets is O.

    An action may carry its intent: ``[A/导航:去公司]``. Each piece is normalised on its own with
    ``automation_text``'s rules (minus the final-punctuation strip, applied to the whole)."""
    pieces: list[tuple[str | None, str, str | None]] = []
    pos = 0
    for m in _MARKUP.finditer(markup):
        if m.start() > pos:
            pieces.append((None, markup[pos:m.start()], None))
        pieces.append((m.group(1), m.group(3), m.group(2)))
        pos = m.end()
    if pos < len(markup):
        pieces.append((None, markup[pos:], None))
    text, spans = "", []
    for kind, raw, intent in pieces:
        piece = without_spaces_near_chinese(unicodedata.normalize("NFKC", raw))
        if kind is not None and piece:
            spans.append(Span(kind, len(text), len(text) + len(piece), piece, intent))
        text += piece
    lead = len(text) - len(text.lstrip())
    stripped = chinese_punctuation(without_final_stop(text.lstrip()))
    out = []
    for s in spans:
        start, end = max(s.start - lead, 0), min(s.end - lead, len(stripped))
        if start < end:
            out.append(Span(s.kind, start, end, stripped[start:end], s.intent))
    return stripped, out


def to_markup(text: str, spans: Sequence[Span]) -> str:
    """The inverse of ``parse_markup`` (intents included when known)."""
    out, pos = [], 0
    for s in sorted(spans, key=lambda s: s.start):
        out.append(text[pos:s.start])
        tag = f"{s.kind}/{s.intent}" if s.intent else s.kind
        out.append(f"[{tag}:{text[s.start:s.end]}]")
        pos = s.end
    out.append(text[pos:])
    return "".join(out)


def spans_to_tags(text: str, spans: Sequence[Span]) -> list[str]:
    """Character BIO tags (``B-C``, ``I-C``, ``O``) of the spans."""
    tags = ["O"] * len(text)
    for s in spans:
        for i in range(s.start, min(s.end, len(text))):
            tags[i] = ("B-" if i == s.start else "I-") + s.kind
    return tags


def tags_to_spans(text: str, tags: Sequence[str]) -> list[Span]:
    """Spans of a BIO tag sequence; an ``I-`` without its ``B-`` starts a span (lenient decoding).

    A span goes on while the tag is ``I-`` of its kind; any other tag ends it, and a ``B-`` or ``I-`` of a
    span kind starts the next one."""
    spans, kind, start, going_on = [], None, 0, None
    for i, tag in enumerate(list(tags)[: len(text)] + ["O"]):
        if tag == going_on:
            continue
        if kind is not None:
            spans.append(Span(kind, start, i, text[start:i]))
            kind = going_on = None
        opens = _OPENING_TAGS.get(tag)
        if opens is not None:
            kind, start, going_on = opens, i, "I-" + opens
    return spans


#: the tags that start a span (``B-C``, ``I-C`` …) and its kind
_OPENING_TAGS = {f"{prefix}-{kind}": kind for prefix in "BI" for kind in SPAN_KINDS}


@per_lexicons(RULE_MEMO)
def signal_text(text: str, lex: AutomationLexicons) -> str:
    """``lowered(text)`` with every seat, direction and signal-looking device name blanked out (``\\x00``):
    the 后 of 后排 / 左后, 往后 / 向前 and 后视镜 is part of a name or a direction, never a trigger
    (后 / 前 are triggers in triggers.txt). The positions of the text are kept."""
    low = lowered(text)
    hits = []
    for matcher in (lex.positions, lex.directions):  # one search first: most texts name no seat or direction
        if matcher is not None and matcher.search(low) is not None:
            hits += matcher.find(low)
    devices = _signal_devices(lex)
    if devices.pattern is not None and devices.pattern.search(low) is not None:
        hits += [h for h in lex.device_kinds.find(low) if h[2] in devices.names]
    if not hits:
        return low
    chars = list(low)
    for a, b, *_ in hits:
        chars[a:b] = "\x00" * (b - a)
    return "".join(chars)


@dataclass(frozen=True)
class SignalDevices:
    """The device names that look like a signal on their own (``lex.signal`` of the name: 后视镜, 后备箱), and one
    pattern of them: a text in which none of them occurs finds none of them among its device names."""

    names: frozenset
    pattern: re.Pattern | None


@once_per_lexicons
def _signal_devices(lex: AutomationLexicons) -> SignalDevices:
    """``SignalDevices`` of ``lex``, found once per lexicons object rather than a ``lex.signal`` pass over every
    device name found in a text."""
    names = frozenset(term for term in lex.device_kinds.category if lex.signal(term))
    return SignalDevices(names, term_pattern(names))


def has_condition_signal(text: str, lex: AutomationLexicons) -> bool:
    """``lex.signal`` outside seat, direction and device names: 副驾座椅往后调一点, 左后车窗打开一半 and
    后排座椅加热调到最高 hold no condition signal; 后排有人的时候 does (的时候).

    Blanking names out can only take a signal away (``\x00`` is in no signal word or time shape, and the
    shapes look at nothing around them), so a text without a signal at all is answered without blanking, and
    one in which no name was blanked out keeps the signal it has."""
    low = lowered(text)
    if not lex.signal(low):
        return False
    masked = signal_text(text, lex)
    return masked == low or lex.signal(masked)


def demote_signalless_conditions(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A condition span naming a seat, direction or device with no condition signal of its own outside
    those names (副驾座椅往前挪一点, 主驾后|视镜往下调) is a plain command, not a condition: it becomes an
    action, joined to an action span that touches it. One followed by 就 / 便 / 那么 stays."""
    if not any(sp.kind == "C" for sp in spans):
        return list(spans)  # nothing to demote, and only a demoted condition joins an action
    masked = signal_text(text, lex)
    if "\x00" not in masked:
        return list(spans)  # no name blanked out: no condition names one
    then = lex.triggers.terms("then")
    out: list[Span] = []
    demoted = False  # was the last span of ``out`` a demoted condition?
    for sp in spans:
        was_condition = False
        if sp.kind == "C":
            named = "\x00" in masked[sp.start:sp.end]
            follows = lowered(text[sp.end:sp.end + 2])
            if named and not lex.signal(masked[sp.start:sp.end]) and not any(follows.startswith(t) for t in then):
                sp, was_condition = Span("A", sp.start, sp.end, sp.text, sp.intent), True
        if sp.kind == "A" and out and out[-1].kind == "A" and out[-1].end == sp.start and (demoted or was_condition):
            prev = out.pop()
            sp = Span("A", prev.start, sp.end, text[prev.start:sp.end], prev.intent)
            was_condition = True
        out.append(sp)
        demoted = was_condition
    return out


#: single-character prefix triggers that can start a condition said right after an action (等我上车了)
_RUN_ON_SHORT = frozenset({"等", "当"})


def _condition_starts(low: str, lex: AutomationLexicons, events: bool) -> list[int]:
    """Where a condition can begin inside ``low``: a prefix trigger (如果, 要是, 等, 当 …; not 到 / 在 / 一,
    which are too often part of a request: 调到, 在家) and, if ``events``, an event word (到公司, 快到) or
    what a state condition is about (电量, 车速: condition_subjects.txt)."""
    starts = [a for a, b, term, cat in lex.triggers.find(low) if cat == "prefix" and (b - a >= 2 or term in _RUN_ON_SHORT)]
    if events:
        starts += [a for a, *_ in lex.events.find(low)]
        subjects = getattr(lex, "condition_subjects", None)
        if subjects is not None:
            starts += [a for a, _, _, cat in subjects.find(low) if cat != "start"]  # start: _spoken_condition_starts
    return sorted(set(starts))


@per_lexicons(RULE_MEMO)
def may_hold_command(text: str, lex: AutomationLexicons) -> bool:
    """Can a piece of ``text`` be a whole plain command (``_is_plain_command``)? Only if ``text`` holds an action
    verb, a reminder verb or a memo word (every plain command does: its verb, or ``has_verb``). Exact for every
    piece when ``text`` has no Σ, the one letter whose lower case depends on the letters around it."""
    if "Σ" in text:
        return True
    low = lowered(text)
    return bool(lex.action_verbs.search(low) or lex.reminder_verbs.search(low) or lex.memo.search(low))


@per_lexicons(RULE_MEMO)
def _is_plain_command(text: str, lex: AutomationLexicons) -> bool:
    """A request that is whole on its own and holds no trigger word (an event may be its object: 导航回家):
    it starts with a verb of two characters or more and has an object (打开空调, 查一下今天的路况: a time in
    the object is content), or names a device or starts with 把, has a verb and no time (把音量调到十二)."""
    text = strip_fillers(text, lex)
    if len(text) < 3:
        return False
    low = lowered(text)
    head = lex.action_verbs.prefix(low)
    if head and len(head) >= 2 and len(low) > len(head):
        if has_time_expression(low[:len(head)], lex):
            return False  # 查一下今天的路况: a time in its object is content, in its verb it is not
    elif not may_hold_command(text, lex) or has_time_expression(text, lex) \
            or not ((devices_in(text, lex) or low.startswith("把")) and has_verb(text, lex)):
        return False  # (has_verb needs a verb, reminder or memo word: one search tells most pieces without any)
    # last, as the dearest test: a trigger of its own (且, 时, 如果, 超过) makes it part of a condition (an event,
    # 回家, does not); blanking names out only takes triggers away, so a text without any trigger word has none
    if lex.triggers.search(low) is None:
        return True
    return not any(cat != "prefix" or b - a >= 2 for a, b, _, cat in lex.triggers.find(signal_text(text, lex)))


#: a spoken clock time, minutes included: 七点四十五, 八点半, 十二点零五, 三点一刻, 7点45, 7:45
SPOKEN_CLOCK = re.compile(
    rf"(?:\d{{1,2}}|[零一二两三四五六七八九十]{{1,3}})(?:点钟?|:)(?:半|[一三]刻|整|(?:\d{{1,2}}|[零一二三四五六七八九十]{{1,3}})分?)?")


def clock_times(text: str) -> list[tuple[int, int]]:
    """(start, end) of every spoken clock time of ``text`` that has minutes (七点四十五, 八点半, 十二点整)."""
    out = []
    if "点" not in text and ":" not in text:
        return out  # every clock time of SPOKEN_CLOCK holds one of them
    for m in SPOKEN_CLOCK.finditer(text):
        word = m.group()
        if _HOUR_ONLY.fullmatch(word) or _AMOUNT_UNIT.match(text[m.end():]):
            continue  # no minutes, or a number (一点五度)
        if word.startswith("一点") and not _MINUTES_END.search(word):
            continue  # 调高一点五: "a bit", not one o'clock
        out.append(m.span())
    return out


def whole_clock_times(text: str, spans: Sequence[Span]) -> list[Span]:
    """Spec 常见时间条件 (时间点): a clock time is one condition, never cut in two: a condition span
    ending inside 七点四十五 / 八点半 / 三点一刻 takes the rest of it from the span after it."""
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


#: a command ending in a verb whose object or complement is the place or amount after it (导航|回家, 调|到二十三度):
#: no condition starts right after it
_TAKES_PLACE = re.compile(r"(?:导航|去|回|到|开到|送到|调|开|升|降|设|放|拉)$")


def takes_place(text: str, lex: AutomationLexicons) -> bool:
    """Does ``text`` end in a verb whose place or amount comes next (``_TAKES_PLACE``: 导航, 调)? Not when that
    character ends a device's name (打开空调: 调 is part of 空调)."""
    low = lowered(text)
    m = _TAKES_PLACE.search(low)
    return m is not None and not any(a < m.start() < b for a, b, *_ in lex.device_kinds.find(low))


def _spoken_condition_starts(low: str, lex: AutomationLexicons) -> list[int]:
    """Where a condition span that begins with a whole command may start its condition, beyond the trigger and
    event words: a word people start a spoken condition with, no trigger on its own (到, 进, 我:
    condition_subjects.txt, category ``start``), never inside a trigger or an event word (快到, 不到)."""
    subjects = getattr(lex, "condition_subjects", None)
    if subjects is None:
        return []
    found = subjects.find(low)
    words = [(a, b) for a, b, *_ in lex.triggers.find(low) + lex.events.find(low)]
    words += [(a, b) for a, b, _, cat in found if cat != "start"]
    return [p for p, _, _, cat in found if cat == "start" and not any(a < p < b for a, b in words)
            and not (p > 0 and low[p - 1] in _BEFORE_NO_START)]


def _time_starts(low: str, lex: AutomationLexicons) -> list[int]:
    """Where a time point begins in ``low``: a day, weekday or period word (明天, 周五, 晚上) or a clock time."""
    starts = [a for a, _, _, cat in lex.time_words.find(low) if cat in ("day", "week", "period")]
    if _CLOCK_MARKS.isdisjoint(low):
        return starts
    return starts + [m.start() for m in _CLOCK.finditer(low) if _has_clock(m.group())]


def _ends_in_suffix_trigger(low: str, lex: AutomationLexicons) -> bool:
    """Does ``low`` end with a suffix trigger of two characters or more (以后, 的时候, 之后)? (Only a text that ends
    with one of those words can: most do not, and their triggers are not looked for.)"""
    return low.endswith(_long_suffixes(lex)) and any(
        e == len(low) and e - a >= 2 and cat == "suffix" for a, e, _, cat in lex.triggers.find(low))


#: 不到, 没到, 快到, 要到: the word is part of the state said before it, no condition starts there
_BEFORE_NO_START = frozenset("不没快要将还已")


def split_run_on(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """Spec 不向左回溯 on an unpunctuated run-on (action + condition + action): a condition span that
    starts with a whole plain command (关闭车窗|到公司的时候, 导航去公司|快到的时候) is that action and
    the condition after it; an action span ending in a condition (先放首歌|等我上车了) followed by
    another action is split the same way. The command before the cut must hold no condition signal,
    so 关闭后排空调且后排有人时 (且) stays whole (复合条件完整性)."""
    out: list[Span] = []
    ordered = join_split_object(text, sorted(spans, key=lambda sp: sp.start), lex)
    for k, sp in enumerate(ordered):
        nxt = ordered[k + 1] if k + 1 < len(ordered) else None
        cut, cut_head = None, 0
        if (sp.kind == "C" and may_hold_command(sp.text, lex)) or (
                sp.kind == "A" and nxt is not None and nxt.kind == "A" and not sentence_break(text, sp.end, nxt.start)
                and not lex.reminder_verbs.prefix(lowered(sp.text))):
            low = lowered(sp.text)
            starts = _condition_starts(low, lex, events=sp.kind == "C")
            if sp.kind == "C" or _ends_in_suffix_trigger(low, lex):  # 关上天窗|到服务区的时候, 关掉电视机|我睡着以后
                starts = sorted(set(starts) | set(_spoken_condition_starts(low, lex)))
            if sp.kind == "C":  # 打开座椅通风|七点半: a time point said after a whole command
                starts = sorted(set(starts) | set(_time_starts(low, lex)))
            for p in starts:
                head = _without_trailing_connector(sp.text[:p], lex) if sp.kind == "C" else sp.text[:p]
                if p > 0 and _is_plain_command(head, lex) and sp.text[p:].strip() \
                        and not takes_place(head, lex):
                    cut = p
                    cut_head = len(head)
                    break
        if cut is None and sp.kind == "A":
            # 打开空调七点四十五关掉空调: a clock time between two commands in one action span
            for a, b in clock_times(sp.text):
                if a > 0 and _is_plain_command(sp.text[:a], lex) and has_verb(sp.text[b:], lex):
                    m, e = sp.start + a, sp.start + b
                    out += [Span("A", sp.start, m, text[sp.start:m], sp.intent), Span("C", m, e, text[m:e]),
                            Span("A", e, sp.end, text[e:sp.end])]
                    cut = -1
                    break
        if cut == -1:
            continue
        if cut is None:
            out.append(sp)
            continue
        m, h = sp.start + cut, sp.start + cut_head  # 空调开到二十六度|然后|出发前十分钟: 然后 is neither
        out.append(Span("A", sp.start, h, text[sp.start:h], sp.intent if sp.kind == "A" else None))
        out.append(Span("C", m, sp.end, text[m:sp.end]))
    return out


def split_inside_action(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """An action span holding two requests the tagger did not cut: a scope end said inside it (提醒我充电|对了|
    今天天气怎么样: scope_end.txt, ``scope_end``) ends it; a reminder after a sequence connector (仪表上亮灯|并且|
    提醒我: connectors.txt, ``break``) and a super-task clause said after a whole command (关闭所有的灯|把这个存成
    智能场景) are their own actions."""
    out: list[Span] = []
    words = _action_cut_words(lex)
    for sp in spans:
        if sp.kind != "A" or words.search(lowered(sp.text)) is None:
            out.append(sp)  # (one search first: most action spans hold none of the words a cut needs)
        else:
            out += split_one_action(text, sp, lex)
    return out


def split_one_action(text: str, sp: Span, lex: AutomationLexicons) -> list[Span]:
    """``split_inside_action`` of one action span ``sp``: the spans it becomes (``[sp]`` when it holds one request)."""
    low = lowered(sp.text)
    stop = _SENTENCE_STOPS.search(sp.text.rstrip(_EDGE_PUNCT))
    if stop and stop.start() > 0:  # 打开加湿器。导航去公司: a sentence ends the request and the condition's scope
        return split_inside_action(text, [Span("A", sp.start, sp.start + stop.start(), sp.text[:stop.start()], sp.intent),
                                          Span("A", sp.start + stop.end(), sp.end, sp.text[stop.end():])], lex)
    said_first = _condition_said_first(sp.text, lex)
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
                and _management_after_command(sp.text[:m.start()], sp.text[m.start():], lex)), None)
    if cut is not None:
        return [Span("A", sp.start, sp.start + cut, sp.text[:cut], sp.intent),
                Span("A", sp.start + cut, sp.end, sp.text[cut:])]
    return [sp]


@once_per_lexicons
def _action_cut_words(lex: AutomationLexicons) -> re.Pattern:
    """One pattern of everything ``split_one_action`` cuts at: a sentence stop, a suffix trigger of two characters or
    more (``_condition_said_first``), a scope-end word, a connector and 把. An action span in which none occurs is
    left as it is, whatever the rest of the rule would ask of it (a test holds it on every bundled text)."""
    return term_pattern({*_SENTENCE_STOP_CHARS, *_long_suffixes(lex), *lex.scope_end.category, *lex.breaks.category, "把"})


def _condition_said_first(action: str, lex: AutomationLexicons) -> int:
    """Where the whole command after a condition said first begins inside one action span (上班的路上|播放早间新闻:
    a suffix trigger of two characters or more, then a whole command); 0 when there is none, or the span is a
    reminder, a memo or a super-task clause (提醒我下班的时候买菜: its time is content)."""
    low = lowered(action)
    long_suffixes = _long_suffix_triggers(lex)
    if long_suffixes is None or long_suffixes.search(low) is None:
        return 0  # no suffix trigger of two characters or more anywhere (most spans): ``ends`` below is empty
    if lex.action_verbs.prefix(low) or lex.reminder_verbs.prefix(low):
        return 0  # said verb first: no condition before its command
    ends = [b for a, b, _, cat in lex.triggers.find(low) if cat == "suffix" and b - a >= 2 and 0 < a and b < len(low)]
    if not ends or lex.memo.search(low) or is_super_task_mention(action, lex):
        return 0
    return next((b for b in ends if _is_plain_command(action[b:], lex)), 0)


@once_per_lexicons
def _long_suffix_triggers(lex: AutomationLexicons) -> re.Pattern | None:
    """One pattern of the suffix triggers of two characters or more (以后, 的时候): a text in which none of them
    occurs finds none of them among its triggers (None when there are no such words)."""
    return term_pattern(_long_suffixes(lex))


@once_per_lexicons
def _long_suffixes(lex: AutomationLexicons) -> tuple[str, ...]:
    """The suffix triggers of two characters or more (以后, 的时候), found once per lexicons object."""
    return tuple(sorted(t for t, cat in lex.triggers.category.items() if cat == "suffix" and len(t) >= 2))


def _sequence_gap(gap: str, lex: AutomationLexicons) -> bool:
    """Is ``gap`` (text between two spans) a pause or a sequence connector (，, 然后, 接着: connectors.txt ``break``)?"""
    if any(ch in _EDGE_PUNCT and not ch.isspace() for ch in gap):
        return True
    low = lowered(gap).strip(_EDGE_PUNCT)
    return bool(low) and any(a == 0 and b == len(low) and cat == "break" for a, b, _, cat in lex.breaks.find(low))


def command_before_sequence(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A condition span that is a whole plain command followed by a sequence connector and another condition
    (空调开到二十六度|然后|出发前十分钟…: 开到 read as a state) is that command: 然后 never joins two conditions."""
    out = list(spans)
    for k in range(len(out) - 1):
        sp, nxt = out[k], out[k + 1]
        if sp.kind == "C" and nxt.kind == "C" and _is_plain_command(sp.text, lex):
            gap = lowered(text[sp.end:nxt.start].strip(_EDGE_PUNCT))
            if gap and any(a == 0 and b == len(gap) and cat == "break" for a, b, _, cat in lex.breaks.find(gap)):
                out[k] = Span("A", sp.start, sp.end, sp.text)
    return out


def _without_trailing_connector(text: str, lex: AutomationLexicons) -> str:
    """``text`` less a sequence connector it ends with (然后, 并且, 接着: connectors.txt, automation ``break``)."""
    low = lowered(text)
    for a, b, _, cat in lex.breaks.find(low):
        if b == len(low) and a > 0 and cat == "break":
            return text[:a]
    return text


def join_split_object(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A run-on cut at the wrong place between a command and the condition after it (spans in order):
    a command ending in a verb that takes a place (``_TAKES_PLACE``: 打开导航|回家到小区门口的时候) gets its
    object back when the condition holds a later start of its own; a command ending in the word a spoken
    condition starts with (暂停音乐进|停车场的时候: condition_subjects.txt, ``start``) or in what a state is
    about (打开空调车内温度降|到二十二度的时候) gives it to the condition. Nothing moves across a pause or when
    what would be left is no whole command."""
    out = list(spans)
    for k in range(len(out) - 1):
        sp, nxt = out[k], out[k + 1]
        if sp.kind != "A" or nxt.kind != "C" or nxt.start != sp.end:
            continue
        low = lowered(sp.text)
        moved = False
        if takes_place(low, lex):
            both = lowered(sp.text + nxt.text)
            for p in sorted(set(_condition_starts(both, lex, events=True)) | set(_spoken_condition_starts(both, lex))):
                if p > len(sp.text) and nxt.text[p - len(sp.text):].strip() and _is_plain_command(both[:p], lex) \
                        and not takes_place(both[:p], lex):
                    m = sp.start + p
                    out[k] = Span("A", sp.start, m, text[sp.start:m], sp.intent)
                    out[k + 1] = Span("C", m, nxt.end, text[m:nxt.end], nxt.intent)
                    moved = True
                    break
        if moved:
            continue
        subjects = getattr(lex, "condition_subjects", None)
        for a, b, _, cat in (subjects.find(low) if subjects is not None else []):
            # 暂停音乐进|停车场的时候 (a start word at the end), 打开空调车内温度降|到二十二度的时候 (what the
            # state is about and what follows it)
            if (b == len(low) or cat != "start") and a > 0 and _is_plain_command(sp.text[:a], lex) \
                    and not takes_place(low[:a], lex):
                m = sp.start + a
                out[k] = Span("A", sp.start, m, text[sp.start:m], sp.intent)
                out[k + 1] = Span("C", m, nxt.end, text[m:nxt.end], nxt.intent)
                break
    return out


#: action verbs that start a new command in a run-on (打开空调|播放音乐): automation kinds of actions.txt
_COMMAND_START_KINDS = frozenset({"on", "off", "media", "nav", "comm", "query"})
#: characters before a command start that join it to the one before (打开空调和播放音乐 is split elsewhere)
_JOINED_BEFORE = frozenset("和与及并再把给让说")


def command_cuts(text: str, lex: AutomationLexicons) -> list[int]:
    """Where an unpunctuated run of commands (关掉客厅的灯打开扫地机器人, 主驾座椅往前调一点副驾座椅加热打开)
    starts a new one: at a verb of two characters or more (打开, 播放, 导航) when what comes before is a
    whole command (``_is_plain_command``) and so is what follows (打开导航回家 is one); at a seat or a device only after a
    command said object first (主驾座椅往前调一点|副驾…), never inside a verb's object (关掉家里所有的灯,
    打开天窗遮阳帘); at a sequence connector (然后, 再) between two whole commands. Nothing is cut after a joiner (和, 再, 把), after a message's 说, or in a reminder or
    a prohibition (提醒我打开空调关闭车窗 is one reminder)."""
    if len(text) < 6:
        return []  # a cut leaves a whole command of three characters or more on each side (_is_plain_command)
    low = lowered(text)
    words = _cut_point_words(lex)
    first = words.search(low, 3) if words is not None else None
    if first is None or first.start() > len(text) - 3:
        return []  # no verb, name or sequence connector begins where a cut could be: no point below (asked
        # first: three texts in four have none, and the reminder test below answers [] as well)
    if lex.reminder_verbs.prefix(low) or low.startswith(("提醒", "别", "不要")):
        return []  # a reminder or a prohibition (提醒我打开空调关闭车窗) is one request
    if not may_hold_command(text[:len(text) - 3], lex):
        return []  # every point is three characters before the end at most: no command before any point (浴室的|风扇…)
    verbs = {a for a, b, _, cat in lex.action_verbs.find(low) if b - a >= 2 and cat in _COMMAND_START_KINDS}
    names = {a for a, *_ in lex.positions.find(low)} | {a for a, *_ in lex.device_kinds.find(low)}
    breaks = {a for a, _, kind in plain_breaks(low, lex) if kind == "break"}  # 然后, 再, 顺便 before a command
    points = sorted(p for p in verbs | names | breaks if 3 <= p <= len(text) - 3)  # room for a command each side
    if not points or not may_hold_command(text[:points[-1]], lex) or not may_hold_command(text[points[0]:], lex):
        return []  # a whole command holds a verb, reminder or memo word: none before the last point or after the first
    cuts, last = [], 0
    for p in points:
        if p - last < 3 or (p not in breaks and low[p - 1] in _JOINED_BEFORE) or "说" in low[last:p]:
            continue
        left = strip_fillers(text[last:p], lex)
        if p not in verbs and p not in breaks and lex.action_verbs.prefix(lowered(left)):
            continue  # a name inside the object of a verb-first command
        if _is_plain_command(left, lex) and _is_plain_command(strip_fillers(text[p:], lex), lex):
            cuts.append(p)
            last = p
    if cuts and unconditional_kind(text, lex):
        return []  # a super-task or memo clause (修改我的回家习惯) is one request (asked last: most texts have no cut)
    return cuts


@once_per_lexicons
def _cut_point_words(lex: AutomationLexicons) -> re.Pattern | None:
    """One pattern of the words a point of ``command_cuts`` starts with: its verbs (two characters or more, of
    ``_COMMAND_START_KINDS``), the seat and device names, the sequence connectors (``break``). A point is where one
    of them is found, so a text in which none of them begins at a possible point has no cut; the leftmost start
    of any of them is what one search of them all finds (None when there are no such words)."""
    verbs = [t for t, cat in lex.action_verbs.category.items() if len(t) >= 2 and cat in _COMMAND_START_KINDS]
    names = list(lex.positions.category) + list(lex.device_kinds.category)
    breaks = [t for t, cat in lex.breaks.category.items() if cat == "break"]
    return term_pattern(set(verbs + names + breaks))


def split_joined_actions(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """Every action span holding an unpunctuated run of commands (``command_cuts``) becomes one span per
    command: 早上出门的时候|关掉家里所有的灯|打开扫地机器人 has two actions."""
    out: list[Span] = []
    for sp in spans:
        if sp.kind != "A":
            out.append(sp)
            continue
        cuts = command_cuts(sp.text, lex)
        if not cuts and sp.end - sp.start == len(sp.text) and text.startswith(sp.text, sp.start):
            out.append(sp)  # one command, and the span quotes ``text``: it would be made again as it is
            continue
        bounds = [0] + cuts + [len(sp.text)]
        for a, b in zip(bounds, bounds[1:]):
            out.append(Span("A", sp.start + a, sp.start + b, text[sp.start + a: sp.start + b],
                            sp.intent if a == 0 else None))
    return out


def whole_words_at_edges(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A condition never starts inside an event word or an amount of time, nor after its own prefix trigger:
    where it does (暂停播客回|到家以后, 一个|半小时后, 先放首歌等我|上车了) it takes the whole word, from the span
    before it or from what no span covered."""
    out = list(spans)
    if not any(sp.kind == "C" and sp.start > 0 for sp in out):
        return out  # only a condition span with text before it changes: what it takes comes from before it
    low = lowered(text)
    words = [(a, b) for a, b, *_ in lex.events.find(low)] + [m.span() for m in _TIME_AMOUNT.finditer(low)]
    prefixes = lex.triggers.terms("prefix")
    for k, cur in enumerate(out):
        if cur.kind != "C":
            continue
        prev = out[k - 1] if k > 0 else None
        if prev is not None and prev.kind == "A" and prev.end == cur.start:
            ending = [(a, b) for a, b in words if b == prev.end and a > prev.start]
            if ending:  # 创建一个智能场景下班|上车的时候: an event said last belongs to the condition after it
                a = min(a for a, _ in ending)
                rest = text[prev.start:a]
                if not is_fragment(rest, lex) and (is_super_task_mention(rest, lex) or _is_plain_command(rest, lex)):
                    out[k - 1] = prev = Span("A", prev.start, a, rest, prev.intent)
                    out[k] = cur = Span("C", a, cur.end, text[a:cur.end], cur.intent)
                    continue
            said = lowered(prev.text)
            for who in ("我", "你", ""):
                head = said[: len(said) - len(who)] if who and said.endswith(who) else (said if not who else None)
                # the longest that fits (每当 before its 当): ``prefixes`` is a set, whose order changes per process
                trigger = max((t for t in prefixes if head and head.endswith(t) and len(t) < len(head)
                               and (len(t) >= 2 or t in _RUN_ON_SHORT)), key=len, default=None)
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


#: an amount of time said before a delay or a duration (一个半小时, 两个钟头, 四十五分钟后)
_TIME_AMOUNT = re.compile(r"(?:\d+|[零一二两三四五六七八九十百几]+)个?半?(?:个)?(?:小时|钟头|分钟|分|秒钟|秒|刻钟)(?:后|以后|之后|过后)?")


def leading_time_condition(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """Spec 常见时间条件 (时间点): a time point said first and a command after it, tagged as one action
    (今天下午四点一刻关掉扫地机器人, 七点一刻喊我起床, 下周一提醒我交房租), are the condition and the action.
    The command must start with its verb (a verb of two characters, a reminder verb, 把, 给…): 今天好热，把空调
    打开 and 今晚有什么好看的电影 hold no time condition."""
    out = list(spans)
    if not out or out[0].kind not in "AC" or (out[0].kind == "C" and any(sp.kind == "A" for sp in out[1:2])):
        return out  # a condition span is the time and its command only when no action follows it (七点四十五打开窗帘|就这一次)
    first = out[0]
    low = lowered(first.text)
    end = time_prefix(low, lex)
    if not 0 < end < len(low):
        return out  # no time point said first, or nothing after it
    rest = strip_fillers(first.text[end:], lex)
    head = lex.action_verbs.prefix(lowered(rest)) or ""
    starts = len(head) >= 2 or lex.reminder_verbs.prefix(lowered(rest)) or rest.startswith(("把", "给"))
    if first.kind == "C" and (not _is_plain_command(rest, lex) or len(head) < 2):
        return out
    if 0 < end < len(low) and starts and (_is_plain_command(rest, lex) or lex.reminder_verbs.prefix(lowered(rest))):
        m = first.start + end
        out[0:1] = [Span("C", first.start, m, text[first.start:m]),
                    Span("A", m, first.end, text[m:first.end], first.intent if first.kind == "A" else None)]
    return out


def time_prefix(low: str, lex: AutomationLexicons) -> int:
    """How many characters at the start of ``low`` are a time point: days, periods, weekdays and a clock
    time (明天早上七点半, 除夕晚上八点, 下周一); 0 when it holds neither a clock time nor a day."""
    first = low[:1]
    if not first.isdecimal() and first not in _time_point_firsts(lex):
        return 0  # neither a clock time nor a time word starts ``low`` (most commands): the loop would stop at once
    pos, anchored = 0, False
    while pos < len(low):
        m = SPOKEN_CLOCK.match(low, pos)
        if m and m.end() > pos and not _AMOUNT_UNIT.match(low[m.end():]) and not (
                m.group().startswith("一点") and not _MINUTES_OR_HOUR_END.search(m.group())):
            pos, anchored = m.end(), True
            continue
        word = lex.time_words.prefix(low[pos:])
        category = lex.time_words.category.get(word) if word else None
        if category in ("day", "week", "period"):
            pos += len(word)
            anchored = anchored or category != "period"
            continue
        break
    return pos if anchored else 0


#: the Chinese numerals a clock time of ``SPOKEN_CLOCK`` can start with (besides a digit, ``\d``)
_CLOCK_NUMERALS = "零一二两三四五六七八九十"


@once_per_lexicons
def _time_point_firsts(lex: AutomationLexicons) -> frozenset:
    """The characters other than digits that a time point of ``time_prefix`` can start with: a clock time's numeral and
    the first character of a day, weekday or period word."""
    return frozenset(_CLOCK_NUMERALS) | {t[0] for t, cat in lex.time_words.category.items() if cat in ("day", "week", "period")}


@per_lexicons(RULE_MEMO)
def inner_suffix_ends(condition: str, lex: AutomationLexicons) -> tuple[int, ...]:
    """Where each suffix trigger of a condition span (以后, 的时候, 时) ends short of the span's end: where a command
    or the subject of the action after it may start (``trailing_command_start``, ``subject_after_trigger`` ask it of
    the same span)."""
    return tuple(e for _, e, _, cat in lex.triggers.find(lowered(condition)) if cat == "suffix" and e < len(condition))


def trailing_command_start(condition: str, lex: AutomationLexicons) -> int | None:
    """Where a whole command starts right after a suffix trigger inside a condition span: the command runs
    to the span's end (下班的时候|放点音乐) or to a condition after it (车速超过一百的时候|把音量调高|车速低于…)."""
    for e in inner_suffix_ends(condition, lex):
        rest = condition[e:]
        if not may_hold_command(rest, lex):
            continue  # no verb, reminder or memo word after the trigger: no whole command in any piece of it
        if _is_plain_command(rest, lex):
            return e
        for p in _condition_starts(lowered(rest), lex, events=True):
            if p > 0 and _is_plain_command(rest[:p], lex):
                return e
    return None


def condition_inside_action(action: str, lex: AutomationLexicons) -> int | None:
    """Where the condition ends in a first action span that holds one (前方有行人突然横穿时|自动紧急制动): after a
    suffix trigger (时, 的时候, 以后) with no whole command before it and a command or a built-in function
    after it. None when the span is one request (打开空调, 查一下明天什么时候下雨)."""
    cutting = _cutting_suffix_triggers(lex)
    if cutting is None or cutting.search(lowered(action)) is None:
        return None  # no suffix trigger that ends a condition here at all (blanking names out only takes triggers away)
    low = lowered(signal_text(action, lex))
    for _, e, term, cat in lex.triggers.find(low):
        if cat != "suffix" or e >= len(action) or len(term) < 2 and term != "时":
            continue
        before, rest = action[:e], action[e:]
        if _is_plain_command(before, lex) or lex.action_verbs.prefix(lowered(before)) or lex.reminder_verbs.search(lowered(before)):
            return None
        if _is_plain_command(rest, lex) or builtin_function_action(rest, lex) or lex.reminder_verbs.prefix(lowered(rest)):
            return e
    return None


@once_per_lexicons
def _cutting_suffix_triggers(lex: AutomationLexicons) -> re.Pattern | None:
    """One pattern of the suffix triggers after which ``condition_inside_action`` cuts (two characters or more, or
    时): a text in which none of them occurs finds none of them among its triggers (None when there are none)."""
    return term_pattern({t for t, cat in lex.triggers.category.items() if cat == "suffix" and (len(t) >= 2 or t == "时")})


def split_trailing_command(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A condition span that runs past its own trigger into a whole command (下班的时候放点音乐|就一次) is
    that condition and the action (and, when another condition follows the command, that condition:
    ``split_run_on`` then cuts it off). Not before a 就 that ends a compound condition (晚饭前20分钟后转向灯关闭就…:
    spec 复合条件完整性); a 就 that only starts a once marker (就一次) ends nothing."""
    out: list[Span] = []
    low, then = None, ()
    for k, sp in enumerate(spans):
        if sp.kind == "A" and k == 0:
            cut = condition_inside_action(sp.text, lex)
            if cut is not None:
                m = sp.start + cut
                out += [Span("C", sp.start, m, text[sp.start:m]), Span("A", m, sp.end, text[m:sp.end], sp.intent)]
                continue
        if sp.kind == "C":
            if low is None:  # (only condition spans read these: a text without one never lowers)
                low, then = lowered(text), tuple(lex.triggers.terms("then"))
            follows = low[sp.end:]
            if not follows.startswith(then) or lex.once.prefix(follows) or lex.once.prefix(follows[1:]):
                cut = trailing_command_start(sp.text, lex)
                if cut is not None:
                    m = sp.start + cut
                    rest = "A" if _is_plain_command(sp.text[cut:], lex) else "C"  # a command, then a condition:
                    out += [Span("C", sp.start, m, text[sp.start:m], sp.intent),  # split_run_on cuts the rest
                            Span(rest, m, sp.end, text[m:sp.end])]
                    continue
        out.append(sp)
    return out


_SELF_WORDS = re.compile(r"(?:自动|自己|自行|会)+$")


def subject_after_trigger(condition: str, lex: AutomationLexicons) -> int | None:
    """Where a condition span that ran past its suffix trigger into the subject of the action after it
    (熄火后|车门, 人走开以后|车门自己: what the car does by itself, said subject first) should end: after
    the trigger, when all that follows it is device names and a self word. None otherwise."""
    for e in inner_suffix_ends(condition, lex):
        rest = _SELF_WORDS.sub("", condition[e:])
        if rest and is_bare_device(rest, lex):
            return e
    return None


#: said right after a condition span, still part of it (README 如何标注 1: trigger words included)
_TRAILING_TRIGGER = re.compile(r"的话|的时候|时候|以后|之后|时")
#: a condition span ending in one of these gave away the start of the action (十点一刻让|音箱放点白噪音)
_ACTION_LEAD = frozenset("让叫给帮替")
#: an amount of time after one of these is how much earlier or later, not a duration (闹钟提前|半小时)
_SHIFT_VERB = re.compile(r"(?:提前|推迟|延后|提早|推后|往后推|往前提|早|晚)$")


_ABOUT_TO = re.compile(r"(?:快要|就要|将要|马上|快)$")


def whole_condition_edges(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A condition span keeps what no span took right before it that says it is about to happen (快|下班的时候)
    and the trigger said right after it (…亮着灯|的话|就 → …亮着灯的话), and gives a
    causative 让/叫 at its end to the action after it (晚上十点一刻让|音箱… → 让音箱…); an amount of time said
    after 提前/推迟 at the end of an action is part of that action, not a duration (把闹钟提前|半小时)."""
    out = list(spans)
    for k, cur in enumerate(out):
        nxt = out[k + 1] if k + 1 < len(out) else None
        if cur.kind == "C":
            lo = out[k - 1].end if k > 0 and out[k - 1] is not None else 0
            about = _ABOUT_TO.search(text[lo:cur.start])  # 快|下班的时候: about to happen is part of it
            if about:
                a = lo + about.start()
                out[k] = cur = Span("C", a, cur.end, text[a:cur.end], cur.intent)
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


_SELF_START = re.compile(r"(?:就|便|会|都)*(?:自动|自己|自行)")


def trailing_subject(condition: str, lex: AutomationLexicons) -> int | None:
    """Where the device name a condition span ends with starts, when something comes before it (…门把手|车门):
    before an action said to happen by itself, that name is the action's subject."""
    found = [(a, b) for a, b, *_ in devices_in(condition, lex) if b == len(condition)]
    if not found:
        return None
    a = min(a for a, _ in found)
    return a if a > 0 else None


def give_back_subject(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A condition span ending in the subject of the action right after it gives the subject back
    (``subject_after_trigger``): 熄火后车门|自动解锁 → 熄火后|车门自动解锁."""
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


@per_lexicons(RULE_MEMO)
def is_fragment(action: str, lex: AutomationLexicons) -> bool:
    """An action span that is no request on its own: only a verb (打开, 拉上), only a negation (千万别) or a
    把 object without its verb (把窗帘). A bare device (座椅加热) is a request: the missing-verb rule completes it."""
    low = lowered(strip_fillers(action, lex))
    if not low or _NEGATION_BEFORE.fullmatch(low):
        return True  # nothing, or only a negation (千万别|再帮我开空调)
    verb = lex.action_verbs.prefix(low)
    if verb and len(verb) == len(low):
        return True
    return low.startswith("把") and not has_verb(low[1:], lex)


def only_fillers(gap: str, lex: AutomationLexicons) -> bool:
    """Is ``gap`` (text between two spans) empty or only prefix fillers (那个, 再帮我)?"""
    if not gap:
        return True  # spans that touch (most of them)
    low = lowered(gap).strip(_EDGE_PUNCT)
    edges = filler_edges(lex)
    prefixes = edges.prefixes
    while low:
        if low[0] not in edges.prefix_firsts:
            return False  # no prefix filler begins here
        head = lex.fillers.prefix(low)
        if not head or head not in prefixes:
            return False
        low = low[len(head):]
    return True


_OBJECT_JOINERS = frozenset({"和", "与", "及", "跟", "以及", "还有", "、"})


def second_object(gap: str, before: str, after: str, lex: AutomationLexicons) -> bool:
    """README 如何标注 2: a verb with two objects is one action. ``after`` is a bare device joined to a
    verb-first ``before`` by 和 / 与 / 、 (打开座椅通风|和|方向盘加热); 打开氛围灯和解锁车门 has two verbs."""
    return (gap.strip(" ") in _OBJECT_JOINERS and is_bare_device(after, lex)
            and bool(lex.action_verbs.prefix(lowered(strip_fillers(before, lex)))))


def join_fragments(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """Two action spans that touch (or have only a filler between them: 把钓鱼出行|那个|习惯删掉), one of them
    a fragment (``is_fragment``: 打开|导航回家, 把窗帘|拉上), are one
    action; and the words a condition span took from the action before it (把空调调到|二十三度电量低于三十的时候)
    go back to that action when they complete it."""
    out: list[Span] = []
    has_ba = "把" in text  # (every lead holds it)
    for sp in spans:
        prev = out[-1] if out else None
        if sp.kind == "A" and has_ba:  # 把那个|叫露营的自动化停掉: a 把 (and its demonstrative) left outside starts the action
            lead = _BA_LEAD.search(text[prev.end if prev is not None else 0: sp.start])
            if lead:
                sp = Span("A", lead.start() + (prev.end if prev is not None else 0), sp.end,
                          text[lead.start() + (prev.end if prev is not None else 0): sp.end], sp.intent)
        if prev is not None and prev.kind == "A" and sp.kind == "A":
            sp = _after_joiner(text, prev, sp)
        if prev is not None and prev.kind == "A" and only_fillers(text[prev.end:sp.start], lex):  # (touching)
            gap = lowered(text[prev.end:sp.start].strip(_EDGE_PUNCT))
            if sp.kind == "A" and _management_after_command(prev.text, sp.text, lex):
                pass  # 关闭所有的灯|把这个存成智能场景: a whole command, then the clause that saves it
            elif sp.kind == "A" and gap and lex.reminder_verbs.prefix(lowered(sp.text)) and any(
                    a == 0 and b == len(gap) and cat == "break" for a, b, _, cat in lex.breaks.find(gap)):
                pass  # 仪表上亮灯|并且|提醒我: a reminder after a sequence connector is its own request
            elif sp.kind == "A" and (is_fragment(prev.text, lex) or is_fragment(sp.text, lex)
                                   or second_object(text[prev.end:sp.start], prev.text, sp.text, lex)
                                   or (prev.text.startswith("把") and is_super_task_mention(sp.text, lex)
                                       and (not _is_plain_command(prev.text, lex)
                                            or _names_it(text[prev.end:sp.start] + sp.text, prev.text)))
                                   or _said_to_happen_by_itself(prev.text, sp.text, lex)):
                out[-1] = Span("A", prev.start, sp.end, text[prev.start:sp.end], prev.intent)
                continue
            if sp.kind == "C":  # 关掉电视|机我睡着以后: 我 starts the condition, 机 completes the command
                low_c = lowered(sp.text)
                for p in sorted(set(_condition_starts(low_c, lex, events=True)) | set(_spoken_condition_starts(low_c, lex))):
                    took = sp.text[:p]
                    # 把空调调|到二十三度电量…: the 到 is the complement of the verb before it, no trigger
                    said = took[1:] if took.startswith("到") and takes_place(prev.text, lex) else took
                    if p > 0 and not has_time_expression(took, lex) and not lex.triggers.search(lowered(said)) \
                            and not lex.events.search(lowered(took)) and not is_super_task_mention(prev.text, lex) \
                            and _is_plain_command(prev.text + took, lex):
                        m = sp.start + p
                        out[-1] = Span("A", prev.start, m, text[prev.start:m], prev.intent)
                        sp = Span("C", m, sp.end, text[m:sp.end], sp.intent)
                        break
        out.append(sp)
    return out


def _management_after_command(before: str, after: str, lex: AutomationLexicons) -> bool:
    """A whole command said verb first, then a super-task clause (关闭所有的灯|把这个存成智能场景): two requests."""
    return (is_super_task_mention(after, lex) and not before.startswith("把")
            and not is_super_task_mention(before, lex) and _is_plain_command(before, lex))


#: words that make what is said before them the name of the habit after them (把上班放音乐|那个|习惯删掉)
_NAMING = ("那个", "这个", "那条", "这条")


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


#: an amount of time said whole (一个半小时, 两个钟头, 1.5小时, 半个小时)
_AMOUNT_OF_TIME = re.compile(r"(?:\d+(?:\.\d+)?|[零一二两三四五六七八九十百半几]+)?个?半?个?(?:小时|钟头|分钟|分|秒钟|秒|刻钟|天)")


def whole_durations(text: str, spans: Sequence[Span]) -> list[Span]:
    """Spec 持续时间: a duration is its whole amount, never cut in two (把除湿机打开一个|半小时): a duration
    span starting inside an amount of time takes its beginning from the span before it."""
    out = list(spans)
    for k in range(1, len(out)):
        sp, prev = out[k], out[k - 1]
        if sp.kind != "D" or prev.end != sp.start:
            continue
        for m in _AMOUNT_OF_TIME.finditer(text, max(prev.start, sp.start - 8), sp.end):
            if m.start() < sp.start < m.end() and m.start() > prev.start:
                out[k - 1] = Span(prev.kind, prev.start, m.start(), text[prev.start:m.start()], prev.intent)
                out[k] = Span("D", m.start(), sp.end, text[m.start():sp.end], sp.intent)
                break
    return out


def repair_spans(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """The tagger's spans made whole, in order: a negation kept with its action, a clock time or an event
    word never cut, a leading time point split from its command, fragments joined, run-ons split (action +
    condition + action, action + action), an action's subject given back by the condition, once markers
    snapped, and conditions without any signal made plain commands."""
    spans = whole_durations(text, whole_clock_times(text, keep_negation(text, spans)))
    spans = leading_time_condition(text, whole_words_at_edges(text, spans, lex), lex)
    spans = join_fragments(text, command_before_sequence(text, split_inside_action(text, spans, lex), lex), lex)
    spans = split_run_on(text, split_trailing_command(text, spans, lex), lex)
    spans = whole_condition_edges(text, give_back_subject(text, spans, lex), lex)
    spans = split_joined_actions(text, spans, lex)
    return question_as_said(text, demote_signalless_conditions(text, snap_once_spans(text, spans, lex), lex), lex)


def question_as_said(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """README 如何标注 5: a question with no request in it (今晚有什么好看的电影, 下周三限行吗: questions.txt, and
    no action or reminder verb, trigger, duration, once marker, super-task or memo word) is one plain request; its
    time words are what it asks about, never a condition."""
    questions = getattr(lex, "questions", None)
    if questions is None or not spans or not any(sp.kind == "C" for sp in spans):
        return list(spans)
    low = lowered(text)
    if any(sp.kind not in "CA" for sp in spans) or not questions.search(low) or lex.action_verbs.search(low) \
            or lex.reminder_verbs.search(low) or lex.super_task.search(low) or lex.once.search(low) \
            or any(cat == "item" for *_, cat in lex.memo.find(low)):  # 明天有什么安排: a memo query
        return list(spans)
    for sp in spans:
        cond = lowered(sp.text) if sp.kind == "C" else ""
        times = [(a, b) for a, b, *_ in lex.time_words.find(cond)]
        if any(not any(ta <= a and b <= tb for ta, tb in times) for a, b, *_ in lex.triggers.find(cond)):
            return list(spans)  # a trigger of its own (下雨的时候), not the 后 of 后天
    body = text.strip(_EDGE_PUNCT)
    start = text.index(body) if body else 0
    return [Span("A", start, start + len(body), body)]


_NEGATION_BEFORE = re.compile(r"(?:千万|可)?(?:别|不要|不用|不许|不准|禁止|勿)再?(?:给我|帮我|替我)?$")


def keep_negation(text: str, spans: Sequence[Span]) -> list[Span]:
    """An action keeps the negation in front of it: 开会的时候别给我打电话 → ``别给我打电话``, never
    ``打电话``. A tagger that leaves 别 outside the span would otherwise turn a prohibition into a command."""
    out: list[Span] = []
    for sp in spans:
        if sp.kind == "A":
            before = out[-1] if out else None
            # the negation may have been swallowed by the condition just before (到家时千万别|开空调)
            lo = before.start + 1 if before and before.kind == "C" else (before.end if before else 0)
            m = _NEGATION_BEFORE.search(text, lo, sp.start)
            if m:
                if before and m.start() < before.end:
                    out[-1] = Span(before.kind, before.start, m.start(), text[before.start: m.start()], before.intent)
                sp = Span(sp.kind, m.start(), sp.end, text[m.start(): sp.end], sp.intent)
        out.append(sp)
    return out


# --------------------------------------------------------------------------------------------
# Small text helpers
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FillerEdges:
    """The characters a filler of each use begins or ends with (fillers.txt): a text whose edge character is none
    of them has no such filler at that edge, so the stripper asks no pattern there."""

    prefixes: frozenset  # the ``prefix`` fillers
    suffixes: frozenset  # the ``suffix`` fillers
    soft: frozenset  # the ``soft_suffix`` fillers
    prefix_firsts: frozenset  # first characters of the ``prefix`` fillers
    suffix_lasts: frozenset  # last characters of the ``suffix`` and ``soft_suffix`` fillers
    hesitation_firsts: frozenset  # first characters of the ``hesitation`` fillers
    done: tuple[str, ...]  # the ``done`` fillers (就行, 就好了)


@once_per_lexicons
def filler_edges(lex: AutomationLexicons) -> FillerEdges:
    """``FillerEdges`` of ``lex.fillers``, built once per lexicons object."""
    fillers = lex.fillers
    return FillerEdges(prefixes=fillers.terms("prefix"), suffixes=fillers.terms("suffix"),
                       soft=fillers.terms("soft_suffix"),
                       prefix_firsts=frozenset(t[0] for t in fillers.terms("prefix") if t),
                       suffix_lasts=frozenset(t[-1] for t in fillers.terms("suffix", "soft_suffix") if t),
                       hesitation_firsts=frozenset(t[0] for t in fillers.terms("hesitation") if t),
                       done=tuple(sorted(fillers.terms("done"))))


@per_lexicons(RULE_MEMO)
def strip_fillers(text: str, lex: AutomationLexicons) -> str:
    """Spoken fillers and politeness off both ends: ``帮我打开空调吧`` → ``打开空调``."""
    edges = filler_edges(lex)
    prev = None
    while prev != text:
        prev = text
        text = text.strip(_EDGE_PUNCT)
        low = lowered(text)
        # the longest filler at the start is a prefix filler only if it begins with a prefix filler's character
        head = lex.fillers.prefix(low) if low[:1] in edges.prefix_firsts else None
        if head and head in edges.prefixes and len(text) > len(head):
            text = text[len(head):]
            low = lowered(text)
        if low[-1:] not in edges.suffix_lasts:
            continue  # no suffix filler ends with its last character
        suffixes, soft = edges.suffixes, edges.soft
        for size in range(min(len(text) - 1, lex.fillers.max_len), 0, -1):
            if low[-size:] in suffixes:
                text = text[:-size]
                break
            if low[-size:] in soft and len(text) - size > _SOFT_SUFFIX_MIN and not text.startswith(REMIND) \
                    and not _moved_by_one_verb(low[:-size], lex):
                text = text[:-size]  # 把后备箱打开一下 → 把后备箱打开; 鸣笛一下, 提醒我休息一下, 往后调一下 stay
                break
    return text


def _moved_by_one_verb(low: str, lex: AutomationLexicons) -> bool:
    """Does ``low`` end in a direction and a one-character verb (往后调, 向前挪: directions.txt)? Its 一下 is
    the verb's own measure (调一下), no polite tail."""
    directions = getattr(lex, "directions", None)
    return directions is not None and any(b == len(low) - 1 for _, b, *_ in directions.find(low))


#: a request this long or longer can end in "that will do" (到家就行 is too short to be one)
_DONE_AFTER = 5


def done_tail(text: str, lex: AutomationLexicons) -> int:
    """How many characters at the end of ``text`` say "that will do" (fillers.txt, category ``done``: 就行,
    就好了) after a request of five characters or more; 0 otherwise. Its 就 is no condition's."""
    low = lowered(text).rstrip(_EDGE_PUNCT)
    if not low.endswith(filler_edges(lex).done):
        return 0  # the done word must end the text
    for a, b, _, cat in lex.fillers.find(low):
        if cat == "done" and b == len(low) and a >= _DONE_AFTER and not any(
                oa < a < ob or ob == a for oa, ob, *_ in lex.once.find(low)):  # 一次就好: a once marker of its own
            return len(text) - a
    return 0


def leading_hesitation(text: str, lex: AutomationLexicons) -> int:
    """How many characters at the start of ``text`` are a hesitation the parser drops (fillers.txt, category
    ``hesitation``: 额, 诶, 那啥); 0 when the longest filler word there is no hesitation (额度, 额外: category
    ``word``) or nothing would be left."""
    low = lowered(text)
    if low[:1] not in filler_edges(lex).hesitation_firsts:
        return 0  # no hesitation begins with its first character
    head = lex.fillers.prefix(low)
    if not head or lex.fillers.category.get(head) != "hesitation" or len(text) <= len(head) + 1:
        return 0
    return len(head) + (1 if text[len(head)] in _EDGE_PUNCT else 0)


#: a soft suffix (一下) goes only after a request longer than a bare verb and object (鸣笛一下 stays)
_SOFT_SUFFIX_MIN = 3


_CN_NUM = "零一二两三四五六七八九十百半"
_CLOCK = re.compile(rf"(\d+|[{_CN_NUM}]+)(点|點|:\d\d|号|日|月份|月)")
#: a character every match of ``_CLOCK`` holds
_CLOCK_MARKS = frozenset("点點:号日月")
_DURATION_AFTER = re.compile(rf"(\d+|[{_CN_NUM}几]+)(个)?(分钟|小时|钟头|秒钟|秒|天|周|刻钟)(后|以后|之后)")


@per_lexicons(RULE_MEMO)
def has_time_expression(text: str, lex: AutomationLexicons) -> bool:
    """A time point, period, day, weekday or delay (明天, 晚上, 八点, 周五, 十分钟后) in ``text``.

    Events (下班, 放学) and bare durations are not counted; ``一点`` counts only as a clock time
    (一点钟, 一点半), never as "a bit" (调高一点)."""
    low = lowered(text)
    for _, _, _, cat in lex.time_words.find(low):
        if cat in ("day", "week", "period", "delay"):
            return True
    return _has_clock(low) or bool(_DURATION_AFTER.search(low))


def _has_clock(low: str) -> bool:
    """A clock time or a date (八点, 7:45, 五号) in ``low``; ``一点`` only as a clock time (一点钟, 一点半)."""
    if _CLOCK_MARKS.isdisjoint(low):
        return False  # every match of _CLOCK ends in one of them
    for m in _CLOCK.finditer(low):
        if m.group(1) == "一" and m.group(2) == "点" and not _AFTER_ONE_OCLOCK.match(low[m.end():]):
            continue
        if m.group(2) in ("号", "日") and _number(m.group(1)) > 31:
            continue  # 九十五号的油, 一百号: a grade or a number, no day of the month
        return True
    return False


def _number(said: str) -> int:
    """The value of digits or a Chinese numeral (0 when it cannot be read: 几)."""
    try:
        return int(said) if said.isdigit() else chinese_to_int(said)
    except ValueError:
        return 0


def seat_mentions(text: str, lex: AutomationLexicons) -> list[tuple[int, int, str, str]]:
    """(start, end, surface, canonical seat) of every position word (主驾, 副驾驶, 后排)."""
    return [(a, b, text[a:b], cat) for a, b, _, cat in lex.positions.find(lowered(text))]


def devices_in(text: str, lex: AutomationLexicons) -> list[tuple[int, int, str, str]]:
    """(start, end, device, kind) of every device word, longest first."""
    return [(a, b, text[a:b], cat) for a, b, _, cat in lex.device_kinds.find(lowered(text))]


@per_lexicons(RULE_MEMO)
def has_verb(text: str, lex: AutomationLexicons) -> bool:
    """Does the text hold an action verb outside its device names (座椅加热 is a device, not 加热)?"""
    low = lowered(text)
    for a, b, _, _ in reversed(lex.device_kinds.find(low)):
        low = low[:a] + "\x00" * (b - a) + low[b:]
    return lex.action_verbs.search(low) is not None or bool(lex.reminder_verbs.search(low)) \
        or bool(lex.memo.search(low) and any(c != "item" for *_, c in lex.memo.find(low)))


# --------------------------------------------------------------------------------------------
# Rule: scope (默认向右绑定, 不向左回溯, 多个条件各自作用域, 复合条件完整性, 或)
# --------------------------------------------------------------------------------------------

@dataclass
class RawGroup:
    """Spans bound together before the rewrites: conditions, actions, durations, once markers."""

    conditions: list[Span] = field(default_factory=list)
    actions: list[Span] = field(default_factory=list)
    durations: list[Span] = field(default_factory=list)
    once: list[Span] = field(default_factory=list)
    management: bool = False  # a super-task management clause: always its own `default` group


@per_lexicons(RULE_MEMO)
def is_super_task_mention(text: str, lex: AutomationLexicons) -> bool:
    """Spec 超级任务: names a super-task keyword (自动化, 智能场景, HyperTask, ...), or changes,
    deletes or cancels a named habit or rule (删除回家习惯)."""
    low = lowered(text)
    if lex.super_task.search(low) is None:
        return False  # no keyword and no named habit
    cats = {c for *_, c in lex.super_task.find(low)}
    if "keyword" in cats:
        return True
    if "named" in cats:
        return lex.habit_change.search(low) is not None
    return False


def sentence_break(text: str, start: int, end: int) -> bool:
    """Does ``text[start:end]`` (the gap between two spans) end a sentence (。；！？)?"""
    return not _SENTENCE_END.isdisjoint(text[start:end])


def scope_end_between(gap: str, lex: AutomationLexicons) -> bool:
    """A scope-end word (另外, 此外, 对了: scope_end.txt, category scope_end) said between two spans that the
    tagger left outside both: 晚上八点提醒我打电话|对了现在|把空调关了 ends the condition's scope as an E span
    would; 顺便 (category weak) does not."""
    return bool(gap) and any(cat == "scope_end" for *_, cat in lex.scope_end.find(lowered(gap)))


def bind_scopes(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[RawGroup]:
    """Spec 条件作用域: a condition binds to the actions on its right until a new condition, a scope
    end (E span, end of sentence) or the end of the query; never to the actions on its left.

    Adjacent conditions with no action between them are one compound condition (且 / 或 / 就 ...:
    spec 复合条件完整性 and ``或`` 连接多个触发条件). A super-task management clause is its own group."""
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
                    and all(_is_plain_command(a.text, lex) for a in current.actions[:-1]) \
                    and _sequence_gap(text[current.actions[-2].end:current.actions[-1].start], lex):
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


def condition_text(text: str, conditions: Sequence[Span], lex: AutomationLexicons) -> str | None:
    """Spec 复合条件完整性: one condition from the first condition span to the last, kept whole
    (且 / 或 and everything before 就 included), without the 就 (or the 都 of 每次…都) itself or edge fillers."""
    if not conditions:
        return None
    whole = text[conditions[0].start: conditions[-1].end]
    whole = strip_fillers(whole, lex)
    whole = _CONDITION_TAIL.sub("", whole) or whole  # 每次上车都 → 每次上车
    return whole or None


# --------------------------------------------------------------------------------------------
# Rewrite rules
# --------------------------------------------------------------------------------------------

def clean_subquery(text: str, lex: AutomationLexicons) -> str:
    """A subquery without edge punctuation and fillers (帮我, 请, 然后, 吧)."""
    return strip_fillers(text, lex)


_BARE_REST = re.compile(r"^[的和与、,，\s]*$")


@per_lexicons(RULE_MEMO)
def is_bare_device(text: str, lex: AutomationLexicons) -> bool:
    """Only device (and seat) names, nothing else: ``座椅加热``, ``主驾座椅通风``, ``客厅灯``."""
    low = lowered(text)
    first = low[:1]
    if first not in _name_firsts(lex) and not _BARE_REST.match(first):
        return False  # its first character is left over: no device or seat name starts with it, and it joins none
    devices = lex.device_kinds.find(low) if lex.device_kinds.search(low) else None
    if not devices:
        return False
    for a, b, _, _ in sorted(devices + lex.positions.find(low), reverse=True):
        low = low[:a] + low[b:]
    return bool(_BARE_REST.match(low))


@once_per_lexicons
def _name_firsts(lex: AutomationLexicons) -> frozenset:
    """The first characters of the device and seat names (``is_bare_device``), found once per lexicons object."""
    return frozenset(t[0] for matcher in (lex.device_kinds, lex.positions) for t in matcher.category if t)


def add_missing_verb(action: str, lex: AutomationLexicons) -> str:
    """Spec 持续时间 example: ``座椅加热`` → ``打开座椅加热``: a device named alone gets 打开 (播放 for
    media). Anything said with a verb is left as said (后排空调关掉, 把空调打开: a plain command is quoted;
    only a duration's action is rewritten, ``duration_action``)."""
    if not is_bare_device(action, lex):
        return action
    kinds = [kind for *_, kind in devices_in(action, lex)]
    return ("播放" if kinds and kinds[0] == "media" else "打开") + action


def duration_condition(condition: str | None, durations: Sequence[str]) -> str:
    """Spec 持续时间: ``持续+时间``, or ``触发条件+持续+时间`` when there is a trigger."""
    spoken = "".join(durations)
    spoken = _DURATION_VERBS.sub("", spoken)
    return (condition or "") + DURATION + spoken


_REMINDER_NOUN = re.compile(r"^(?P<content>.+?)的?(提醒事项|提醒)$")


def reminder_from_noun(action: str, lex: AutomationLexicons | None = None) -> str:
    """``创建长途驾驶前检查水和食物的提醒``: a reminder named as a noun (``检查水和食物的提醒``) is the
    reminder ``提醒我检查水和食物``; switching the reminder function (打开提醒) is left alone, and so is the way
    the car signals (语音提醒, 方向盘震动提醒: a ``signal`` or ``warning`` of builtin_functions.txt before 提醒)."""
    m = _REMINDER_NOUN.match(action) if "提醒" in action else None  # (every match ends in 提醒 or 提醒事项)
    if not m or _TOGGLE_ONLY.match(m.group("content")) or m.group("content").startswith(("提醒", "查看", "删除")):
        return action
    if lex is not None and lex.builtin_functions is not None and not action.endswith("的提醒") and any(
            cat in ("signal", "warning") for *_, cat in function_words(lowered(m.group("content")), lex)):
        return action
    if lex is not None and not action.endswith("的提醒") and _switches(m.group("content"), lex):
        return action  # 打开限速提醒, 关闭疲劳提醒: a reminder function switched on or off, no reminder of its own
    content = _ONE_ITEM.sub("", m.group("content"))
    return REMIND + content if content else action


def _switches(text: str, lex: AutomationLexicons) -> bool:
    """Does ``text`` start with a verb that switches something on or off (actions.txt, automation ``on`` / ``off``)?
    One character (开, 关) is too short to tell: 开会提醒 is a reminder to go to a meeting."""
    head = lex.action_verbs.prefix(lowered(text))
    return len(head or "") > 1 and lex.action_verbs.category.get(head) in ("on", "off")


def rewrite_reminder(action: str, lex: AutomationLexicons) -> str:
    """Spec 提醒改写 (condition not empty): 播报 / 提示 / 叫我 / 喊我 / 通知我 / 告诉我 / 报告 / 念一下
    → ``提醒我``: ``通知我立刻充电`` → ``提醒我立刻充电``."""
    head = lex.reminder_verbs.prefix(lowered(action))
    if not head:
        return action
    rest = action[len(head):]
    rest = _REMINDED_ME.sub("", rest)
    return REMIND + rest


def remind_say(action: str, lex: AutomationLexicons) -> str:
    """Spec 提醒我说: a reminder whose content holds a time word is quoted with 说, and that time is
    not a condition: ``提醒我后天晚上去露营`` → ``提醒我说后天晚上去露营``."""
    if not action.startswith(REMIND) or action.startswith(REMIND_SAY):
        return action
    content = action[len(REMIND):].lstrip(":：,， ")
    if content and has_time_expression(content, lex):
        return REMIND_SAY + content
    return action


def is_reminder(action: str) -> bool:
    return action.startswith(REMIND)


_SEAT_LIST_JOINERS = re.compile(r"^(和|与|跟|及|以及|、|,|，|还有)$")
_STATE_JOINERS = ("并且", "而且", "且", "和", "、", "，", ",")


def same_state_joined(gap: str, after: str) -> bool:
    """主驾有人且副驾有人: the state said after one seat (``gap`` = 有人且) is said again after the next
    (``after`` = 有人时): the seats are listed together, as in 主驾和副驾都有人."""
    for joiner in _STATE_JOINERS:
        if gap.endswith(joiner):
            state = gap[: -len(joiner)]
            return bool(state) and after.startswith(state)
    return False


def inheritance_mode(condition: str, lex: AutomationLexicons) -> tuple[str, list[str]]:
    """Spec 带 trigger 的位置继承: which seats an action without its own seat inherits.

    ``("all", [主驾, 副驾])`` when the condition lists seats together (主驾和副驾都有人, 主驾有人且副驾有人) or names them
    with one word (主副驾, 前排: positions.txt category ``主驾|副驾``): the action is meant for every one
    of them, so it is split; otherwise ``("nearest", [last seat])``, the seat
    closest to the action (主驾有人上车时或……主驾系上安全带时 → 主驾); ``("none", [])`` without seats."""
    seats = seat_mentions(condition, lex)
    if not seats:
        return "none", []
    listed = [seats[-1]]
    for prev in reversed(seats[:-1]):
        gap = condition[prev[1]: listed[0][0]]
        if _SEAT_LIST_JOINERS.match(gap) or same_state_joined(gap, condition[listed[0][1]:]):
            listed.insert(0, prev)
        else:
            break
    # a word naming several seats at once (主副驾, 前排: category 主驾|副驾) stands for all of them
    surfaces = list(dict.fromkeys(name for s in listed for name in (s[3].split("|") if "|" in s[3] else [s[2]])))
    if len(surfaces) > 1:
        return "all", surfaces
    return "nearest", [seats[-1][2]]


def insert_seat(action: str, seat: str, lex: AutomationLexicons) -> str | None:
    """``打开空调`` + 主驾 → ``打开主驾空调``: the seat goes right before the first per-seat device;
    None when the action has no per-seat device."""
    m = lex.positional_devices.search(lowered(action))
    if m is None:
        return None
    return action[: m.start()] + seat + action[m.start():]


def inherit_location(condition: str | None, actions: Sequence[str], lex: AutomationLexicons) -> list[str]:
    """Spec 带 trigger 的位置继承 for every action of a group. No inheritance when the action names
    its own seat, is a reminder, or holds no per-seat device (导航, 播放音乐, 大灯)."""
    if not condition:
        return list(actions)
    mode, seats = inheritance_mode(condition, lex)
    if mode == "none":
        return list(actions)
    out = []
    for action in actions:
        if seat_mentions(action, lex) or is_reminder(action) or insert_seat(action, seats[0], lex) is None:
            out.append(action)
            continue
        out.extend(insert_seat(action, seat, lex) for seat in seats)
    return out


def without_once(text: str, lex: AutomationLexicons) -> tuple[str, bool]:
    """Spec 执行一次: a once marker (once_markers.txt: 仅此一次, 只要一次, 一次就好 …) said at either
    edge of a condition or an action span is no part of it: (the text without it, whether one was
    there). 明天八点仅此一次 → (明天八点, True); 打开空调只执行这一次 → (打开空调, True)."""
    found = False
    if lex.once.search(lowered(text)) is None:
        return text, found  # no once marker anywhere: nothing to take off
    prev = None
    while prev != text and text:
        prev = text
        low = lowered(text)
        hits = lex.once.find(low)
        heads = [b for a, b, _, _ in hits if a == 0 and b < len(text)]
        tails = [a for a, b, _, _ in hits if b == len(text) and a > 0]
        if heads:
            text, found = strip_fillers(text[max(heads):], lex), True
        elif tails:
            text, found = strip_fillers(text[:min(tails)], lex), True
    return text, found


def snap_once_spans(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """A once span (N) is the once marker it holds: characters the tagger added past the marker
    (只执行这一次明|天七点) go back to the condition span that touches it, or become the condition when
    they are a time and no condition span follows (只执行这一次明天七点|叫我起床)."""
    out = list(spans)
    if not any(sp.kind == "N" for sp in out):
        return out  # only once spans are snapped
    low = lowered(text)
    k = 0
    while k < len(out):
        sp = out[k]
        hits = [(a, b) for a, b, _, _ in lex.once.find(low) if a < sp.end and b > sp.start] if sp.kind == "N" else []
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


#: what is said around a duration's device: a lead (把, 开着, 再开) and a tail of adverbs and on/off verbs
_DURATION_LEAD = re.compile(r"^(?:把|开着|一直开着|继续开|再开|一直开)")
_DURATION_TAIL = re.compile(r"(?:就|再|继续|一直|持续|保持|维持|开着|开启|打开|开|关闭|关掉|关上|关|着|吹|来|运行|工作|转)+$")


def duration_action(action: str, lex: AutomationLexicons) -> str:
    """Spec 持续时间 (座椅加热十分钟 → 打开座椅加热): the action of a duration is the thing switched on
    (or off), whatever was said around it: 加湿器开 / 把卧室加湿器开 / 空调就开着 / 开着座椅加热 / 空调再开 /
    座椅加热保持 → 打开 + what is switched; 空调关 → 关闭空调. The thing need not be a known device
    (后挡风玻璃除雾开 → 打开后挡风玻璃除雾), but holds no verb of its own. A request said verb first
    (开启空气净化) and anything else (空调调到26度) are left as said."""
    if is_bare_device(action, lex):
        return add_missing_verb(action, lex)
    lead = _DURATION_LEAD.match(action)
    body = action[lead.end():] if lead else action
    tail = _DURATION_TAIL.search(body)
    thing = body[:tail.start()] if tail else body
    said = (lead.group() if lead else "") + (tail.group() if tail else "")
    if not thing or not said or said == "把" or "开关" in said or (has_verb(thing, lex) and not is_bare_device(thing, lex)):
        return action
    if [d for _, _, d, _ in devices_in(thing, lex)] != [d for _, _, d, _ in devices_in(body, lex)]:
        return action  # a device name lost a character (开关, 关门): not the device as said
    closing = "关" in said
    return ("关闭" if closing else "打开") + thing


def once_condition(condition: str | None) -> str:
    """Spec 执行一次: ``执行一次+原始条件``."""
    if condition and condition.startswith(ONCE):
        return condition
    return ONCE + (condition or "")


_MANAGE_PREFIX = re.compile(r"^(用|通过|使用|利用|在|以|按)")
_MANAGE_SUFFIX = re.compile(r"(里面|里|中|内|的方式|来)$")


def super_task_clause(action: str, lex: AutomationLexicons) -> str:
    """Spec 超级任务: the management clause of a super-task mention. A bare keyword (用自动化, 智能场景里)
    becomes ``创建+keyword``; a clause with its own verb (删除自定义习惯, 新建一个超级任务, 把那个叫露营的自动化停掉)
    stays as said."""
    if lex.manage_verbs.search(action):
        return action
    bare = _MANAGE_SUFFIX.sub("", _MANAGE_PREFIX.sub("", action)) or action
    return "创建" + bare


_MEMO_TOGGLE = re.compile(r"^(打开|开启|关闭|关掉|关上|启用|停用|开|关)")
_COMMUNICATION = re.compile(r"^给.{1,8}(发|打)|发消息|发微信|发短信|打电话|回消息|回电话")
_TOGGLE_ONLY = re.compile(r"^(打开|开启|关闭|关掉|关上|启用|停用|开|关)(所有|全部)?的?$")


@per_lexicons(RULE_MEMO)
def is_memo_management(action: str, lex: AutomationLexicons) -> bool:
    """Spec default: creating, changing, querying or deleting a memo-like item (提醒我去买菜,
    删除明天的日程, 我今天有什么安排). Turning the reminder function on or off (打开提醒) is not."""
    low = lowered(action)
    if _MEMO_TOGGLE.match(low):
        return False
    if low.startswith("提醒") and len(_REMIND_HEAD.sub("", low)) > 0:
        return True
    if _COMMUNICATION.search(low):
        return False
    cats = {c for *_, c in lex.memo.find(low)} if lex.memo.search(low) else set()
    if "item" in cats and cats & {"create", "delete", "modify", "query"}:
        return True
    return bool(_NOTE_VERB.match(low)) and len(low) > 2


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
        return None  # no memo word at all (most queries: one search rather than the three below)
    if _TRIGGER_WORDS.search(low) or _COMMUNICATION.search(low) or _REMIND_SOMEONE.search(low):
        return None  # a trigger, a message (发消息说会议推迟) or a new reminder (提醒我检查胎压)
    found = lex.memo.find(low)
    verbs = [(term, cat) for *_, term, cat in found if cat != "item"]
    if not verbs or verbs[0][1] not in _MEMO_EDITS or verbs[0][0] == "提前":
        return None
    if is_super_task_mention(text, lex):
        return None  # a named rule or habit (取消洗车提醒这条规则) is super-task management, not a memo
    if not any(cat == "item" for *_, cat in found):
        return None
    action = clean_subquery(text, lex)
    return Group(DEFAULT, [action], ["memo"], [None]) if action else None


def unconditional_kind(action: str, lex: AutomationLexicons) -> str | None:
    """Spec default vs null for an action without a condition: ``default`` for super-task management
    and memo-like items, None (``null``) for every other unconditional action."""
    if is_super_task_mention(action, lex) or is_memo_management(action, lex):
        return DEFAULT
    return None




def is_builtin(condition: str | None, actions: Sequence[str], lex: AutomationLexicons) -> bool:
    """Spec 条件负例: a built-in vehicle behaviour (走远时车门上锁, 倒车时后视镜自动下翻, 车辆超速时提醒我):
    the condition holds one of its trigger words and every action one of its action words."""
    if not condition or condition == DEFAULT or not actions:
        return False
    cond = lowered(condition)
    compounds = _compound_triggers(lex)
    if compounds is not None and compounds.search(cond) is not None:
        return False  # a built-in behaviour has one fixed trigger; 且 / 或 compounds are the user's own
    said = _builtin_condition_words(lex)
    for b in (lex.builtins if said is not None and said.search(cond) else ()):
        if any(w in cond for w in b.condition_words) and all(_builtin_action(a, b) for a in actions):
            return True
    return builtin_by_class(cond, actions, lex)


@once_per_lexicons
def _compound_triggers(lex: AutomationLexicons) -> re.Pattern | None:
    """One pattern of the ``and`` / ``or`` triggers (且, 或者): it finds one where any of them is in a text, as
    asking each of them in turn does (None when there are no such words)."""
    return term_pattern(lex.triggers.terms("and", "or"))


@once_per_lexicons
def _builtin_condition_words(lex: AutomationLexicons) -> re.Pattern | None:
    """One pattern of every condition word of the built-in behaviours: a condition with none of them is none of
    theirs (None when there are no such words)."""
    return term_pattern({w for b in lex.builtins for w in b.condition_words})


def builtin_by_class(condition: str, actions: Sequence[str], lex: AutomationLexicons) -> bool:
    """The class behind the spec's 条件负例 (lexicons/builtin_functions.txt, automation view): the condition is
    a situation the car senses itself (``vehicle_situation``) and every action is something the car does
    itself (``builtin_action``): 变道时打开盲区监测, 疲劳驾驶的时候提醒我, 锁车的时候自动升起车窗. A built-in
    function under a condition of the user's own (进入高速后打开自适应巡航) stays a user task."""
    functions = getattr(lex, "builtin_functions", None)
    if functions is None:
        return False
    situation = vehicle_situation(condition, lex)
    if situation is None or _set_time(condition, lex):
        return False
    said = functions.terms("self")  # 自动, 自己: substrings, as a longer function word (自动锁) may hold one
    by_itself = any(word in lowered(a) for a in actions for word in said)
    if by_itself and any(cat == "part" for *_, cat in function_words(lowered(condition), lex)):
        # 车窗夹到手的时候自动往回降: what the car works by itself is the part the condition names
        actions = [a if _function_words(a, lex) - {"self"} else condition + a for a in actions]
    return all(builtin_action(a, situation, by_itself, lex) for a in actions)


@once_per_lexicons
def _function_automaton(lex: AutomationLexicons):
    """An Aho-Corasick automaton of the builtin_functions words (valued size, word, category), built once per
    lexicons object: a pattern of its seven hundred alternatives tries them one by one at every position."""
    automaton = ahocorasick.Automaton()
    for term, cat in lex.builtin_functions.category.items():
        automaton.add_word(term, (len(term), term, cat))
    if len(automaton):
        automaton.make_automaton()
    return automaton


def _longest_function_words(low: str, lex: AutomationLexicons) -> dict[int, tuple[int, str, str]]:
    """The longest builtin_functions word starting at each position of ``low``: start -> (size, word, category)."""
    automaton = _function_automaton(lex)
    longest: dict[int, tuple[int, str, str]] = {}
    if len(automaton):
        for end, hit in automaton.iter(low):
            start = end - hit[0] + 1
            best = longest.get(start)
            if best is None or best[0] < hit[0]:
                longest[start] = hit
    return longest


def function_words(low: str, lex: AutomationLexicons) -> list[tuple[int, int, str, str]]:
    """``lex.builtin_functions.find(low)`` (leftmost, longest, not overlapping), from one automaton pass."""
    longest = _longest_function_words(low, lex)
    found, pos = [], 0
    for start in sorted(longest):
        if start >= pos:
            size, term, cat = longest[start]
            pos = start + size
            found.append((start, pos, term, cat))
    return found


def function_prefix(low: str, lex: AutomationLexicons) -> str | None:
    """``lex.builtin_functions.prefix(low)``: the longest builtin_functions word ``low`` starts with."""
    first = _longest_function_words(low, lex).get(0)
    return first[1] if first is not None else None


def _set_time(condition: str, lex: AutomationLexicons) -> bool:
    """A clock time, a day or a weekday in the condition (每天晚上十点半如果车库门没关): a time the user sets, so
    the task is the user's own, whatever the car senses besides."""
    low = lowered(condition)
    return _has_clock(low) or any(cat in ("day", "week") for *_, cat in lex.time_words.find(low))


def _function_words(action: str, lex: AutomationLexicons) -> set[str]:
    """The builtin_functions.txt categories said in ``action``, read again in the object after its verb when
    the verb's last character began a longer word (打开车道保持辅助 reads 开车 first, 车道保持辅助 after 打开)."""
    low = lowered(action)
    found = {cat for *_, cat in function_words(low, lex)}
    verb = lex.action_verbs.prefix(low)
    if verb and len(low) > len(verb):
        found |= {cat for *_, cat in function_words(low[len(verb):], lex)}
    return found


#: builtin_functions.txt categories that say nothing about the situation when found in a condition
_NO_SITUATION = frozenset({"part", "self", "signal", "comfort", "advice"})
#: builtin_functions.txt categories that are no built-in function when found in an action
_NO_FUNCTION = frozenset({"event", "moment", "state", "alarm"}) | _NO_SITUATION
#: a threshold the user sets (车速超过120, 胎压低于2.0, 电量不足百分之二十): the user's own condition
_USER_THRESHOLD = re.compile(r"(?:超过|高于|低于|不足|少于|小于|大于|达到|到了|到)(?:百分之)?[\d零一二两三四五六七八九十百千]")


def vehicle_situation(condition: str, lex: AutomationLexicons) -> str | None:
    """What the car senses in ``condition`` (builtin_functions.txt, automation view), strongest first:
    ``event`` (a safety situation it watches: 超速, 车门没关好, 有行人; or a built-in function's own state),
    ``moment`` (a plain state of the car: 熄火, 天黑, 进隧道), ``state`` (what users also set tasks on: 上车,
    停车, 下雨, 车速), or None (no situation of the car: 到家, 上午十点). A number the user sets makes the
    condition a ``state``: the threshold is the user's (车速超过一百二的时候播报车速, 胎压低于2.0时通知我);
    but a speed the car's own alarm takes (``alarm`` words: 车速超过) makes it an ``alarm``, under which a bare
    reminder or a warning is built-in (车速超过一百二的时候提醒我: the spec's 车辆超速时提醒我 with its number)."""
    low = lowered(condition)
    found = {cat for *_, cat in function_words(low, lex)} - _NO_SITUATION
    if not found:
        return None
    if _USER_THRESHOLD.search(low):
        return "alarm" if "alarm" in found else "state"
    found = {"moment" if cat == "alarm" else cat for cat in found}
    if found == {"state"}:
        return "state"
    if found <= {"moment", "state"}:
        return "moment"
    return "event"


#: a reminder's content short enough to be advice the car gives (提醒我休息, 提醒我减速, 提醒我看路)
_ADVICE_CHARS = 3


def builtin_action(action: str, situation: str, by_itself: bool, lex: AutomationLexicons) -> bool:
    """Does the car do ``action`` by itself in ``situation``? When the request says so (``by_itself``: 自动,
    自己), anything of the car but its comfort (自动锁车, 车窗自动升上去, 自动切到内循环); under an event or a
    moment, a built-in function (打开盲区监测, 打开大灯, 锁上车门); under an event, a signal to the driver
    (方向盘抖一下, 一直响, 发出警告) or a reminder that is advice about the situation (提醒我, 提醒我休息,
    提醒我系好安全带; 车门没锁就提醒我车内温度 is the user's). A reminder never counts by a function word of
    its content alone under a moment (熄火后提醒我打开雾灯 is the user's)."""
    found = _function_words(action, lex)
    if is_reminder(action):
        content = action[len(REMIND):]
        if situation == "alarm":  # the car's speed alarm: a bare reminder (提醒我慢一点 is the user's own)
            return not content.strip("一下")
        return situation == "event" and (len(content) <= _ADVICE_CHARS or bool(found - {"comfort", "signal"}))
    if by_itself and (found - _NO_FUNCTION or "part" in found):
        return True
    if by_itself and situation in ("event", "moment") and "comfort" not in found and _of_the_car(action, lex):
        return True  # 前车切入的时候自动降低车速: said to happen by itself, in a situation the car senses
    if situation == "alarm":
        return "signal" in found or _WARN.search(action) is not None
    if situation == "state":
        return False
    if found - _NO_FUNCTION:
        return True
    return situation == "event" and ("signal" in found or _WARN.search(action) is not None)


#: what no car does by itself as a built-in: requests of these kinds (actions.txt, automation view)
_NOT_THE_CARS = frozenset({"media", "nav", "comm", "query", "remind", "manage", "create", "search"})


def _of_the_car(action: str, lex: AutomationLexicons) -> bool:
    """Could the car do ``action`` itself? Not when it names a device a home has too (空调, 灯: devices.txt,
    automation ``home`` / ``shared`` / ``media``) or is a request no car makes by itself (play, navigate, call,
    look up: actions.txt)."""
    if any(kind in ("home", "shared", "media") for *_, kind in devices_in(action, lex)):
        return False
    return not any(cat in _NOT_THE_CARS for *_, cat in lex.action_verbs.find(lowered(action)))


def builtin_function_action(action: str, lex: AutomationLexicons) -> bool:
    """Does the action work a built-in function (a lexicons/builtin_functions.txt term that is no situation,
    part, signal or self word)?"""
    return any(cat not in _NO_FUNCTION for *_, cat in function_words(lowered(action), lex))


_WARN = re.compile(r"^(?:警告|告警|报警|预警|提示|提醒|警示)")


def _builtin_action(action: str, builtin) -> bool:
    """A reminder (提醒我关窗) matches only a built-in reminder, never by the words of its content."""
    low = lowered(action)
    if is_reminder(action):
        return any(w.startswith(("提醒", "提示")) for w in builtin.action_words)
    return any(w in low for w in builtin.action_words)


# --------------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------------

@dataclass
class Group:
    """A group before intents: condition, subqueries, and what the rules found out about each."""

    condition: str | None
    subqueries: list[str]
    kinds: list[str]  # per subquery: "system" (super task), "memo", "reminder", "vehicle" (a built-in behaviour) or ""
    span_intents: list[str | None]
    builtin: bool = False


def rewrite_group(text: str, raw: RawGroup, lex: AutomationLexicons) -> list[Group]:
    """One raw group → one or more groups, every rewrite rule applied in the spec's order."""
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
        if (condition or len(raw.actions) > 1) and lowered(cleaned) in filler_edges(lex).suffixes:
            continue  # a polite tail said after the request (关上车窗好吗) is no request of its own
        if cleaned:
            actions.append(add_missing_verb(reminder_from_noun(cleaned, lex), lex))
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
        builtin = is_builtin(condition, subs, lex)
        kinds = ["reminder" if is_reminder(a) else ("vehicle" if builtin else "") for a in subs]
        return [Group(condition, subs, kinds, [i for _, i in pairs], builtin)]
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


def missing_super_task_clauses(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Span]:
    """Spec 超级任务: a super-task keyword that no span covers still yields its management clause."""
    low = lowered(text)
    if lex.super_task.search(low) is None:
        return []  # no super-task word at all (most texts)
    covered = [(s.start, s.end) for s in spans]
    extra = []
    for a, b, _, cat in lex.super_task.find(low):
        if cat == "keyword" and not any(s <= a and b <= e for s, e in covered):
            extra.append(Span("A", a, b, text[a:b]))
    return extra


_PAUSES = re.compile(r"[,，;；。!！?？]+")


def plain_breaks(text: str, lex: AutomationLexicons) -> list[tuple[int, int, str]]:
    """(start, end, category) of the pauses and split connectors (``connectors.txt``, automation view) of
    ``text``, left to right: the regex ``pauses|connectors`` of the spec's plain split."""
    pattern = _plain_break(lex)
    if pattern.search(text) is None:
        return []  # (one search first: most texts have no pause or connector)
    return [(m.start(), m.end(), lex.breaks.category.get(m.group(), "pause")) for m in pattern.finditer(text)]


@once_per_lexicons
def _plain_break(lex: AutomationLexicons) -> re.Pattern:
    """The pattern ``pauses|connectors`` of ``plain_breaks``, built once per lexicons object."""
    words = term_pattern(lex.breaks.category)
    return re.compile(_PAUSES.pattern + "|" + (words.pattern if words is not None else ""))



def plain_groups(text: str, lex: AutomationLexicons) -> list[Group]:
    """The groups of a query without any condition, duration, once, reminder, super-task or memo word
    (``lex.signal`` is false): one ``null`` group whose subqueries are the pieces between sequence
    connectors (然后, 并且, ，) and at the start of each command of an unpunctuated run (``command_cuts``).
    A piece without an action (哎那个, 太暗了) joins the next one. This is the
    fast path: the tagger is not needed to find actions where nothing can be a condition."""
    subs = []
    for a, b in plain_pieces(text, lex):
        piece = text[a:b]
        cuts = command_cuts(piece, lex)
        for command in ([piece[c:d] for c, d in zip([0, *cuts], [*cuts, len(piece)])] if cuts else [piece]):
            sub = clean_subquery(command, lex)
            if sub:
                subs.append(add_missing_verb(sub, lex))
    return [Group(None, subs, [""] * len(subs), [None] * len(subs))] if subs else []


def plain_pieces(text: str, lex: AutomationLexicons) -> list[tuple[int, int]]:
    """(start, end) of the pieces of ``plain_groups`` before its command cuts: ``text`` between its pauses and
    split connectors (``plain_breaks``), a piece without an action joined to the next one."""
    breaks = plain_breaks(text, lex)
    if not breaks:
        return [(0, len(text))] if text else []  # (most texts: one piece, the whole text)
    low = lowered(text)
    cuts = [(start, end) for start, end, kind in breaks
            # 打开空调和座椅加热: one action; 打开氛围灯和解锁车门: two
            if kind != "joiner" or lex.action_verbs.prefix(low[end:]) or low.startswith("把", end)]
    bounds = pieces_between(len(text), cuts)
    if len(bounds) <= 1:
        return bounds  # one piece stays itself whether or not it has an action (join_actionless): no need to ask
    actions = [has_verb(text[a:b], lex) or is_bare_device(text[a:b], lex) for a, b in bounds[:-1]]
    # after pieces without an action, the last one takes them in whether or not it has one: no need to ask
    a, b = bounds[-1]
    actions.append(any(actions) and (has_verb(text[a:b], lex) or is_bare_device(text[a:b], lex)))
    return join_actionless(bounds, actions)


IntentFn = Callable[[list[str]], list[str]]


def assemble(text: str, spans: Sequence[Span], lex: AutomationLexicons,
             intent_of: IntentFn | None = None) -> list[dict]:
    """Spans of ``text`` → the spec's groups. ``intent_of`` labels a batch of subqueries (the intent
    classifier); without it, intents are None (or the annotation's own ``[A/intent:...]``)."""
    groups = plan_groups(text, spans, lex)
    subs = [s for g in groups for s in g.subqueries]
    predicted = iter(intent_of(subs) if (intent_of and subs) else [None] * len(subs))
    return [group_dict(g, [next(predicted) for _ in g.subqueries]) for g in groups]


def plan_groups(text: str, spans: Sequence[Span], lex: AutomationLexicons) -> list[Group]:
    """Everything of ``assemble`` but the intents."""
    spans = sorted(list(spans) + missing_super_task_clauses(text, spans, lex), key=lambda s: s.start)
    groups: list[Group] = []
    for raw in bind_scopes(text, spans, lex):
        groups.extend(g for g in rewrite_group(text, raw, lex) if g.condition is not None or g.subqueries)
    return groups


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
#: does (后视镜自动折叠, 自动打开双闪, 发出警报) is the car's own: 车载控制
_FIXED_INTENTS = {"system": INTENT_SYSTEM, "memo": INTENT_REMINDER, "reminder": INTENT_REMINDER,
                  "vehicle": INTENT_VEHICLE}
