"""Spec 条件负例: a built-in vehicle behaviour (走远时车门上锁, 倒车时后视镜自动下翻, 车辆超速时提醒我) is no task of
the user's: its group is marked ``builtin``. Known behaviours (builtin_behaviours.txt) and the class behind them
(builtin_functions.txt, automation view: a situation the car senses, something the car does itself)."""

from __future__ import annotations

import re
from typing import Sequence

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.markup import lowered
from fastslow.models.automation.rules.words import REMIND, TIME_AMOUNT, devices_in, has_clock

DEFAULT = "default"

#: builtin_functions.txt categories that say nothing about the situation when found in a condition
_NO_SITUATION = frozenset({"part", "self", "signal", "comfort", "advice"})
#: builtin_functions.txt categories that are no built-in function when found in an action
_NO_FUNCTION = frozenset({"event", "moment", "state", "alarm"}) | _NO_SITUATION
#: a threshold the user sets (车速超过120, 胎压低于2.0, 电量不足百分之二十): the user's own condition
_USER_THRESHOLD = re.compile(r"(?:超过|高于|低于|不足|少于|小于|大于|达到|到了|到)(?:百分之)?[\d零一二两三四五六七八九十百千]")
#: a reminder's content short enough to be advice the car gives (提醒我休息, 提醒我减速, 提醒我看路)
_ADVICE_CHARS = 3
#: what an appliance's own notice that its work is done says besides 提醒我 (提醒我换): more is the user's errand
_NOTICE_CHARS = 1
#: what no car or appliance does by itself as a built-in: requests of these kinds (actions.txt, automation view)
_NOT_THE_CARS = frozenset({"media", "nav", "comm", "query", "remind", "manage", "create", "search"})
_WARN = re.compile(r"^(?:警告|告警|报警|预警|提示|提醒|警示)")


def is_reminder(action: str) -> bool:
    """Is the subquery a reminder (rewritten to start with 提醒我)?"""
    return action.startswith(REMIND)


def is_builtin(condition: str | None, actions: Sequence[str], lex: AutomationLexicons) -> bool:
    """Spec 条件负例: a built-in behaviour of the car or of a home appliance (``builtin_domain``)."""
    return builtin_domain(condition, actions, lex) is not None


def builtin_domain(condition: str | None, actions: Sequence[str], lex: AutomationLexicons) -> str | None:
    """Whose built-in behaviour the group is, ``car`` or ``home``, or None for a task of the user's.

    Spec 条件负例 (走远时车门上锁, 倒车时后视镜自动下翻, 车辆超速时提醒我; 冰箱结霜时自动除霜 at home): the
    condition holds one of a known behaviour's trigger words and every action one of its action words. A built-in
    behaviour has one fixed trigger: 且 / 或 compounds are the user's own (``lex.compound_triggers``), and so is a
    clock time or a day the user sets (每天晚上十点半如果车库门没关就提醒我). A condition holding none of the known
    behaviours' condition words (``lex.builtin_condition_words``) is none of theirs; one that names the car (车)
    or a threshold (门锁电量低于百分之十) is none of a home appliance's (the car warns at a threshold the driver
    names too: 车速超过一百二就提醒我)."""
    if not condition or condition == DEFAULT or not actions:
        return None
    cond = lowered(condition)
    if lex.compound_triggers is not None and lex.compound_triggers.search(cond) is not None:
        return None
    if _set_time(cond, lex):
        return None
    said = lex.builtin_condition_words
    for b in (lex.builtins if said is not None and said.search(cond) is not None else ()):
        if b.domain == "home" and ("车" in cond or _USER_THRESHOLD.search(cond)):
            continue  # 车门关上以后自动上锁: the car's door; 门锁电量低于百分之十: a threshold the user set
        if any(w in cond for w in b.condition_words) and all(_builtin_action(a, b, lex) for a in actions):
            return b.domain
    if builtin_by_class(cond, actions, lex):
        return "car"
    return "home" if appliance_by_itself(cond, actions, lex) else None


def _builtin_action(action: str, builtin, lex: AutomationLexicons) -> bool:
    """An action matches a behaviour holding one of its action words, 自己 read as 自动 (洗衣机洗完了就自己断电).
    A reminder (提醒我关窗) matches only a built-in reminder, never by the words of its content, and a
    ``bare_reminder`` behaviour's only when it asks to be told no more (``_bare_notice``: 洗衣机洗完的时候提醒我,
    but 提醒我晾衣服 is the user's errand); an action word inside a longer device name is no match (烘干 of
    打开烘干机: another appliance, switched on by the user)."""
    if is_reminder(action):
        return (any(w.startswith(("提醒", "提示")) for w in builtin.action_words)
                and (not builtin.bare_reminder or _bare_notice(action)))
    low = lowered(action).replace("自己", "自动")  # 自己断电 is said for 自动断电 (same length: spans hold)
    low = _SAID_BETWEEN.sub("", low)  # 把车窗都给我关上 is 车窗关上
    words = [w for w in builtin.action_words if w in low]
    if not words:
        return False
    names = [(a, b) for a, b, *_ in lex.device_kinds.find(low)]
    # a word inside a longer name that does not end with it names another thing (烘干 of 烘干机); 车载冰箱 is a 冰箱
    return any(not any(a <= m.start() and m.end() < b for a, b in names)
               for w in words for m in re.finditer(re.escape(w), low))


