"""Hard rules of XA4.1: small pure functions applied after the models, which no model can override."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from fastslow.models.taxonomy import (
    AMBIGUOUS, AUTOMATION_SLOW_POLICY, CONTEXT_REQUIRED, DEFAULT_ROUTE, DIRECT_DETERMINISTIC_QUERY,
    EXPLICIT_DEVICE_MULTI_ACTION, FAST, MISSING_REQUIRED_SLOT, MULTI_STEP_PLANNING, POLICY_UNCERTAIN, SLOW,
)

#: 聚合: risk-dominant order 慢 > 模糊 > 快.
SEVERITY = {FAST: 0, AMBIGUOUS: 1, SLOW: 2}


@dataclass(frozen=True)
class Route:
    """The routing decision for one (sub)request."""

    text: str
    label: str
    primary_reason_code: str
    reason_codes: tuple[str, ...]
    confidence: float
    #: the subrequest is an explicit control of a car or home device (the aggregation's 快 special case)
    device_control: bool = False
    alternatives: dict = field(default_factory=dict, compare=False)
    #: a control verb (on, off, adjust) with no device, content, place or app named: what a later part of
    #: a multi-command says when it goes on with the device before it (副驾的也打开, 开到三档)
    elliptical_control: bool = False


#: a request that stops at the verb taking its value or whom it is for (空调温度调到, 音量调成, 导航去, 打电话 打给),
#: a hesitation after it at most (调到呃), or navigation said alone (导航, 帮我导航): no value, place or person follows
_STOPS_AT_ITS_SLOT = re.compile(r"(?:调到|调成|调为|设成|设为|设到|开到|改成|换成|打给|发给|导航\W*去|导航到)\W*(?:呃|额|嗯)?\W*$"
                                r"|^(?:帮我|给我|我要)?导航(?:一下)?\W*$")


def missing_slot(route: Route) -> Route:
    """XA4.1 真实消歧、补槽和上下文推理 (缺少执行所必需且不能稳定默认的槽位 → 慢): a (sub)request whose text stops at
    the verb that takes its value, place or person (``_STOPS_AT_ITS_SLOT``; the text the router read, hesitations
    and a cut-off 呃 stripped) is 慢 ``MISSING_REQUIRED_SLOT``, whatever the model read in the device before it
    (音量调成 reads like a fast volume control). The standard decides it, so its confidence is 1."""
    if route.primary_reason_code == MISSING_REQUIRED_SLOT or not _STOPS_AT_ITS_SLOT.search(route.text):
        return route
    return replace(route, label=SLOW, primary_reason_code=MISSING_REQUIRED_SLOT,
                   reason_codes=(MISSING_REQUIRED_SLOT, *(c for c in route.reason_codes if c != MISSING_REQUIRED_SLOT)),
                   confidence=1.0, device_control=False, elliptical_control=False)


#: a follow-up that names only what changes (后排呢, 那电动窗帘呢, 后来呢) or asks for one more (再来一个); not one that
#: narrows what was found (再便宜点的呢)
_FOLLOW_UP = re.compile(r"^(?:那|那么|那个)?(?:(?!再|更)[^,，。？?！!]{1,6}的?呢|再来一个|再讲一个|再说一个)$")


def is_follow_up(text: str) -> bool:
    """Does the (stripped) text only name what changes from the question before it, or ask for one more?"""
    return _FOLLOW_UP.match(text) is not None


def asked_again(route: Route, earlier: Route) -> Route:
    """XA4.1 上下文: a follow-up (``is_follow_up``) of an information question asks the same kind of question
    (前排温度多少 → 后排呢; 这个音箱能控制空调吗 → 那电动窗帘呢; 讲个笑话 → 再来一个): 模糊 with the code of
    ``earlier``, the route of the user's turn before it said alone. After any other request (a weather query, a
    command) the route stays the model's: 那后天呢 after 明天会下雨吗 needs that turn (CONTEXT_REQUIRED)."""
    if earlier.label != AMBIGUOUS or earlier.primary_reason_code == POLICY_UNCERTAIN:
        return route
    code = earlier.primary_reason_code
    return replace(route, label=AMBIGUOUS, primary_reason_code=code, reason_codes=(code,),
                   confidence=earlier.confidence, device_control=False, elliptical_control=False)


def is_explicit_device_control(route: Route) -> bool:
    """A fast, side-effecting command on a car or home device (not a query about it)."""
    return route.device_control and route.label == FAST and route.primary_reason_code != DIRECT_DETERMINISTIC_QUERY


def device_controls(subrequests: list[Route]) -> list[bool]:
    """Which subrequests are explicit device controls (多个明确设备控制). A later part that names no
    device but goes on with the control before it (主驾座椅通风打开，副驾的也打开; 座椅加热关掉，开到三档;
    热水器打开，水温调到45度) controls that device too: its object is the earlier part's, by ellipsis."""
    out: list[bool] = []
    for i, r in enumerate(subrequests):
        explicit = is_explicit_device_control(r)
        if not explicit and i and out[-1] and r.label == FAST and r.elliptical_control:
            explicit = r.primary_reason_code != DIRECT_DETERMINISTIC_QUERY
        out.append(explicit)
    return out


