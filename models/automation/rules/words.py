"""What the rules ask of a piece of text (a span, a gap between spans, a subquery): fillers, times,
verbs, devices, whether it is a whole command. Each is a small pure function of the piece and the
automation word classes (``AutomationLexicons``)."""

from __future__ import annotations

import re

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.features.spoken import chinese_to_int
from fastslow.models.automation.rules.markup import EDGE_PUNCT, lowered
from fastslow.models.automation.rules.analysis import signal_text

REMIND = "提醒我"

#: punctuation that ends a sentence, and with it every condition's scope
SENTENCE_END = frozenset("。；;！!？?\n")
#: single-character prefix triggers that can start a condition said right after an action (等我上车了)
RUN_ON_SHORT = frozenset({"等", "当"})
#: a negation said before an action (千万别, 不要再帮我)
NEGATION_BEFORE = re.compile(r"(?:千万|可)?(?:别|不要|不用|不许|不准|禁止|勿)再?(?:给我|帮我|替我)?$")


# --------------------------------------------------------------------------------------------
# Fillers
# --------------------------------------------------------------------------------------------

#: a soft suffix (一下) goes only after a request longer than a bare verb and object (鸣笛一下 stays)
_SOFT_SUFFIX_MIN = 3
#: a request this long or longer can end in "that will do" (到家就行 is too short to be one)
_DONE_AFTER = 5
#: 给我 names the one to call or write to when a person, not a verb, follows and then the call (给我妈打个电话,
#: 给我老婆发个消息); before a verb it is politeness (给我关上车窗)
_RECIPIENT_AFTER_GEI_WO = re.compile(r"[^把打发回拨开关放调]{1,4}?(?:打|发|回|拨)")


def strip_fillers(text: str, lex: AutomationLexicons) -> str:
    """Spoken fillers and politeness off both ends: ``帮我打开空调吧`` → ``打开空调``. An edge whose character
    begins no prefix filler (``lex.filler_firsts``) or ends no suffix filler (``lex.filler_lasts``) has none."""
    fillers = lex.fillers
    prefixes, suffixes, soft = lex.filler_prefixes, lex.filler_suffixes, lex.filler_soft
    prev = None
    while prev != text:
        prev = text
        text = text.strip(EDGE_PUNCT)
        low = lowered(text)
        head = fillers.prefix(low) if low[:1] in lex.filler_firsts else None  # the longest filler at the start
        if head and head in prefixes and len(text) > len(head) \
                and not (head == "给我" and _names_recipient(low[len(head):], lex)):
            text = text[len(head):]
            low = lowered(text)
        if low[-1:] not in lex.filler_lasts:
            continue
        for size in range(min(len(text) - 1, fillers.max_len), 0, -1):
            if low[-size:] in suffixes:
                text = text[:-size]
                break
            if low[-size:] in soft and len(text) - size > _SOFT_SUFFIX_MIN and not text.startswith(REMIND) \
                    and not _moved_by_one_verb(low[:-size], lex):
                text = text[:-size]  # 把后备箱打开一下 → 把后备箱打开; 鸣笛一下, 提醒我休息一下, 往后调一下 stay
                break
    return text


def _names_recipient(low: str, lex: AutomationLexicons) -> bool:
    """Is what follows a 给我 a person and a call or message to them (妈打个电话)? Then the 给我 stays."""
    return not lex.action_verbs.prefix(low) and bool(_RECIPIENT_AFTER_GEI_WO.match(low))


def _moved_by_one_verb(low: str, lex: AutomationLexicons) -> bool:
    """Does ``low`` end in a direction and a one-character verb (往后调, 向前挪: directions.txt)? Its 一下 is
    the verb's own measure (调一下), no polite tail."""
    return lex.directions is not None and any(b == len(low) - 1 for _, b, *_ in lex.directions.find(low))


def only_fillers(gap: str, lex: AutomationLexicons) -> bool:
    """Is ``gap`` (text between two spans) empty or only prefix fillers (那个, 再帮我)?"""
    if not gap:
        return True  # spans that touch (most of them)
    low = lowered(gap).strip(EDGE_PUNCT)
    while low:
        if low[0] not in lex.filler_firsts:
            return False  # no prefix filler begins here
        head = lex.fillers.prefix(low)
        if not head or head not in lex.filler_prefixes:
            return False
        low = low[len(head):]
    return True


