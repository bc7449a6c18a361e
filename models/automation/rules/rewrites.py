"""Spec 改写规则: what a group's condition and subqueries become once bound (持续时间, 提醒改写, 提醒我说,
超级任务, 带 trigger 的位置继承, 执行一次, default). Each rule is one function named after the spec."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.builtin import DEFAULT, function_words, is_reminder
from fastslow.models.automation.rules.markup import lowered
from fastslow.models.automation.rules.words import (
    REMIND, devices_in, has_time_expression, has_verb, is_bare_device, is_super_task_mention, is_switch_verb,
    seat_mentions, strip_fillers,
)

REMIND_SAY = "提醒我说"
DURATION = "持续"
ONCE = "执行一次"

_DURATION_VERBS = re.compile(r"^(持续|保持|开启|打开|开着|开|维持|共|来|放)+")
_ONE_ITEM = re.compile(r"^(一个|一条|个|条)")
_REMINDED_ME = re.compile(r"^(一下|我一下|我)+")
#: when a reminder is to come, said before its verb (提前叫我, 准时通知我)
_REMIND_WHEN = re.compile(r"^(?:提前|准时|按时|及时)")
_REMIND_HEAD = re.compile(r"^(提醒我|提醒)(一下)?")
_NOTE_VERB = re.compile(r"^(记一下|记下|记住|帮我记|记录一下|记录|记)")
_TOGGLE_ONLY = re.compile(r"^(打开|开启|关闭|关掉|关上|启用|停用|开|关)(所有|全部)?的?$")


def clean_subquery(text: str, lex: AutomationLexicons) -> str:
    """A subquery without edge punctuation and fillers (帮我, 请, 然后, 吧)."""
    return strip_fillers(text, lex)


def add_missing_verb(action: str, lex: AutomationLexicons) -> str:
    """Spec 持续时间 example: ``座椅加热`` → ``打开座椅加热``: a device named alone gets 打开 (播放 for
    media). Anything said with a verb is left as said (后排空调关掉, 把空调打开: a plain command is quoted;
    only a duration's action is rewritten, ``duration_action``)."""
    if not is_bare_device(action, lex):
        return action
    kinds = [kind for *_, kind in devices_in(action, lex)]
    if kinds and kinds[0] == "setting":
        return action  # 音量 alone is no request to switch anything on
    return ("播放" if kinds and kinds[0] == "media" else "打开") + action


#: what joins two objects of one verb (打开空调和座椅加热)
_OBJECT_LIST = re.compile(r"和|与|以及|、")
#: where or how many, said before a device (关掉所有灯和空调, 打开家里空调和热水器)
_OBJECT_SCOPE = re.compile(r"^(?:所有|全部|家里|屋里|车里|车内)的?")


def shared_verb_split(action: str, lex: AutomationLexicons) -> list[str]:
    """One verb said before two or more devices is one request per device: ``打开空调和座椅加热`` →
    ``打开空调``, ``打开座椅加热``, as the writers who read the spec alone write it (the spec leaves it open).
    Only when the verb comes first and every object is a bare device name (``is_bare_device``); anything else
    (打开氛围灯和解锁车门, 把空调和座椅加热打开, 检查水和食物) is left as said."""
    low = lowered(action)
    verb = lex.action_verbs.prefix(low)
    if not verb or not _OBJECT_LIST.search(action, len(verb)):
        return [action]
    objects = _OBJECT_LIST.split(action[len(verb):])
    if len(objects) < 2 or not all(o and is_bare_device(_OBJECT_SCOPE.sub("", o), lex) for o in objects):
        return [action]
    seat = objects[0][:len(lex.positions.prefix(lowered(objects[0])) or "")]
    head = action[:len(verb)]

    def seated(o: str) -> str:
        # 打开副驾空调和座椅加热: the seat said with the first object goes with another one a seat has
        takes_seat = seat and not lex.positions.prefix(lowered(o)) and lex.positional_devices.prefix(lowered(o))
        return seat + o if takes_seat else o
    return [head + seated(o) for o in objects]


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
    m = _REMINDER_NOUN.match(action)
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
    return len(head or "") > 1 and is_switch_verb(head, lex)


def rewrite_reminder(action: str, lex: AutomationLexicons) -> str:
    """Spec 提醒改写 (condition not empty): 播报 / 提示 / 叫我 / 喊我 / 通知我 / 告诉我 / 报告 / 念一下
    → ``提醒我``: ``通知我立刻充电`` → ``提醒我立刻充电``; said with when before it, that stays (提前叫我 →
    提前提醒我)."""
    lead = _REMIND_WHEN.match(action)
    when = lead.group() if lead else ""
    head = lex.reminder_verbs.prefix(lowered(action[len(when):]))
    if not head:
        return action
    rest = action[len(when) + len(head):]
    rest = _REMINDED_ME.sub("", rest)
    return when + REMIND + rest


def remind_say(action: str, lex: AutomationLexicons) -> str:
    """Spec 提醒我说: a reminder whose content holds a time word is quoted with 说, and that time is
    not a condition: ``提醒我后天晚上去露营`` → ``提醒我说后天晚上去露营``."""
    if not action.startswith(REMIND) or action.startswith(REMIND_SAY):
        return action
    content = action[len(REMIND):].lstrip(":：,， ")
    if content and has_time_expression(content, lex):
        return REMIND_SAY + content
    return action


_SEAT_LIST_JOINERS = re.compile(r"^(和|与|跟|及|以及|、|,|，|还有)?$")  # or nothing: 主驾副驾后排都有人


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
    found, prev = False, None
    if lex.once.search(lowered(text)) is None:
        return text, found  # no once marker anywhere: nothing to take off
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


#: what is said around a duration's device: a lead (把, 开着, 再开) and a tail of adverbs and on/off verbs
_DURATION_LEAD = re.compile(r"^(?:把|开着|一直开着|继续开|再开|一直开)")


#: the words a duration's action may end in (空调开|着, 轻音乐放), one or more, a pause between them a breath
#: (座椅加热打开，开十分钟)
_TAIL_WORDS = "就|先|再|继续|一直|持续|保持|维持|开着|开启|打开|开|关闭|关掉|关上|关|着|吹|来|运行|工作|转|放|播放|播|听"
_DURATION_TAIL = re.compile(rf"(?:{_TAIL_WORDS})(?:[，, ]?(?:{_TAIL_WORDS}))*$")
#: the verbs of a duration's tail that play what is named (轻音乐放半小时 → 播放轻音乐)
_PLAYED = re.compile(r"放|播|听")
#: a media verb said before what is played as well as after it (放相声放半个小时): a lead only then
_MEDIA_LEAD = re.compile(r"^(?:播放|放点|来点|放|播)")


def duration_action(action: str, lex: AutomationLexicons) -> str:
    """Spec 持续时间 (座椅加热十分钟 → 打开座椅加热): the action of a duration is the thing switched on
    (or off), whatever was said around it: 加湿器开 / 把卧室加湿器开 / 空调就开着 / 开着座椅加热 / 空调再开 / 空调先开 /
    座椅加热保持 → 打开 + what is switched; 空调关 → 关闭空调; 轻音乐放 / 放相声放 → 播放轻音乐 / 播放相声. The thing
    need not be a known device (后挡风玻璃除雾开 → 打开后挡风玻璃除雾), but holds no verb of its own. A request said verb first
    (开启空气净化) and anything else (空调调到26度) are left as said."""
    if is_bare_device(action, lex):
        return add_missing_verb(action, lex)
    lead = _DURATION_LEAD.match(action)
    if lead is None and (media := _MEDIA_LEAD.match(action)):  # 放相声放(半小时): played before and after
        tail = _DURATION_TAIL.search(action[media.end():])
        lead = media if tail and _PLAYED.search(tail.group()) else None
    body = action[lead.end():] if lead else action
    tail = _DURATION_TAIL.search(body)
    thing = body[:tail.start()] if tail else body
    said = (lead.group() if lead else "") + (tail.group() if tail else "")
    if not thing or not said or said == "把" or "开关" in said or (has_verb(thing, lex) and not is_bare_device(thing, lex)):
        return action
    if [d for _, _, d, _ in devices_in(thing, lex)] != [d for _, _, d, _ in devices_in(body, lex)]:
        return action  # a device name lost a character (开关, 关门): not the device as said
    if "关" in said:
        return "关闭" + thing
    return ("播放" if _PLAYED.search(said) else "打开") + thing


def once_condition(condition: str | None) -> str:
    """Spec 执行一次: ``执行一次+原始条件``."""
    if condition and condition.startswith(ONCE):
        return condition
    return ONCE + (condition or "")


_MANAGE_PREFIX = re.compile(r"^(用|通过|使用|利用|在|以|按)")


_MANAGE_SUFFIX = re.compile(r"(里面|里|中|内|的方式|来)$")


def super_task_clause(action: str, lex: AutomationLexicons) -> str:
    """Spec 超级任务: the management clause of a super-task mention. A bare keyword (用自动化, 智能场景里)
    becomes ``创建+keyword``; a clause with its own verb (删除自定义习惯, 新建一个超级任务, 把那个叫露营的自动化停掉,
    小米任务里那个下班回家的先关了) stays as said."""
    if lex.manage_verbs.search(action) or lex.action_verbs.search(lowered(action)):
        return action
    bare = _MANAGE_SUFFIX.sub("", _MANAGE_PREFIX.sub("", action)) or action
    return "创建" + bare


_MEMO_TOGGLE = re.compile(r"^(打开|开启|关闭|关掉|关上|启用|停用|开|关)")
#: reminders switched on or off as a whole, verb first or object first (打开提醒, 把提醒打开, 那个提醒先关一下)
_REMINDERS_SWITCHED = re.compile(
    r"^(?:把|将)?(?:所有的?|全部的?|那个|这个)?提醒(?:功能)?(?:先|都|全)?(?:打开|开启|开了|关掉|关闭|关了|关上|关)"
    r"|^(?:打开|开启|关掉|关闭)(?:所有的?|全部的?)?提醒(?:功能)?$")


def switches_reminders(action: str) -> bool:
    """Spec 反例 打开提醒: the reminder function switched on or off as a whole, which is no memo item (``null``,
    not ``default``) and whose intent is 提醒, not a device's."""
    return _REMINDERS_SWITCHED.search(lowered(action)) is not None


#: a message or a call (给妈妈发消息, 打电话): no memo, whatever words it holds
COMMUNICATION = re.compile(r"^给.{1,8}(发|打)|发消息|发微信|发短信|打电话|回消息|回电话")



def is_memo_management(action: str, lex: AutomationLexicons) -> bool:
    """Spec default: creating, changing, querying or deleting a memo-like item (提醒我去买菜,
    删除明天的日程, 我今天有什么安排). Turning the reminder function on or off (打开提醒) is not."""
    low = lowered(action)
    if _MEMO_TOGGLE.match(low) or switches_reminders(low):
        return False
    if low.startswith("提醒") and len(_REMIND_HEAD.sub("", low)) > 0:
        return True
    if COMMUNICATION.search(low):
        return False
    cats = {c for *_, c in lex.memo.find(low)}
    if "item" in cats and cats & {"create", "delete", "modify", "query"}:
        return True
    return bool(_NOTE_VERB.match(low)) and len(low) > 2


def unconditional_kind(action: str, lex: AutomationLexicons) -> str | None:
    """Spec default vs null for an action without a condition: ``default`` for super-task management
    and memo-like items, None (``null``) for every other unconditional action."""
    if is_super_task_mention(action, lex) or is_memo_management(action, lex):
        return DEFAULT
    return None