#: a subrequest that asks something (后备箱关上 对了胎压灯为啥一直亮): no step of a flow
_ASKS = re.compile(r"[吗呢?？]$|什么|怎么|为什么|为啥|多少|哪个|哪里|哪儿|哪家|几点|是不是|有没有|咋")


def subrequest_context(whole_context: str, index: int, text: str = "") -> str:
    """XA4.1 上下文 for a subrequest: the first keeps the query's own context; each later one is routed
    as the continuation of an established direct flow (``prev_fast``): in 把座椅通风打开，副驾的也打开
    the second part continues the first (上一轮快时，当前简单直接动作可继续快). A later one that asks a
    question (``text`` asks) is routed as said alone (``none``): 打开车窗 再帮我比比三个停车场哪个最划算 asks
    no step of the window's flow. If an earlier part was slow, aggregation makes the whole slow anyway."""
    if index == 0:
        return whole_context
    return "none" if _ASKS.search(text) else "prev_fast"


#: what the model reads as one request whatever the connectors say: a dependent chain (查天气再决定要不要开窗), and an
#: automation, whose condition governs every action after it (下雨了就把窗帘和窗户都关上 on a speaker)
WHOLE_REQUESTS = frozenset({MULTI_STEP_PLANNING, AUTOMATION_SLOW_POLICY})


def routed_parts(whole: Route, parts: list[Route]) -> list[Route]:
    """XA4.1 多指令: the routes that are aggregated. Subrequests are routed apart only when they are
    independent: when the model reads the whole as one request (``WHOLE_REQUESTS``), it is not split,
    whatever the connectors said."""
    if len(parts) > 1 and whole.primary_reason_code not in WHOLE_REQUESTS:
        return parts
    return [whole]


#: one command said of several places named one by one, with 都 (前后除雾都打开, 左右后视镜加热都开了, 把四个窗户都降到
#: 一半): several devices controlled at once (所有, 全部 name no places: 把车里所有的灯都关了 is one control)
SEVERAL_PLACES = re.compile(r"(?:前后|左右|四个|两边|前排后排|主副驾|主驾副驾)[^，,。；;]{0,8}都(?!.*(?:吗|没|没有|么)$)")


def controls_several(route: Route) -> bool:
    """Is one explicit device control said of several places at once (``SEVERAL_PLACES``; not asked of them:
    四个窗户都关严了没)?"""
    return is_explicit_device_control(route) and SEVERAL_PLACES.search(route.text) is not None


def aggregate(subrequests: list[Route], text: str | None = None) -> Route:
    """XA4.1 聚合: all subrequests explicit device control → 快 / EXPLICIT_DEVICE_MULTI_ACTION, and so is
    one control said of several places at once (``controls_several``); otherwise the worst label by 慢 > 模糊 > 快,
    whose first subrequest gives the primary code.

    ``reason_codes`` keeps every code the subrequests hit, the primary one first. The confidence of
    an aggregate is that of its weakest deciding part.
    """
    if not subrequests:
        raise ValueError("aggregate needs at least one subrequest")
    text = subrequests[0].text if text is None and len(subrequests) == 1 else text
    if len(subrequests) == 1 and not controls_several(subrequests[0]):
        only = subrequests[0]
        return only if only.text == text else replace(only, text=text)
    codes = tuple(dict.fromkeys(code for r in subrequests for code in r.reason_codes))
    if all(device_controls(subrequests)):
        return Route(
            text=text, label=FAST, primary_reason_code=EXPLICIT_DEVICE_MULTI_ACTION,
            reason_codes=tuple(dict.fromkeys((EXPLICIT_DEVICE_MULTI_ACTION, *codes))),
            confidence=min(r.confidence for r in subrequests), device_control=True,
        )
    worst = max(SEVERITY[r.label] for r in subrequests)
    deciding = [r for r in subrequests if SEVERITY[r.label] == worst]
    primary = deciding[0].primary_reason_code
    return Route(
        text=text, label=deciding[0].label, primary_reason_code=primary,
        reason_codes=(primary, *(c for c in codes if c != primary)),
        confidence=min(r.confidence for r in deciding),
    )


def default_route(label: str) -> str:
    """能力与默认路由: 快 → 快系统; 慢 and 模糊 → 慢系统."""
    return DEFAULT_ROUTE[label]


def review_required(route: Route, has_context: bool, threshold: float) -> bool:
    """A person should look at this record.

    - 模糊 with POLICY_UNCERTAIN (决策树 3: 端侧缺失导致策略确实不同 → review_required=true);
    - CONTEXT_REQUIRED with no earlier turn given (上下文: 缺少前轮而当前短句不可独立理解时，标慢并复核);
    - the model's confidence in its label below ``threshold`` (tunable; 0 disables it).
    """
    if route.primary_reason_code == POLICY_UNCERTAIN:
        return True
    if route.primary_reason_code == CONTEXT_REQUIRED and not has_context:
        return True
    return route.confidence < threshold


def fast_system_pending() -> None:
    """能力与默认路由: null until a capability list says otherwise; it never changes the label."""
    return None