#: words said between a device and what is done to it that change nothing of it (都, 给我)
_SAID_BETWEEN = re.compile(r"全都|都给我|给我|都")


def _bare_notice(reminder: str) -> bool:
    """Does the reminder ask to be told and no more (提醒我, 提醒我一声, 提醒我换: at most one character said
    besides)?"""
    content = reminder[len(REMIND):]
    for said in ("一下", "一声"):
        content = content.replace(said, "")
    return len(content) <= _NOTICE_CHARS


def builtin_by_class(condition: str, actions: Sequence[str], lex: AutomationLexicons) -> bool:
    """The class behind the spec's 条件负例 (lexicons/builtin_functions.txt, automation view): the condition is
    a situation the car senses itself (``vehicle_situation``) and every action is something the car does
    itself (``builtin_action``): 变道时打开盲区监测, 疲劳驾驶的时候提醒我, 锁车的时候自动升起车窗. A built-in
    function under a condition of the user's own (进入高速后打开自适应巡航) stays a user task."""
    functions = lex.builtin_functions
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


def appliance_by_itself(condition: str, actions: Sequence[str], lex: AutomationLexicons) -> bool:
    """The home's counterpart of ``builtin_by_class``: the condition is a state of one home appliance (燃气灶火灭了,
    烤箱到时间了, 热水壶水开了; no car, no threshold or clock time the user sets) and every action is said to
    happen by itself (自动, 自己) and names no device but that one: 自动断气, 自己跳闸. 洗衣机洗完了自动打开烘干机
    switches another appliance on, a task of the user's; a reminder is never the appliance's by this class. An
    appliance a car may have too (冰箱, 加湿器: ``shared`` in devices.txt) counts, since no car is named."""
    if "车" in condition or _USER_THRESHOLD.search(condition) or _set_time(condition, lex):
        return False
    named = {lowered(name) for *_, name, kind in devices_in(condition, lex) if kind in ("home", "shared")}
    if len(named) != 1 or lex.builtin_functions is None:
        return False
    said = lex.builtin_functions.terms("self")
    for action in actions:
        low = lowered(action)
        if is_reminder(action) or not any(word in low for word in said) \
                or any(cat in _NOT_THE_CARS for *_, cat in lex.action_verbs.find(low)):
            return False  # 风量调高时自动导航到充电站: no appliance navigates, plays or calls by itself
        if any(lowered(name) not in named for *_, name, _ in devices_in(action, lex)):
            return False
    return True


def function_words(low: str, lex: AutomationLexicons) -> list[tuple[int, int, str, str]]:
    """The builtin_functions words of ``low`` (none in parsers without that word class)."""
    return lex.builtin_functions.find(low) if lex.builtin_functions is not None else []


def function_prefix(low: str, lex: AutomationLexicons) -> str | None:
    """The longest builtin_functions word ``low`` starts with."""
    return lex.builtin_functions.prefix(low) if lex.builtin_functions is not None else None


def _set_time(condition: str, lex: AutomationLexicons) -> bool:
    """A clock time, a day, a weekday, a delay or a duration in the condition (每天晚上十点半如果车库门没关, 空调开了两个
    小时以后, 下车后持续三个小时): a time the user sets, so the task is the user's own, whatever the car or the
    appliance senses besides. A threshold the car watches (连续开车超过四小时) is no such time."""
    low = lowered(condition)
    return has_clock(low) or any(cat in ("day", "week") for *_, cat in lex.time_words.find(low)) \
        or any(m.group().endswith("后") or low[:m.start()].endswith("持续") for m in TIME_AMOUNT.finditer(low))


def _function_words(action: str, lex: AutomationLexicons) -> set[str]:
    """The builtin_functions.txt categories said in ``action``, read again in the object after its verb when
    the verb's last character began a longer word (打开车道保持辅助 reads 开车 first, 车道保持辅助 after 打开)."""
    low = lowered(action)
    found = {cat for *_, cat in function_words(low, lex)}
    verb = lex.action_verbs.prefix(low)
    if verb and len(low) > len(verb):
        found |= {cat for *_, cat in function_words(low[len(verb):], lex)}
    return found


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
