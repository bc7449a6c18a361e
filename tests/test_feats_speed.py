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
