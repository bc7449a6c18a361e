"""The one reading of a text that every span repair, scope and rewrite rule works from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from fastslow.features.automation_lexicons import MATCHER_FILES, AutomationLexicons
from fastslow.models.automation.rules.markup import lowered
from fastslow.models.automation.rules.signals import signal_text


@dataclass(frozen=True)
class TextAnalysis:
    """A text as the rules read it: its lower case (``lowered``), its signal text (``signal_text``: names
    blanked out) and the matches of every automation word class in the lower case, with their positions
    (``found["events"]``: ``Matcher.find``'s (start, end, term, category) tuples)."""

    text: str
    lex: AutomationLexicons
    low: str
    masked: str
    found: Mapping[str, tuple[tuple[int, int, str, str], ...]]


def analyse(text: str, lex: AutomationLexicons) -> TextAnalysis:
    """The ``TextAnalysis`` of ``text`` with the word classes of ``lex``."""
    low = lowered(text)
    found = {name: tuple(matcher.find(low)) for name in MATCHER_FILES
             if (matcher := getattr(lex, name)) is not None}
    return TextAnalysis(text, lex, low, signal_text(text, lex), found)
