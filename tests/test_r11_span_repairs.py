"""The span repairs' fast paths (models/automation/rules.py, the rules ``repair_spans`` runs on tagged texts) held
to their definitions on every bundled automation text, the pieces of each, and the hand-marked spans.

Each shortcut is a test that says "nothing to do" before the rule asks its questions: where it answers so, the
rule's definition must leave the spans as they are (and it must answer so often, or it saves nothing)."""

from __future__ import annotations

import json
import re

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation import rules
from fastslow.models.automation.parser import surface_of

from conftest import ROOT

LEX = load_automation_lexicons()
_FILES = ("data/automation/dev/automation_dev.jsonl", "data/fixtures/automation_v1.jsonl", "data/dev/routing_dev.jsonl",
          "data/automation/train/core.jsonl", "data/automation/train/generated.jsonl")
ROWS = [json.loads(line) for path in _FILES for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
        if line.strip()]
TEXTS = sorted({t for t in (surface_of(r.get("query") or r.get("text") or "") for r in ROWS) if t})
#: the examples the rules' docstrings give
EXAMPLES = ("打开加湿器。导航去公司", "上班的路上播放早间新闻", "提醒我充电对了今天天气怎么样", "仪表上亮灯并且提醒我",
            "关闭所有的灯把这个存成智能场景")
#: every text, the pieces between its punctuation, the action and condition spans of the hand markups, the examples
PIECES = sorted({*TEXTS, *EXAMPLES, *(p for t in TEXTS for p in re.split(r"[，,。；;！!？?]", t) if p),
                 *(sp.text for r in ROWS if r.get("markup") for sp in rules.parse_markup(r["markup"])[1])})


def _whole(text: str, kind: str = "A") -> rules.Span:
    return rules.Span(kind, 0, len(text), text)


def test_the_texts_are_many():
    assert len(TEXTS) > 3000 and len(PIECES) > 7000


def test_an_action_span_without_any_cut_word_is_left_as_it_is():
    words = rules._action_cut_words(LEX)
    skipped = 0
    for text in PIECES:
        sp = _whole(text)
        if words.search(rules.lowered(text)) is None:
            skipped += 1
            assert rules.split_one_action(text, sp, LEX) == [sp], text
        assert rules.split_inside_action(text, [sp], LEX) == rules.split_one_action(text, sp, LEX), text
    assert skipped > len(PIECES) // 2


def test_a_suffix_trigger_at_the_end_is_found_as_the_triggers_find_it():
    ends = 0
    for text in PIECES:
        low = rules.lowered(text)
        said = any(e == len(low) and e - a >= 2 and cat == "suffix" for a, e, _, cat in LEX.triggers.find(low))
        assert rules._ends_in_suffix_trigger(low, LEX) == said, text
        ends += said
    assert ends > 500