def done_tail(text: str, lex: AutomationLexicons) -> int:
    """How many characters at the end of ``text`` say "that will do" (fillers.txt, category ``done``: 就行,
    就好了) after a request of five characters or more; 0 otherwise. Its 就 is no condition's."""
    low = lowered(text).rstrip(EDGE_PUNCT)
    if not low.endswith(lex.filler_dones):
        return 0  # the done word must end the text
    for a, b, _, cat in lex.fillers.find(low):
        if cat == "done" and b == len(low) and a >= _DONE_AFTER and not any(
                oa < a < ob or ob == a for oa, ob, *_ in lex.once.find(low)):  # 一次就好: a once marker of its own
            return len(text) - a
    return 0


def leading_hesitation(text: str, lex: AutomationLexicons) -> int:
    """How many characters at the start of ``text`` are a hesitation the parser drops (fillers.txt, category
    ``hesitation``: 额, 诶, 那啥); 0 when the longest filler word there is no hesitation (额度, 额外: category
    ``word``) or nothing would be left, or no hesitation starts with its first character."""
    low = lowered(text)
    if low[:1] not in lex.hesitation_firsts:
        return 0
    head = lex.fillers.prefix(low)
    if not head or lex.fillers.category.get(head) != "hesitation" or len(text) <= len(head) + 1:
        return 0
    return len(head) + (1 if text[len(head)] in EDGE_PUNCT else 0)


# --------------------------------------------------------------------------------------------
# Times
# --------------------------------------------------------------------------------------------

_CN_NUM = "零一二两三四五六七八九十百半"
CLOCK = re.compile(rf"(\d+|[{_CN_NUM}]+)(点|點|:\d\d|号|日|月份|月)")
#: a character every match of ``CLOCK`` holds
CLOCK_MARKS = frozenset("点點:号日月")
#: an amount of time said before a delay or a duration (一个半小时, 两个钟头, 四十五分钟后)
TIME_AMOUNT = re.compile(r"(?:\d+|[零一二两三四五六七八九十百几]+)个?半?(?:个)?(?:小时|钟头|分钟|分|秒钟|秒|刻钟)(?:后|以后|之后|过后)?")
_DURATION_AFTER = re.compile(rf"(\d+|[{_CN_NUM}几]+)(个)?(分钟|小时|钟头|秒钟|秒|天|周|刻钟)(后|以后|之后)")
_AFTER_ONE_OCLOCK = re.compile(r"(钟|半|\d|[一二三四五六七八九十]+分)")
_HOUR_ONLY = re.compile(r".+点钟?|.+:")
_AMOUNT_UNIT = re.compile(r"度|%|倍|公里|米|档|级")
_MINUTES_END = re.compile(r"(半|刻|分)$")
_MINUTES_OR_HOUR_END = re.compile(r"(半|刻|分|整|钟)$")

#: the Chinese numerals a clock time of ``SPOKEN_CLOCK`` can start with (besides a digit)
_CLOCK_NUMERALS = frozenset("零一二两三四五六七八九十")
#: a spoken clock time, minutes included: 七点四十五, 八点半, 十二点零五, 三点一刻, 7点45, 7:45
SPOKEN_CLOCK = re.compile(
    rf"(?:\d{{1,2}}|[零一二两三四五六七八九十]{{1,3}})(?:点钟?|:)(?:半|[一三]刻|整|(?:\d{{1,2}}|[零一二三四五六七八九十]{{1,3}})分?)?")


def has_time_expression(text: str, lex: AutomationLexicons) -> bool:
    """A time point, period, day, weekday or delay (明天, 晚上, 八点, 周五, 十分钟后) in ``text``.

    Events (下班, 放学) and bare durations are not counted; ``一点`` counts only as a clock time
    (一点钟, 一点半), never as "a bit" (调高一点)."""
    low = lowered(text)
    if any(cat in ("day", "week", "period", "delay") for *_, cat in lex.time_words.find(low)):
        return True
    return has_clock(low) or bool(_DURATION_AFTER.search(low))


