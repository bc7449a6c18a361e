"""The subrequest splitter: independent commands joined by connectors become separate subrequests.

XA4.1 多指令: "可独立拆分路由时先对子请求分别标注，再保留聚合标签". A chain whose later part depends
on the earlier one (查天气再决定要不要开窗) is not independent, so it is never split, and neither is an
automation (上车时打开空调): its condition and action form one request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat

from fastslow.features.lexicon import load_lexicon
from fastslow.features.split import join_actionless, pieces_between

#: devices.txt categories of a device, actions.txt categories of a control verb
DEVICE_CATEGORIES = ("car_device", "home_device")
CONTROL_ACTIONS = ("on", "off", "adjust")
#: a device after one of these is still inside the command before it (客厅的灯和卧室的灯关掉, 把空调…)
JOINERS = ("和", "与", "及", "跟", "把", "给", "的", "让", "还有", "以及", "或", "或者", "说")


@dataclass(frozen=True)
class SplitLexicon:
    """The word sets the splitter needs, frozen at training time from the lexicon files."""

    connectors: frozenset  # sequence connectors (另外, 顺便, 然后): a second request may follow
    pauses: frozenset  # written pauses (，；、): so may one
    dependency: frozenset  # markers of a dependent chain: never split
    triggers: frozenset  # condition markers: an automation is one request
    trigger_suffixes: tuple  # 时 / 时候 glued to a token by jieba (上车时)
    actions: frozenset  # action verbs: a piece must hold one to stand alone
    #: an unpunctuated run of commands (后视镜折叠车门锁上): control verbs, devices and seats, and the words
    #: after which a device is still the object of the command before it (和, 把, 的)
    controls: frozenset = frozenset()
    devices: frozenset = frozenset()
    joiners: frozenset = frozenset()
    questions: frozenset = frozenset()  # question words: a question is not a run of commands (空调开着车窗能开吗)
    corrections: frozenset = frozenset()  # self-corrections (不对, 说错了): what comes before them is cancelled

    @cached_property
    def said_actions(self) -> re.Pattern | None:
        """The action verbs of two characters or more, found inside the text of a piece: a verb jieba glued to
        its object (关灯, 开窗) or split in two (合|上) still makes a request."""
        longer = sorted((t for t in self.actions if len(t) > 1), key=len, reverse=True)
        return re.compile("|".join(map(re.escape, longer))) if longer else None

    @cached_property
    def cuts(self) -> frozenset:
        """Connectors, pauses and self-corrections: the tokens a query is cut at."""
        return self.connectors | self.pauses | self.corrections

    @classmethod
    def from_lexicons(cls) -> "SplitLexicon":
        connectors = load_lexicon("connectors")
        by_category = {c: set() for c in connectors.categories}
        for term, cols in {**connectors.words, **connectors.chars}.items():
            for col in cols:
                by_category[connectors.categories[col]].add(term)
        actions = load_lexicon("actions")
        request = actions.categories.index("request") if "request" in actions.categories else -1
        # and the control verbs only the automation view has (挪, 放平, 合上: 座椅往前挪 靠背放平一点 is two commands),
        # but for those that end a device's name (加热 of 座椅加热, 通风): said alone they name that device
        automation = load_lexicon("actions", "automation")
        automation_controls = {i for i, c in enumerate(automation.categories) if c in CONTROL_ACTIONS}
        triggers = load_lexicon("triggers")
        devices = load_lexicon("devices")
        device_names = load_lexicon("devices", "automation").terms() + devices.terms()
        device_cols = {i for i, c in enumerate(devices.categories) if c in DEVICE_CATEGORIES}
        positions = load_lexicon("positions")
        control_cols = {i for i, c in enumerate(actions.categories) if c in CONTROL_ACTIONS}
        return cls(
            controls=frozenset(t for t, cols in {**actions.words, **actions.chars}.items() if control_cols & set(cols)),
            devices=frozenset(t for t, cols in {**devices.words, **devices.chars}.items() if device_cols & set(cols))
            | frozenset(positions.words),
            joiners=frozenset(JOINERS),
            questions=frozenset(load_lexicon("questions").terms()),
            corrections=frozenset(by_category.get("correction", set())),
            connectors=frozenset(by_category.get("sequence", set())),
            pauses=frozenset(by_category.get("pause", set())),
            dependency=frozenset(by_category.get("dependency", set())),
            triggers=frozenset(t for t, cols in triggers.words.items()
                               if {triggers.categories[c] for c in cols} & {"trigger", "conditional", "periodic"}),
            trigger_suffixes=tuple(sorted(t for t in triggers.terms() if t in ("时", "时候", "的时候"))),
            actions=frozenset(t for t, cols in {**actions.words, **actions.chars}.items() if cols != (request,))
            | frozenset(t for t, cols in {**automation.words, **automation.chars}.items()
                        if automation_controls & set(cols) and not any(d.endswith(t) for d in device_names)),
        )


def split_subrequests(tokens: tuple[str, ...], lexicon: SplitLexicon) -> list[tuple[int, int]]:
    """Token spans ``(start, end)`` of the independent subrequests of one query.

    Boundaries are sequence connectors (然后, 再, 并且, 顺便) and pauses (，；、); the connector itself
    belongs to no span. A piece without an action verb, or whose verb is negated (太冷了，调一下空调; 腿伸不开),
    joins the next piece, the last one joins the previous, so a feeling or a scene is never routed apart from
    its request; but a question
    next to a connector is a request of its own (关上车窗顺便告诉我为什么会起雾, 座椅加热打开另外哨兵模式是干嘛的,
    明天几号顺便把车窗关上: XA4.1 多指令, each part routed and the labels aggregated, the first deciding part
    giving the code), while one after a pause stays with its request (打开空调，怎么这么热: a feeling said as a
    question). A self-correction
    (不对, 说错了) cancels what was said before it: only the pieces after it are routed apart, and with one
    left the whole is routed as one request (打开车窗，不对，关上车窗 is 关上车窗, not two commands).
    """
    whole = [(0, len(tokens))]
    cuts = lexicon.cuts
    if cuts.isdisjoint(tokens):  # most queries: no connector, no pause, at most one command
        if lexicon.controls.isdisjoint(tokens):
            return whole
        pieces = command_runs(tokens, 0, len(tokens), lexicon)
        if len(pieces) < 2 or is_one_request(tokens, lexicon):
            return whole
    else:
        if is_one_request(tokens, lexicon):  # before the pieces are cut: they would not be used
            return whole
        pieces = pieces_between(len(tokens), ((i, i + 1) for i, t in enumerate(tokens) if t in cuts))
        if lexicon.controls:
            pieces = [cut for a, b in pieces for cut in command_runs(tokens, a, b, lexicon)]
    if not lexicon.corrections.isdisjoint(tokens):  # 口语改口: only what is said after the last correction counts
        last = max(i for i, t in enumerate(tokens) if t in lexicon.corrections)
        pieces = [(a, b) for a, b in pieces if a > last]
    pieces = _chains_joined(tokens, pieces, lexicon)
    if len(pieces) < 2:
        return whole
    merged = join_actionless(pieces, [_acts(tokens, a, b, lexicon)
                                      or ((a > 0 and tokens[a - 1] in lexicon.connectors
                                           or _connector_after(tokens, b, lexicon))
                                          and _asks(tokens[a:b], lexicon))
                                      for a, b in pieces])
    return merged if len(merged) >= 2 else whole


def _chains_joined(tokens: tuple[str, ...], pieces: list[tuple[int, int]],
                   lexicon: SplitLexicon) -> list[tuple[int, int]]:
    """A question that starts with a verb the piece before it said, and names no device, asks for that same
    operation done again on its result (一千美元换成人民币再换成日元是多少): one dependent chain, joined to that piece."""
    out = [pieces[0]] if pieces else []
    for a, b in pieces[1:]:
        pa, pb = out[-1]
        verb = tokens[a]
        if verb in lexicon.actions and verb in tokens[pa:pb] and _asks(tokens[a:b], lexicon) \
                and not any(_names_device(t, lexicon.devices) for t in tokens[a:b]):
            out[-1] = (pa, b)
        else:
            out.append((a, b))
    return out


def _verb_and_device(token: str, lexicon: SplitLexicon) -> bool:
    """A one-character verb jieba kept with its device as one word (关灯, 开窗)."""
    return len(token) > 1 and token[0] in lexicon.actions and _names_device(token[1:], lexicon.devices)


#: a verb right after one of these is said of what is not done (腿伸不开, 空调没开): no request of its own
NEGATIONS = frozenset({"不", "没"})


def _acts(tokens: tuple[str, ...], a: int, b: int, lexicon: SplitLexicon) -> bool:
    """Does the piece tokens[a:b] hold an action verb that no negation comes right before, as a token or inside
    its text (关灯, 窗帘合上)?"""
    if any((tokens[k] in lexicon.actions or _verb_and_device(tokens[k], lexicon))
           and (k == a or tokens[k - 1] not in NEGATIONS) for k in range(a, b)):
        return True
    said = lexicon.said_actions
    text = "".join(tokens[a:b])
    return said is not None and any(m.start() == 0 or text[m.start() - 1] not in NEGATIONS
                                    for m in said.finditer(text))


def _asks(tokens: tuple[str, ...], lexicon: SplitLexicon) -> bool:
    """Does the piece hold a question word, also inside a longer token (几号, 多少度)?"""
    text = "".join(tokens)
    return any(word in text for word in lexicon.questions)


def _connector_after(tokens: tuple[str, ...], end: int, lexicon: SplitLexicon) -> bool:
    """Is the first word after ``end`` that is no pause a sequence connector (明天几号，顺便…)?"""
    for token in tokens[end:]:
        if token not in lexicon.pauses:
            return token in lexicon.connectors
    return False


def is_one_request(tokens: tuple[str, ...], lexicon: SplitLexicon) -> bool:
    """Is the query a dependent chain (a dependency marker) or an automation (a trigger, or 时 glued to a
    token), which is never split? Set tests and a C-level map rather than a test per token in Python."""
    return (not lexicon.dependency.isdisjoint(tokens) or not lexicon.triggers.isdisjoint(tokens)
            or any(map(str.endswith, tokens, repeat(lexicon.trigger_suffixes))))


def _names_device(token: str, devices: frozenset) -> bool:
    """A device or seat, said alone or at the end of a word jieba keeps whole (客厅灯, 后备箱)."""
    if token in devices:
        return True
    n = len(token)
    return (n > 1 and token[-1] in devices) or (n > 2 and token[-2:] in devices) or (n > 3 and token[-3:] in devices)


def command_runs(tokens: tuple[str, ...], start: int, end: int, lexicon: SplitLexicon) -> list[tuple[int, int]]:
    """The commands of an unpunctuated run ``tokens[start:end]`` (后视镜折叠车门锁上, 主驾调到22度副驾调到25度,
    打开空调关闭车窗): as people say them to a car, with no pause written. A cut goes before a device, a
    seat or a control verb of two characters or more when what comes before it since the last cut is a
    whole device control (a device or seat and a control verb) and so is everything after it; never after
    a joiner (和, 把, 的: 客厅的灯和卧室的灯关掉 is one command), never between two nouns of one phrase
    (关闭主驾车窗), and never before a part that names no device (打开座椅加热调到三档 stays whole)."""
    controls, span = lexicon.controls, tokens[start:end]
    found = controls.intersection(span)  # most queries: one control verb at most (set operations in C)
    if not found or (len(found) == 1 and span.count(next(iter(found))) < 2) or not lexicon.questions.isdisjoint(span):
        return [(start, end)]
    is_control = [t in controls for t in span]
    devices = lexicon.devices
    is_device = [_names_device(t, devices) for t in tokens[start:end]]
    if sum(is_device) < 2:
        return [(start, end)]
    n = end - start
    # suffix sums: does tokens[k:end] hold a device and a control verb?
    device_after, control_after = [False] * (n + 1), [False] * (n + 1)
    for k in range(n - 1, -1, -1):
        device_after[k] = device_after[k + 1] or is_device[k]
        control_after[k] = control_after[k + 1] or is_control[k]
    cuts, last, seen_device, seen_control = [], 0, False, False
    for k in range(n):
        token = tokens[start + k]
        candidate = is_device[k] or (is_control[k] and len(token) >= 2)
        if (candidate and k > last and seen_device and seen_control and device_after[k] and control_after[k]
                and tokens[start + k - 1] not in lexicon.joiners and not (is_device[k] and is_device[k - 1])):
            cuts.append(k)
            last, seen_device, seen_control = k, False, False
        seen_device = seen_device or is_device[k]
        seen_control = seen_control or is_control[k]
    bounds = [0, *cuts, n]
    return [(start + a, start + b) for a, b in zip(bounds, bounds[1:])]

