"""The one reading of a text that every span repair, scope and rewrite rule works from."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastslow.features.automation_lexicons import AutomationLexicons
from fastslow.models.automation.rules.markup import lowered


def signal_text(text: str, lex: AutomationLexicons) -> str:
    """``lowered(text)`` with every seat, direction and signal-looking device name (``lex.signal_devices``) blanked
    out (``\\x00``): the 后 of 后排 / 左后, 往后 / 向前 and 后视镜 is part of a name or a direction, never a trigger
    (后 / 前 are triggers in triggers.txt). The positions of the text are kept."""
    return names_blanked(lowered(text), lex)


def names_blanked(low: str, lex: AutomationLexicons) -> str:
    """``signal_text`` of a text whose lower case is ``low``; a text naming none of those names
    (``lex.signal_names``) is its lower case."""
    if lex.signal_names is None or lex.signal_names.search(low) is None:
        return low
    hits = lex.positions.find(low)
    if lex.directions is not None:
        hits += lex.directions.find(low)
    hits += [h for h in lex.device_kinds.find(low) if h[2] in lex.signal_devices]
    chars = list(low)
    for a, b, *_ in hits:
        chars[a:b] = "\x00" * (b - a)
    return "".join(chars)


class WordMatches(dict):
    """The matches of every automation word class in one lower-cased text, by the class's name in
    ``AutomationLexicons`` (``matches["events"]``: ``Matcher.find``'s (start, end, term, category) tuples),
    each found the first time a rule asks for it."""

    def __init__(self, low: str, lex: AutomationLexicons):
        super().__init__()
        self.low, self.lex = low, lex

    def __missing__(self, name: str) -> tuple[tuple[int, int, str, str], ...]:
        found = self[name] = tuple(getattr(self.lex, name).find(self.low))
        return found


@dataclass(slots=True)
class TextAnalysis:
    """A text as the rules read it: its lower case (``lowered``), its signal text (``masked``: ``signal_text``,
    names blanked out), whether it can hold a condition (``signalled``) and the matches of every automation word
    class in the lower case (``found``, each class found the first time a rule asks for it). Made once per text
    and only read after (a plain class with slots: made for every query, it costs less than a frozen one).

    ``signalled`` is ``lex.signal`` outside seat, direction and device names: 副驾座椅往后调一点, 左后车窗打开一半
    and 后排座椅加热调到最高 hold no condition signal; 后排有人的时候 does (的时候). Blanking names out can only take
    a signal away, so a text in which nothing was blanked keeps the signal it has."""

    text: str
    lex: AutomationLexicons
    low: str = field(init=False)
    masked: str = field(init=False)
    signalled: bool = field(init=False)
    found: WordMatches = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.low = low = lowered(self.text)
        self.masked = masked = names_blanked(low, self.lex)
        signal = self.lex.signal
        self.signalled = signal(low) and (masked == low or signal(masked))
        self.found = WordMatches(low, self.lex)


def analyse(text: str, lex: AutomationLexicons) -> TextAnalysis:
    """The ``TextAnalysis`` of ``text`` with the word classes of ``lex``."""
    return TextAnalysis(text, lex)