def has_clock(low: str) -> bool:
    """A clock time or a date (八点, 7:45, 五号) in ``low``; ``一点`` only as a clock time (一点钟, 一点半). None
    without a clock's mark (``CLOCK_MARKS``)."""
    if CLOCK_MARKS.isdisjoint(low):
        return False
    for m in CLOCK.finditer(low):
        if m.group(1) == "一" and m.group(2) == "点" and not _AFTER_ONE_OCLOCK.match(low[m.end():]):
            continue
        if m.group(2) in ("号", "日") and _number(m.group(1)) > 31:
            continue  # 九十五号的油, 一百号: a grade or a number, no day of the month
        if m.group(2) == "点" and _number(m.group(1)) > 24:
            continue  # 九十七点四, 一零三点七: a radio frequency or a decimal, no hour
        return True
    return False


def _number(said: str) -> int:
    """The value of digits or a Chinese numeral (0 when it cannot be read: 几)."""
    try:
        return int(said) if said.isdigit() else chinese_to_int(said)
    except ValueError:
        return 0


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


#: an amount a state is compared with (二十六度, 百分之二十, 30%, 一百二, 2.5)
_COMPARED_AMOUNT = re.compile(r"(?:百分之)?[\d零一二两三四五六七八九十百千点.]+(?:度|%|公里|千米|米|个点)?")
#: how far into a text the comparison word of a state said first may be (卧室温度|低于)
_COMPARED_REACH = 8


def comparison_prefix(low: str, lex: AutomationLexicons, subject: bool = True) -> int:
    """How many characters at the start of ``low`` are a state compared with an amount and no trigger after it
    (室内温度高于二十六度 of 室内温度高于二十六度开空调; with ``subject=False``, 低于二十二度 of 低于二十二度关空调):
    what the state is about (condition_subjects.txt) right before a comparison word (category ``compared``) and
    an amount; 0 when ``low`` starts otherwise."""
    if lex.condition_subjects is None:
        return 0
    found = lex.condition_subjects.find(low[:_COMPARED_REACH + 3])
    for a, b, _, cat in found:
        if cat != "compared" or a > _COMPARED_REACH:
            continue
        if subject and not any(e == a and c not in ("compared", "start") for _, e, _, c in found):
            continue
        if not subject and a > 0:
            continue
        m = _COMPARED_AMOUNT.match(low, b)
        return m.end() if m and m.end() > b else 0
    return 0


#: what joins the first and the last day of a range (周一到周五, 周一至周五)
_RANGE = frozenset("到至")


def time_prefix(low: str, lex: AutomationLexicons) -> int:
    """How many characters at the start of ``low`` are a time point: days, periods, weekdays, a range of days
    and a clock time (明天早上七点半, 除夕晚上八点, 下周一, 周一到周五早上八点); 0 when it holds neither a clock time nor a day, or starts with
    neither a digit, a clock's numeral nor the first character of a time word (``lex.time_point_firsts``)."""
    first = low[:1]
    if not first.isdecimal() and first not in _CLOCK_NUMERALS and first not in lex.time_point_firsts:
        return 0
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
        if low[pos:pos + 1] in _RANGE and anchored and pos + 1 < len(low):  # 周一到周五: a range of days
            after = lex.time_words.prefix(low[pos + 1:])
            if after and lex.time_words.category.get(after) in ("day", "week"):
                pos += 1 + len(after)
                continue
        break
    return pos if anchored else 0


# --------------------------------------------------------------------------------------------
# Devices, verbs and commands
# --------------------------------------------------------------------------------------------

_BARE_REST = re.compile(r"^[的和与、,，\s]*$")
#: a command ending in a verb whose object or complement is the place or amount after it (导航|回家, 调|到二十三度):
#: no condition starts right after it
_TAKES_PLACE = re.compile(r"(?:导航|去|回|到|开到|送到|调|(?<!打)开|升|降|设|放|拉)$")


