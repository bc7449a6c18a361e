"""The span markup of the automation tagger and of the annotations (``[C:上车时][A:打开空调]``).

The span tagger (``models/automation/parser.py``) marks, character by character, five kinds of span:

====  ==========================================================================================
C     condition: trigger events, time points/periods, delays, compounds with 且 / 或 / 就
A     action (one subquery each)
D     duration of the action (十分钟 in 座椅加热十分钟): becomes ``持续+时间``
N     "执行一次" and its kin: becomes ``执行一次+condition``
E     end of a condition's scope (另外, 现在, 马上): the actions after it are unconditional
====  ==========================================================================================
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

from fastslow.features.normalise import chinese_punctuation, surface, without_final_stop, without_spaces_near_chinese

SPAN_KINDS = ("C", "A", "D", "N", "E")

#: punctuation and spaces trimmed off the edges of spans, subqueries and gaps
EDGE_PUNCT = " \t,，、;；:：。.!！?？~～…\"'“”‘’()（）[]【】"

#: the one character whose ``str.lower`` is two characters (i and a combining dot; a test holds it)
EXPANDS_WHEN_LOWERED = "\u0130"


@dataclass(frozen=True)
class Span:
    """A tagged stretch ``text[start:end]`` of one kind (see the module doc)."""

    kind: str
    start: int
    end: int
    text: str
    intent: str | None = None  # only in hand annotations (``[A/导航:去公司]``)


def automation_text(query) -> str:
    """The text the parser reads and quotes from: ``features.normalise.surface`` (the one normaliser, letter
    case and Chinese punctuation kept, so ``HyperTask`` is quoted as written)."""
    return surface(query)


def lowered(text: str) -> str:
    """Lower case for lexicon matching, keeping every character's position: İ (``EXPANDS_WHEN_LOWERED``),
    whose lower case is two characters, stays as it is."""
    if EXPANDS_WHEN_LOWERED not in text:
        return text.lower()
    return "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)


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


#: the tags that start a span (``B-C``, ``I-C`` …) and its kind
_OPENING_TAGS = {f"{prefix}-{kind}": kind for prefix in "BI" for kind in SPAN_KINDS}


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
