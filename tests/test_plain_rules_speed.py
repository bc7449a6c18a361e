"""The plain path's rules (models/automation/rules.py: plain_groups, rewrite_group, the signal) held to their
definitions written the slow way, on every bundled text and the pieces between its punctuation, and on random
runs of commands. No model is trained: the rules need only the word classes.
"""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from conftest import ALL_FILES, bundled_queries
from fastslow.features import memo
from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.features.split import join_actionless, pieces_between
from fastslow.models.automation import rules
from fastslow.models.automation.parser import surface_of

LEX = load_automation_lexicons()
TEXTS = sorted({surface_of(q, LEX) for q in bundled_queries(ALL_FILES)})
#: every text and the pieces between its punctuation
PIECES = sorted({*TEXTS, *(p for t in TEXTS for p in re.split(r"[，,。；;！!？?]", t))})
_WORDS = sorted({*list(LEX.action_verbs.category)[::4], *list(LEX.device_kinds.category)[::3], *LEX.breaks.category,
                 *LEX.positions.category, "，", "吧", "帮我", "一下", "和", "把", "İ", "Σ"})
_RUNS = st.lists(st.sampled_from(_WORDS), max_size=7).map("".join)


def test_the_texts_are_many():
    assert len(TEXTS) > 12000 and len(PIECES) > 15000


# ---- plain_groups: the split of a query without a signal

def _plain_groups_reference(text, lex):
    low = rules.lowered(text)
    cuts = [(start, end) for start, end, kind in rules.plain_breaks(text, lex)
            if kind != "joiner" or lex.action_verbs.prefix(low[end:]) or low.startswith("把", end)]
    bounds = pieces_between(len(text), cuts)
    merged = join_actionless(
        bounds, [rules.has_verb(text[a:b], lex) or rules.is_bare_device(text[a:b], lex) for a, b in bounds])
    pieces = []
    for a, b in merged:
        cuts = rules.command_cuts(text[a:b], lex)
        pieces += [(a + c, a + d) for c, d in zip([0] + cuts, cuts + [b - a])]
    subs = [rules.add_missing_verb(s, lex) for s in (rules.clean_subquery(text[a:b], lex) for a, b in pieces) if s]
    return [rules.Group(None, subs, [""] * len(subs), [None] * len(subs))] if subs else []


def test_plain_groups_answer_as_their_definition_on_every_bundled_text_and_piece():
    memo.clear_memos()
    assert [rules.plain_groups(t, LEX) for t in PIECES] == [_plain_groups_reference(t, LEX) for t in PIECES]


@settings(max_examples=400, deadline=None)
@given(_RUNS)
def test_plain_groups_answer_as_their_definition_on_random_runs(text):
    assert rules.plain_groups(text, LEX) == _plain_groups_reference(text, LEX)


# ---- the signal: a numeral and a time mark before the time/number shapes

def test_every_time_shape_holds_a_numeral_and_a_time_mark():
    from fastslow.features.automation_lexicons import _NUMERAL, _TIME_MARK, _TIME_NUMBER_RE

    lows = [rules.lowered(t) for t in PIECES]
    shapes = [m.group() for t in lows for m in _TIME_NUMBER_RE.finditer(t)]
    assert len(shapes) > 1000 and all(_NUMERAL.search(s) and _TIME_MARK.search(s) for s in shapes)
    assert [LEX.signal(t) for t in lows] == [LEX.signal.pattern.search(t) is not None for t in lows]
    assert any(_NUMERAL.search(t) and not _TIME_MARK.search(t) for t in lows)  # the new exit is taken


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(["0", "12", "٣", "%", "百分之", "百", "一", "两", "三十", "几", "点", "点钟", "半", "个", "分钟", "分",
                                  "小时", "钟头", "秒", "号", "度", ":", "：", " ", "\t", "档", "打开", "a"]), max_size=6).map("".join))
def test_the_signal_answers_as_its_pattern_on_random_numbers_and_units(text):
    assert LEX.signal(text) == (LEX.signal.pattern.search(text) is not None)