def seat_mentions(text: str, lex: AutomationLexicons) -> list[tuple[int, int, str, str]]:
    """(start, end, surface, canonical seat) of every position word (主驾, 副驾驶, 后排)."""
    return [(a, b, text[a:b], cat) for a, b, _, cat in lex.positions.find(lowered(text))]


def devices_in(text: str, lex: AutomationLexicons) -> list[tuple[int, int, str, str]]:
    """(start, end, device, kind) of every device word, longest first."""
    return [(a, b, text[a:b], cat) for a, b, _, cat in lex.device_kinds.find(lowered(text))]


def is_switch_verb(word: str, lex: AutomationLexicons) -> bool:
    """Is ``word`` (lower case) a verb that switches something on or off (actions.txt, automation ``on`` / ``off``)?"""
    return lex.action_verbs.category.get(word) in ("on", "off")


def has_verb(text: str, lex: AutomationLexicons) -> bool:
    """Does the text hold an action verb outside its device names (座椅加热 is a device, not 加热)?"""
    low = lowered(text)
    for a, b, _, _ in reversed(lex.device_kinds.find(low)):
        low = low[:a] + "\x00" * (b - a) + low[b:]
    return lex.action_verbs.search(low) is not None or bool(lex.reminder_verbs.search(low)) \
        or any(c != "item" for *_, c in lex.memo.find(low))


def is_bare_device(text: str, lex: AutomationLexicons) -> bool:
    """Only device (and seat) names, nothing else: ``座椅加热``, ``主驾座椅通风``, ``客厅灯``. Not when its first
    character starts no name (``lex.name_firsts``) and is no joiner: it would be left over."""
    low = lowered(text)
    if low[:1] not in lex.name_firsts and not _BARE_REST.match(low[:1]):
        return False
    devices = lex.device_kinds.find(low)
    if not devices:
        return False
    for a, b, _, _ in sorted(devices + lex.positions.find(low), reverse=True):
        low = low[:a] + low[b:]
    return bool(_BARE_REST.match(low))


def is_super_task_mention(text: str, lex: AutomationLexicons) -> bool:
    """Spec 超级任务: names a super-task keyword (自动化, 智能场景, HyperTask, ...), or changes,
    deletes or cancels a named habit or rule (删除回家习惯)."""
    low = lowered(text)
    if lex.super_task.search(low) is None:
        return False  # no keyword and no named habit
    cats = {c for *_, c in lex.super_task.find(low)}
    return "keyword" in cats or ("named" in cats and lex.habit_change.search(low) is not None)


def may_hold_command(text: str, lex: AutomationLexicons) -> bool:
    """Can ``text`` or a piece of it be a whole plain command (``is_plain_command``)? Only if it holds an action
    verb, a reminder verb or a memo word (``lex.command_words``): every plain command does. Exact for every piece
    when ``text`` has no Σ, the one letter whose lower case depends on the letters around it."""
    return "Σ" in text or (lex.command_words is not None and lex.command_words.search(lowered(text)) is not None)


def is_plain_command(text: str, lex: AutomationLexicons) -> bool:
    """A request that is whole on its own and holds no trigger word (an event may be its object: 导航回家):
    it starts with a verb of two characters or more and has an object (打开空调, 查一下今天的路况: a time in
    the object is content), or names a device or starts with 把 or 给, has a verb and no time (把音量调到十二,
    给王师傅打电话, 开灯).
    A trigger of its own outside seat and device names (且, 时, 如果, 超过) makes it part of a condition."""
    text = strip_fillers(text, lex)
    if len(text) < 2 or (len(text) == 2 and not devices_in(text, lex)):
        return False  # two characters are a command only as a verb and a device (开灯, 放歌; not 开会)
    low = lowered(text)
    head = lex.action_verbs.prefix(low)
    if head and len(head) >= 2 and len(low) > len(head):
        if has_time_expression(low[:len(head)], lex):
            return False  # 查一下今天的路况: a time in its object is content, in its verb it is not
    elif not may_hold_command(text, lex) or has_time_expression(text, lex) \
            or not ((devices_in(text, lex) or low.startswith(("把", "给"))) and has_verb(text, lex)):
        return False  # (has_verb needs a verb, reminder or memo word: one search tells most pieces without any)
    if lex.triggers.search(low) is None:
        return True  # no trigger word at all: blanking names out cannot add one
    return not any(cat != "prefix" or b - a >= 2 for a, b, _, cat in lex.triggers.find(signal_text(text, lex)))


