"""The span repairs' fast paths (models/automation/rules.py, the rules ``repair_spans`` runs on tagged texts) held
to their definitions on every bundled automation text, the pieces of each, and the hand-marked spans.

Each shortcut says "nothing to do here" before the rule asks its questions: where it says so, the rule's definition
(or the matcher the shortcut stands for) must find nothing to do either, and it must say so often, or it saves nothing."""

from __future__ import annotations

import re

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation import rules
from fastslow.models.automation.parser import surface_of

from conftest import AUTOMATION_FILES, bundled_rows

LEX = load_automation_lexicons()
ROWS = bundled_rows(AUTOMATION_FILES + ("data/automation/train/generated.jsonl", "data/dev/routing_dev.jsonl"))
TEXTS = sorted({t for t in (surface_of(r.get("query") or r.get("text") or "") for r in ROWS) if t})
#: the examples the rules' docstrings give
EXAMPLES = ("打开加湿器。导航去公司", "上班的路上播放早间新闻", "提醒我充电对了今天天气怎么样", "仪表上亮灯并且提醒我",
            "关闭所有的灯把这个存成智能场景")
#: every text, the pieces between its punctuation, the action and condition spans of the hand markups, the examples
PIECES = sorted({*TEXTS, *EXAMPLES, *(p for t in TEXTS for p in re.split(r"[，,。；;！!？?]", t) if p),
                 *(sp.text for r in ROWS if r.get("markup") for sp in rules.parse_markup(r["markup"])[1])})


def _whole(text: str) -> rules.Span:
    return rules.Span("A", 0, len(text), text)


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


def test_a_time_point_starts_only_with_a_digit_or_one_of_its_first_characters():
    firsts = rules._time_point_firsts(LEX)
    for code in range(0x10000):  # every character a clock time can start with (hour first, then 点 and minutes)
        ch = chr(code)
        if rules.SPOKEN_CLOCK.match(ch + "点半"):
            assert ch.isdecimal() or ch in firsts, ch
    skipped = 0
    for text in PIECES:  # where the shortcut answers 0, the loop would have stopped at its first character
        low = rules.lowered(text)
        if not low[:1].isdecimal() and low[:1] not in firsts:
            skipped += 1
            assert rules.SPOKEN_CLOCK.match(low) is None, text
            assert LEX.time_words.category.get(LEX.time_words.prefix(low)) not in ("day", "week", "period"), text
            assert rules.time_prefix(low, LEX) == 0
    assert skipped > len(PIECES) // 2


def test_a_condition_at_the_start_takes_no_word_from_before_it():
    """``whole_words_at_edges`` returns spans whose only condition starts the text as they are: run with a pause
    before the text (no word holds it), the rule keeps them as they are as well."""
    seen = 0
    for row in ROWS:
        if not row.get("markup"):
            continue
        text, spans = rules.parse_markup(row["markup"])
        conditions = [sp for sp in spans if sp.kind == "C"]
        if not conditions or conditions[0].start != 0 or len(conditions) > 1:
            continue
        seen += 1
        assert rules.whole_words_at_edges(text, spans, LEX) == spans
        moved = [rules.Span(sp.kind, sp.start + 1, sp.end + 1, sp.text, sp.intent) for sp in spans]
        assert rules.whole_words_at_edges("，" + text, moved, LEX) == moved, text
    assert seen > 1000


def test_the_inner_suffix_ends_are_the_triggers_before_the_end_from_the_memo_too():
    found = 0
    for text in PIECES:
        expected = tuple(e for _, e, _, cat in LEX.triggers.find(rules.lowered(text)) if cat == "suffix" and e < len(text))
        assert rules.inner_suffix_ends.__wrapped__(text, LEX) == expected, text
        assert rules.inner_suffix_ends(text, LEX) == expected == rules.inner_suffix_ends(text, LEX), text
        found += bool(expected)
    assert found > 300
