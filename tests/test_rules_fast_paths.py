"""The automation rules' fast paths (models/automation/rules.py) held to their definitions.

Each shortcut of the rule passes answers as the slower definition it stands for: on every bundled automation
text (dev, fixtures, the routing dev set and the automation training corpora), on the pieces of each, and on
random texts. No model is trained here: the rules need only the word classes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings, strategies as st

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation import rules
from fastslow.models.automation.parser import surface_of

ROOT = Path(__file__).resolve().parents[1]
LEX = load_automation_lexicons()
_FILES = ("data/automation/dev/automation_dev.jsonl", "data/fixtures/automation_v1.jsonl", "data/dev/routing_dev.jsonl",
          "data/automation/train/core.jsonl", "data/automation/train/generated.jsonl")


def _texts() -> list[str]:
    rows = [json.loads(line) for path in _FILES for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return sorted({t for t in (surface_of(r.get("query") or r.get("text") or "") for r in rows) if t})


TEXTS = _texts()
#: every text and the pieces between its punctuation, and the prefixes and suffixes of the short ones
PIECES = sorted({*TEXTS, *(p for t in TEXTS for p in re.split(r"[，,。；;！!？?]", t) if p),
                 *(t[k:] for t in TEXTS[:400] for k in range(1, len(t))), *(t[:k] for t in TEXTS[:400] for k in range(1, len(t)))})
_WORDS = sorted({*list(LEX.builtin_functions.category)[::7], *list(LEX.device_kinds.category)[::3],
                 *LEX.action_verbs.category, *LEX.triggers.category, *LEX.breaks.category, "点", "半", "十", "后", "把"})
_RANDOM = st.lists(st.sampled_from(_WORDS), max_size=6).map("".join)


def test_the_texts_are_many():
    assert len(TEXTS) > 3000 and len(PIECES) > 10000


# ---- builtin_functions found with one automaton pass

def test_function_words_are_the_matchers_finds_on_every_text_and_piece():
    matcher = LEX.builtin_functions
    found_somewhere = 0
    for text in PIECES:
        low = rules.lowered(text)
        assert rules.function_words(low, LEX) == matcher.find(low), text
        assert rules.function_prefix(low, LEX) == matcher.prefix(low), text
        found_somewhere += bool(matcher.find(low))
    assert found_somewhere > 500


@settings(max_examples=500, deadline=None)
@given(_RANDOM)
def test_function_words_are_the_matchers_finds_on_random_texts(text):
    assert rules.function_words(text, LEX) == LEX.builtin_functions.find(text)
    assert rules.function_prefix(text, LEX) == LEX.builtin_functions.prefix(text)


# ---- tags_to_spans

def _tags_to_spans_reference(text, tags):
    spans, kind, start = [], None, 0
    for i, tag in enumerate(list(tags)[: len(text)] + ["O"]):
        prefix, _, k = tag.partition("-")
        if kind is not None and (prefix != "I" or k != kind):
            spans.append(rules.Span(kind, start, i, text[start:i]))
            kind = None
        if prefix in ("B", "I") and kind is None and k in rules.SPAN_KINDS:
            kind, start = k, i
    return spans


_TAGS = st.sampled_from(["O", "B-C", "I-C", "B-A", "I-A", "B-D", "I-D", "I-N", "B-E", "B-X", "I-X", "I", "B-", "-C"])


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="打开空调时", max_size=12), st.lists(_TAGS, max_size=14))
def test_tags_to_spans_decodes_as_its_definition(text, tags):
    assert rules.tags_to_spans(text, tags) == _tags_to_spans_reference(text, tags)


# ---- command_cuts: the cut-point search

def _points(text):
    low = rules.lowered(text)
    verbs = {a for a, b, _, cat in LEX.action_verbs.find(low) if b - a >= 2 and cat in rules._COMMAND_START_KINDS}
    names = {a for a, *_ in LEX.positions.find(low)} | {a for a, *_ in LEX.device_kinds.find(low)}
    breaks = {a for a, _, kind in rules.plain_breaks(low, LEX) if kind == "break"}
    return sorted(p for p in verbs | names | breaks if 3 <= p <= len(text) - 3)


def test_a_text_whose_cut_point_words_begin_nowhere_in_reach_has_no_cut_point():
    """command_cuts answers [] when none of its point words begins at 3 .. len-3: then no point is there."""
    skipped = 0
    for text in PIECES:
        if len(text) < 6:
            continue
        low = rules.lowered(text)
        words = rules._cut_point_words(LEX)
        in_reach = (m := words.search(low, 3)) is not None and m.start() <= len(text) - 3
        if not in_reach:
            assert _points(text) == [], text
            skipped += 1
    assert skipped > 1000


# ---- _is_plain_command and the tests that stand before it

def _is_plain_command_reference(text):
    text = rules.strip_fillers(text, LEX)
    if len(text) < 3:
        return False
    masked = rules.signal_text(text, LEX)
    if any(cat != "prefix" or b - a >= 2 for a, b, _, cat in LEX.triggers.find(masked)):
        return False
    low = rules.lowered(text)
    head = LEX.action_verbs.prefix(low)
    if head and len(head) >= 2 and len(low) > len(head):
        return not rules.has_time_expression(low[:len(head)], LEX)
    if rules.has_time_expression(text, LEX):
        return False
    return bool((rules.devices_in(text, LEX) or low.startswith("把")) and rules.has_verb(text, LEX))


def test_is_plain_command_answers_as_its_definition_on_every_text_and_piece():
    plain = 0
    for text in PIECES:
        expected = _is_plain_command_reference(text)
        assert rules._is_plain_command.__wrapped__(text, LEX) == expected, text
        plain += expected
    assert plain > 1000


def test_no_piece_of_a_text_without_a_verb_reminder_or_memo_word_is_a_plain_command():
    """split_run_on looks for a command inside a condition span only when may_hold_command says it can be there."""
    checked = 0
    for text in TEXTS:
        if len(text) > 24 or rules.may_hold_command(text, LEX):
            continue
        checked += 1
        for a in range(len(text)):
            for b in range(a + 3, len(text) + 1):
                assert not rules._is_plain_command.__wrapped__(text[a:b], LEX), text[a:b]
    assert checked > 200
    assert rules.may_hold_command("ΣΑΣ", LEX)  # a text whose lower case depends on context: never ruled out


@settings(max_examples=500, deadline=None)
@given(_RANDOM)
def test_may_hold_command_never_rules_out_a_plain_command(text):
    if not rules.may_hold_command(text, LEX):
        assert not any(rules._is_plain_command.__wrapped__(text[a:b], LEX)
                       for a in range(len(text)) for b in range(a + 3, len(text) + 1))


# ---- the condition said inside an action span

def _condition_said_first_reference(action):
    low = rules.lowered(action)
    if LEX.reminder_verbs.prefix(low) or LEX.memo.search(low) or rules.is_super_task_mention(action, LEX):
        return 0
    for a, b, _, cat in LEX.triggers.find(low):
        if cat == "suffix" and b - a >= 2 and 0 < a and b < len(low) and rules._is_plain_command(action[b:], LEX) \
                and not LEX.action_verbs.prefix(low):
            return b
    return 0


def _condition_inside_action_reference(action):
    low = rules.lowered(rules.signal_text(action, LEX))
    for _, e, term, cat in LEX.triggers.find(low):
        if cat != "suffix" or e >= len(action) or len(term) < 2 and term != "时":
            continue
        before, rest = action[:e], action[e:]
        if rules._is_plain_command(before, LEX) or LEX.action_verbs.prefix(rules.lowered(before)) \
                or LEX.reminder_verbs.search(rules.lowered(before)):
            return None
        if rules._is_plain_command(rest, LEX) or rules.builtin_function_action(rest, LEX) \
                or LEX.reminder_verbs.prefix(rules.lowered(rest)):
            return e
    return None


def test_the_condition_inside_an_action_is_found_as_its_definition_finds_it():
    said_first = inside = 0
    for text in PIECES:
        expected = _condition_said_first_reference(text)
        assert rules._condition_said_first(text, LEX) == expected, text
        said_first += expected > 0
        expected = _condition_inside_action_reference(text)
        assert rules.condition_inside_action(text, LEX) == expected, text
        inside += expected is not None
    assert said_first > 20 and inside > 20


# ---- is_builtin: the built-in behaviours looked at only when one of their condition words is said

def _is_builtin_reference(condition, actions):
    if not condition or condition == rules.DEFAULT or not actions:
        return False
    cond = rules.lowered(condition)
    if any(word in cond for word in LEX.triggers.terms("and", "or")):
        return False
    for b in LEX.builtins:
        if any(w in cond for w in b.condition_words) and all(rules._builtin_action(a, b) for a in actions):
            return True
    return rules.builtin_by_class(cond, actions, LEX)


def test_is_builtin_answers_as_its_definition_on_the_bundled_conditions_and_actions():
    pairs = [(c, [a]) for text in TEXTS for c, a in [(text[:k], text[k:]) for k in range(2, len(text) - 1, 2)]]
    pairs += [("车辆超速时", ["提醒我"]), ("倒车时", ["后视镜自动下翻"]), ("走远时", ["车门上锁"])]
    builtin = 0
    for condition, actions in pairs:
        expected = _is_builtin_reference(condition, actions)
        assert rules.is_builtin(condition, actions, LEX) == expected, (condition, actions)
        builtin += expected
    assert builtin > 3


# ---- the whole passes: repairs and plans of hand-made spans, plain groups

def test_plain_groups_of_one_piece_are_the_groups_of_its_joined_piece():
    """plain_groups skips the action test of a query no connector cuts (join_actionless keeps one piece as it is)."""
    from fastslow.features.split import join_actionless

    for flag in (True, False):
        assert join_actionless([(0, 7)], [flag]) == [(0, 7)]
    assert [g.subqueries for g in rules.plain_groups("太暗了", LEX)] == [["太暗了"]]
    assert [g.subqueries for g in rules.plain_groups("打开空调然后播放音乐", LEX)] == [["打开空调", "播放音乐"]]


# ---- the premise of every "one search first" exit: a class holds no word of a text exactly when it finds none

def test_every_word_class_searches_in_vain_exactly_where_it_finds_nothing():
    matchers = {name: m for name, m in vars(LEX).items() if hasattr(m, "find") and hasattr(m, "search")}
    assert len(matchers) >= 16
    for text in PIECES[::3]:
        low = rules.lowered(text)
        for name, matcher in matchers.items():
            assert (matcher.search(low) is None) == (not matcher.find(low)), (name, text)
