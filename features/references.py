"""What a query refers to, and whether it has one candidate or several (XA4.1 真实消歧 vs 非标准称呼).

Two extractors over the lexicon files (each editable, see lexicons/README.md):

* ``EntityReferences``: crossed indicators a linear model cannot build from counts alone —
  a chain or plaza with or without a selector (去星巴克 vs 去最近的星巴克), a city with several airports
  or stations named only by its hub word (送我去上海的机场 vs 导航去虹桥机场), a description that maps to
  one device (车外那个能折起来的镜子 → 后视镜), and a demonstrative with nothing to resolve it
  (把那个关了, 那个灯开一下, with no earlier turn) as against one followed by a device (那个空调).
* ``BuiltinFunctions``: hit counts of built-in vehicle functions by class (adas, lighting, lock, ...).

Hesitations (那个，打开空调) are removed before segmentation (``features.spoken``), so a 那个 left in
the utterance is a determiner or a pronoun.
"""

from __future__ import annotations

import numpy as np

from fastslow.features.extractors import IndicatorFeatures, LexiconFeatures
from fastslow.features.lexicon import load_lexicon


class BuiltinFunctions(LexiconFeatures):
    """Built-in vehicle functions by class (车道保持 adas, 自动落锁 lock, 超速告警 warning)."""

    def __init__(self, lexicon="builtin_functions"):
        super().__init__(lexicon)


class EntityReferences(IndicatorFeatures):
    """Multi-candidate entities, unique descriptions and unresolved demonstratives, as indicators."""

    NAMES = ("chain&no_selector", "chain&selector", "hub_city&generic_hub", "hub&named_or_selector",
             "described_device", "described_device&action", "described_device&no_device",
             "demonstrative&unresolved", "demonstrative&generic_target", "demonstrative&device",
             "demonstrative&context", "demonstrative&described")
    #: demonstrative categories of demonstratives.txt that can point at an object
    POINTING = ("this", "that", "plural")
    #: what may close a clause after a bare demonstrative (把那个关了 / 打开那个吧)
    CLOSERS = frozenset(("了", "吧", "呗", "啊", "呀", "一下", "掉", "下", "上", "，", ",", "吗"))

    def __init__(self, chains="chains", hubs="hubs", selectors="selectors", descriptions="device_descriptions",
                 generic_targets="generic_targets", demonstratives="demonstratives", devices="devices",
                 actions="actions"):
        self.chains = chains
        self.hubs = hubs
        self.selectors = selectors
        self.descriptions = descriptions
        self.generic_targets = generic_targets
        self.demonstratives = demonstratives
        self.devices = devices
        self.actions = actions

    def fit(self, X=None, y=None):
        self.chains_ = load_lexicon(self.chains)
        self.hubs_ = load_lexicon(self.hubs)
        self.selectors_ = load_lexicon(self.selectors)
        self.descriptions_ = load_lexicon(self.descriptions)
        self.generic_targets_ = load_lexicon(self.generic_targets)
        self.demonstratives_ = load_lexicon(self.demonstratives)
        self.devices_ = load_lexicon(self.devices)
        self.actions_ = load_lexicon(self.actions)
        hub = self.hubs_.categories
        self.hub_cols_ = {name: hub.index(name) if name in hub else -1
                          for name in ("multi_airport_city", "airport_generic", "multi_station_city",
                                       "station_generic", "hub_specific")}
        cats = self.demonstratives_.categories
        pointing = {i for i, c in enumerate(cats) if c in self.POINTING}
        self.pointing_ = frozenset(t for t, cols in self.demonstratives_.words.items() if pointing & set(cols))
        self.pointing_chars_ = frozenset(t for t, cols in self.demonstratives_.chars.items() if pointing & set(cols))
        self.pointing_firsts_ = frozenset(t[0] for t in self.pointing_ | self.pointing_chars_)
        self.targets_ = frozenset(self.generic_targets_.words) | frozenset(self.generic_targets_.chars)
        self.device_words_ = frozenset(self.devices_.words) | frozenset(self.devices_.chars)
        self.action_words_ = frozenset(self.actions_.words) | frozenset(self.actions_.chars)
        return self

    def get_feature_names_out(self, input_features=None):
        return np.array([f"ref:{n}" for n in self.NAMES], dtype=object)

    def demonstrative(self, tokens) -> str | None:
        """``described``, ``unresolved``, ``generic_target``, ``device`` or ``other`` for the first
        pointing demonstrative of ``tokens``; None when there is none.

        ``described``: a 的-clause next to it says which thing is meant (往玻璃上投字的那个关掉,
        那个会自己扫地的机器开一下): a description, not a pointer with nothing to resolve it."""
        for i, token in enumerate(tokens):
            single = token in self.pointing_chars_
            if token not in self.pointing_ and not single:
                continue
            following = tokens[i + 1] if i + 1 < len(tokens) else None
            if (i and tokens[i - 1] == "的") or self._described_after(tokens, i + 1):
                return "described"
            if following is None or following in self.CLOSERS:
                return "unresolved"
            if following in self.targets_ or (following[0] in self.targets_ and following not in self.device_words_):
                return "generic_target"
            if following in self.device_words_:
                return "device"
            if not single and following in self.action_words_:
                return "unresolved"  # 那个关一下: the demonstrative is the object
            return "other"
        return None

    #: a clause ends at a pause; a description after the demonstrative must come before it
    PAUSES = frozenset("，,、；;。？?！!")

    def _described_after(self, tokens, start: int) -> bool:
        """A 的 between ``start`` and the end of the clause, after at least one word of description
        (那个能看到四周的画面, not 那个的)."""
        for j in range(start, len(tokens)):
            token = tokens[j]
            if token in self.PAUSES:
                return False
            if token == "的":
                return j > start
        return False

    def columns(self, u) -> list[int]:  # unchecked: checking fitted state costs more than the row
        """The indicators ``u`` has (each worth 1.0), in the order of ``NAMES``."""
        out: list[int] = []
        chains, hubs = self.chains_.hits(u), self.hubs_.hits(u)
        selector = bool((chains or hubs) and self.selectors_.hits(u))  # only a chain or a hub asks for one
        if chains:
            out.append(0 if not selector else 1)
        if hubs:
            col = self.hub_cols_
            named = col["hub_specific"] in hubs
            several = ((col["multi_airport_city"] in hubs and col["airport_generic"] in hubs)
                       or (col["multi_station_city"] in hubs and col["station_generic"] in hubs))
            if several and not named and not selector:
                out.append(2)
            elif named or selector:
                out.append(3)
        if self.descriptions_.hits(u):
            out.append(4)
            if self.actions_.hits(u):
                out.append(5)
            if not self.devices_.hits(u):
                out.append(6)
        kind = None if self.pointing_firsts_.isdisjoint(u.text) else self.demonstrative(u.tokens)
        if kind == "described":
            out.append(11)
        elif kind is not None and kind != "other":
            out.append(10 if u.context != "none" else {"unresolved": 7, "generic_target": 8, "device": 9}[kind])
        return out