def is_whole_request(head: str, lex: AutomationLexicons) -> bool:
    """Is ``head`` a request on its own, said before a condition: a plain command, or a reminder whose content is
    said before any time (提醒我开例会, not 提醒我下午)?"""
    low = lowered(strip_fillers(head, lex))
    verb = lex.reminder_verbs.prefix(low)
    if verb:
        content = low[len(verb):]
        return bool(content) and not has_time_expression(content, lex) and lex.triggers.search(content) is None
    return is_plain_command(head, lex)


def is_plain_question(text: str, lex: AutomationLexicons) -> bool:
    """A question whole on its own, said before a condition with no pause (今天天气怎么样|下午四点…): four
    characters or more, a question word (questions.txt) among its last three, no trigger word and no request
    verb (a reminder or a command is ``is_plain_command``'s)."""
    low = lowered(strip_fillers(text, lex))
    if len(low) < 4 or lex.questions is None or lex.triggers.search(low) is not None:
        return False
    if not any(b >= len(low) - 2 for _, b, *_ in lex.questions.find(low)):
        return False
    return not may_hold_command(low, lex)


def is_fragment(action: str, lex: AutomationLexicons) -> bool:
    """An action span that is no request on its own: only a verb (打开, 拉上), only a negation (千万别) or a
    把 object without its verb (把窗帘). A bare device (座椅加热) is a request: the missing-verb rule completes it."""
    low = lowered(strip_fillers(action, lex))
    if not low or NEGATION_BEFORE.fullmatch(low):
        return True  # nothing, or only a negation (千万别|再帮我开空调)
    verb = lex.action_verbs.prefix(low)
    if verb and len(verb) == len(low):
        return True
    return low.startswith("把") and not has_verb(low[1:], lex)


def takes_place(text: str, lex: AutomationLexicons) -> bool:
    """Does ``text`` end in a verb whose place or amount comes next (``_TAKES_PLACE``: 导航, 调)? Not when that
    character ends a device's name (打开空调: 调 is part of 空调)."""
    low = lowered(text)
    m = _TAKES_PLACE.search(low)
    return m is not None and not any(a < m.start() < b for a, b, *_ in lex.device_kinds.find(low))


def management_after_command(before: str, after: str, lex: AutomationLexicons) -> bool:
    """A whole command said verb first, then a super-task clause (关闭所有的灯|把这个存成智能场景): two requests."""
    return (is_super_task_mention(after, lex) and not before.startswith("把")
            and not is_super_task_mention(before, lex) and is_plain_command(before, lex))


# --------------------------------------------------------------------------------------------
# Breaks between requests
# --------------------------------------------------------------------------------------------

_PAUSES = re.compile(r"[,，;；。!！?？]+")


def plain_breaks(text: str, lex: AutomationLexicons) -> list[tuple[int, int, str]]:
    """(start, end, category) of the pauses (category ``pause``) and split connectors (``connectors.txt``,
    automation view) of ``text``, left to right."""
    pauses = [(m.start(), m.end(), "pause") for m in _PAUSES.finditer(text)]
    return sorted(pauses + [(a, b, cat) for a, b, _, cat in lex.breaks.find(text)])


def sequence_connector(gap: str, lex: AutomationLexicons) -> bool:
    """Is ``gap`` (lower case, edge punctuation off) a whole sequence connector (然后, 并且, 接着: connectors.txt
    ``break``)?"""
    return bool(gap) and any(a == 0 and b == len(gap) and cat == "break" for a, b, _, cat in lex.breaks.find(gap))


def sentence_break(text: str, start: int, end: int) -> bool:
    """Does ``text[start:end]`` (the gap between two spans) end a sentence (。；！？)?"""
    return not SENTENCE_END.isdisjoint(text[start:end])
