"""Fast paths of the normaliser and the automation parser's per-text work held to their definitions:
each one is speed, never a change of output."""

import importlib
import json
import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

normalise = importlib.import_module("fastslow.features.normalise")

ROOT = Path(__file__).resolve().parents[1]
TEXT_FILES = ("data/dev/routing_dev.jsonl", "data/fixtures/routing_v1.jsonl", "data/train/core.jsonl",
              "data/automation/dev/automation_dev.jsonl", "data/fixtures/automation_v1.jsonl",
              "data/automation/train/core.jsonl")


def bundled_queries() -> list[str]:
    return sorted({json.loads(line)["query"] for path in TEXT_FILES
                   for line in (ROOT / path).read_text(encoding="utf-8").splitlines() if line.strip()})


# ---- normalise: the early returns of without_final_stop and chinese_punctuation

def _forms(text):
    """The strings the normaliser's functions are given: the raw text, its clean and surface forms."""
    cleaned = normalise.clean(text)
    return text, cleaned, cleaned.lower(), normalise.surface(text), text + " ", text + "。"


def _check_normalise(text):
    for form in _forms(text):
        assert normalise.without_final_stop(form) == normalise._TRAILING.sub("", form)
        assert normalise.chinese_punctuation(form) == normalise._HALF_PUNCT.sub(
            lambda m: normalise._FULL[m.group()], form)


def test_the_normalisers_early_returns_change_no_bundled_query():
    for query in bundled_queries():
        _check_normalise(query)


def test_the_early_returns_agree_with_the_patterns_for_every_character():
    """``\\s`` of the final-stop pattern is ``str.isspace`` (the early return looks at the last character
    alone), and the five characters chinese_punctuation tests for are every one its pattern changes."""
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        text = "空调" + ch
        assert normalise.without_final_stop(text) == normalise._TRAILING.sub("", text), hex(code)
        assert normalise.chinese_punctuation(text) == normalise._HALF_PUNCT.sub(
            lambda m: normalise._FULL[m.group()], text), hex(code)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="空调a1 ,;:?!，。.！~…\u3000\t\n", max_size=16))
def test_the_normalisers_early_returns_change_no_generated_text(text):
    _check_normalise(text)


# ---- spoken: the parser's strip of the surface read off the segmenter's strip (surface_strip)

from fastslow.features import spoken  # noqa: E402

_SPOKEN = spoken.spoken_lexicon()
_MARKS = set(",;:?!，；：？！")


def _check_surface_strip(query):
    normalised = normalise.normalise(query)
    stripped = spoken.strip_disfluencies(normalised)
    for surface in (normalise.surface(query), normalise.chinese_punctuation(normalised), normalised):
        carried = spoken.surface_strip(normalised, stripped, surface)
        assert carried is None or carried == spoken.strip_disfluencies(surface), (query, surface)


def test_the_stripper_s_word_lists_hold_no_mark_and_change_only_chinese_characters():
    """What surface_strip rests on: no term of a list holds a mark chinese_punctuation changes, or upper
    case; a correction and a stutter put Chinese characters for Chinese characters."""
    lists = (_SPOKEN.stripped_wake_words, _SPOKEN.hesitations, _SPOKEN.demonstrative_fillers, _SPOKEN.tails,
             _SPOKEN.pause_tails, _SPOKEN.command_starts, _SPOKEN.greetings)
    for term in (t for terms in lists for t in terms):
        assert _MARKS.isdisjoint(term) and term == term.lower(), term
    cjk = spoken._CJK
    for wrong, word in _SPOKEN.corrections:
        assert wrong and word and all(cjk.match(c) for c in wrong + word), (wrong, word)
    assert all(cjk.match(c) for c in _SPOKEN.stutter_chars)


def test_surface_strip_is_the_strip_of_the_surface_on_every_bundled_query_and_its_spoken_variants():
    queries = bundled_queries()
    carried = 0
    for query in queries:
        for text in (query, *(v for _, v in spoken.spoken_variants(query, seed=1))):
            _check_surface_strip(text)
        normalised = normalise.normalise(query)
        carried += spoken.surface_strip(normalised, spoken.strip_disfluencies(normalised),
                                        normalise.surface(query)) is not None
    assert carried > len(queries) * 0.9  # nearly every query is carried over now, not half of them


_EDGES = sorted({*_SPOKEN.wake_words, *_SPOKEN.hesitations, *_SPOKEN.demonstrative_fillers, *_SPOKEN.tails,
                 *_SPOKEN.pause_tails, *_SPOKEN.greetings, *_SPOKEN.command_starts[:30],
                 *(w for w, _ in _SPOKEN.corrections), "小途", "空调", "打开", "好吗", "Ok", "a"})
_PIECES = st.one_of(st.sampled_from(_EDGES), st.sampled_from(sorted(_MARKS) + [" ", "。", "A", "1"]))


@settings(max_examples=1500, deadline=None)
@given(st.lists(_PIECES, max_size=8).map("".join))
def test_surface_strip_is_the_strip_of_the_surface_on_generated_text(query):
    _check_surface_strip(query)
