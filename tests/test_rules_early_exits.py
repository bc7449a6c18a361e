"""The rule passes' early exits (models/automation/rules.py) held to the slow paths they skip.

Each exit answers before a lexicon scan when the words that scan looks for cannot be in the text (an edge
character no filler begins or ends with, no memo word at all …). Here each rule is held to its definition
written without the exit, on every bundled text (data/automation, data/train, data/dev, data/fixtures), the
pieces between its punctuation, its edges, and random texts. No model is trained: the rules need only the
word classes.
"""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from conftest import ALL_FILES, bundled_queries
from fastslow.features import memo
from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation import rules
from fastslow.models.automation.parser import surface_of

LEX = load_automation_lexicons()


QUERIES = bundled_queries(ALL_FILES)
TEXTS = sorted({surface_of(q, LEX) for q in QUERIES} | {surface_of(q) for q in QUERIES})
#: every text, the pieces between its punctuation, and what is left after its first or before its last two characters
PIECES = sorted({*TEXTS, *(p for t in TEXTS for p in re.split(r"[，,。；;！!？?]", t)),
                 *(t[k:] for t in TEXTS for k in (1, 2)), *(t[:-k] for t in TEXTS for k in (1, 2))})
_FILLERS = sorted(LEX.fillers.category)
_WORDS = sorted({*_FILLERS, *list(LEX.memo.category), *list(LEX.device_kinds.category)[::5],
                 *list(LEX.action_verbs.category)[::3], "，", "。", "吧", "ΑΣ", "İ", "一下", "往后调"})
_RANDOM = st.lists(st.sampled_from(_WORDS), max_size=6).map("".join)


def test_the_texts_are_many_and_hold_every_edge():
    assert len(QUERIES) > 15000 and len(PIECES) > 40000
    assert any(t.endswith(tuple(LEX.fillers.terms("suffix"))) for t in PIECES)
    assert any(t.startswith(tuple(LEX.fillers.terms("prefix"))) for t in PIECES)
    assert any(t.startswith(tuple(LEX.fillers.terms("hesitation"))) for t in PIECES)
    assert any(t.endswith(tuple(LEX.fillers.terms("done"))) for t in PIECES)


# ---- the filler edges: strip_fillers, done_tail, leading_hesitation

def _strip_fillers_reference(text, lex):
    prefixes = lex.fillers.terms("prefix")
    suffixes = lex.fillers.terms("suffix")
    soft = lex.fillers.terms("soft_suffix")
    prev = None
    while prev != text:
        prev = text
        text = text.strip(rules._EDGE_PUNCT)
        head = lex.fillers.prefix(rules.lowered(text))
        if head and head in prefixes and len(text) > len(head):
            text = text[len(head):]
        low = rules.lowered(text)
        for size in range(min(len(text) - 1, lex.fillers.max_len), 0, -1):
            if low[-size:] in suffixes:
                text = text[:-size]
                break
            if low[-size:] in soft and len(text) - size > rules._SOFT_SUFFIX_MIN and not text.startswith(rules.REMIND) \
                    and not rules._moved_by_one_verb(low[:-size], lex):
                text = text[:-size]
                break
    return text


def _done_tail_reference(text, lex):
    low = rules.lowered(text).rstrip(rules._EDGE_PUNCT)
    for a, b, _, cat in lex.fillers.find(low):
        if cat == "done" and b == len(low) and a >= rules._DONE_AFTER and not any(
                oa < a < ob or ob == a for oa, ob, *_ in lex.once.find(low)):
            return len(text) - a
    return 0


def _leading_hesitation_reference(text, lex):
    head = lex.fillers.prefix(rules.lowered(text))
    if not head or lex.fillers.category.get(head) != "hesitation" or len(text) <= len(head) + 1:
        return 0
    return len(head) + (1 if text[len(head)] in rules._EDGE_PUNCT else 0)


def _memo_edit_group_reference(text, lex):
    low = rules.lowered(text)
    if rules._TRIGGER_WORDS.search(low) or rules._COMMUNICATION.search(low) or rules._REMIND_SOMEONE.search(low):
        return None
    found = lex.memo.find(low)
    verbs = [(term, cat) for *_, term, cat in found if cat != "item"]
    if not verbs or verbs[0][1] not in rules._MEMO_EDITS or verbs[0][0] == "提前":
        return None
    if rules.is_super_task_mention(text, lex):
        return None
    if not any(cat == "item" for *_, cat in found):
        return None
    action = rules.clean_subquery(text, lex)
    return rules.Group(rules.DEFAULT, [action], ["memo"], [None]) if action else None


def _only_fillers_reference(gap, lex):
    low = rules.lowered(gap).strip(rules._EDGE_PUNCT)
    prefixes = lex.fillers.terms("prefix")
    while low:
        head = lex.fillers.prefix(low)
        if not head or head not in prefixes:
            return False
        low = low[len(head):]
    return True


_EDGE_RULES = (
    (rules.only_fillers, _only_fillers_reference),
    (rules.strip_fillers.__wrapped__, _strip_fillers_reference),
    (rules.done_tail, _done_tail_reference),
    (rules.leading_hesitation, _leading_hesitation_reference),
    (rules.memo_edit_group, _memo_edit_group_reference),
)


def test_the_filler_and_memo_exits_answer_as_their_definitions_on_every_bundled_text_and_piece():
    for fast, reference in _EDGE_RULES:
        answers = [fast(t, LEX) for t in PIECES]
        assert answers == [reference(t, LEX) for t in PIECES], fast.__name__
        assert any(answers), fast.__name__  # each rule does something on the bundled texts


@settings(max_examples=400, deadline=None)
@given(st.one_of(_RANDOM, st.tuples(_RANDOM, st.text(max_size=4), _RANDOM).map("".join)))
def test_the_filler_and_memo_exits_answer_as_their_definitions_on_random_texts(text):
    for fast, reference in _EDGE_RULES:
        assert fast(text, LEX) == reference(text, LEX), fast.__name__


# ---- signal_text: the device names that look like a signal, found once per lexicons object

def _signal_text_reference(text, lex):
    low = rules.lowered(text)
    hits = list(lex.positions.find(low))
    if lex.directions is not None:
        hits += lex.directions.find(low)
    hits += [h for h in lex.device_kinds.find(low) if lex.signal(h[2])]
    chars = list(low)
    for a, b, *_ in hits:
        chars[a:b] = "\x00" * (b - a)
    return "".join(chars)


def test_signal_text_blanks_what_its_definition_blanks_on_every_bundled_text():
    names = rules._signal_devices(LEX).names
    assert names  # some device names do look like a signal (后视镜)
    blanked = 0
    for text in PIECES:
        assert rules.signal_text.__wrapped__(text, LEX) == _signal_text_reference(text, LEX), text
        blanked += any(h[2] in names for h in LEX.device_kinds.find(rules.lowered(text)))
    assert blanked > 10


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(sorted({*LEX.device_kinds.category, *LEX.positions.category, *LEX.directions.category,
                                         "后", "前", "ΑΣ", "İ"})), max_size=5).map("".join))
def test_signal_text_blanks_what_its_definition_blanks_on_random_names(text):
    assert rules.signal_text.__wrapped__(text, LEX) == _signal_text_reference(text, LEX)


def test_missing_super_task_clauses_answer_as_their_definition_on_every_bundled_text():
    def reference(text):
        return [rules.Span("A", a, b, text[a:b]) for a, b, _, cat in LEX.super_task.find(rules.lowered(text))
                if cat == "keyword"]

    found = [rules.missing_super_task_clauses(t, [], LEX) for t in PIECES]
    assert found == [reference(t) for t in PIECES] and any(found)


def test_has_condition_signal_answers_as_its_definition_on_every_bundled_text():
    answers = [rules.has_condition_signal(t, LEX) for t in PIECES]
    assert answers == [LEX.signal(rules.signal_text(t, LEX)) for t in PIECES]
    # the texts where blanking took the signal away are there too (副驾座椅往后调一点)
    assert any(LEX.signal(rules.lowered(t)) and not answer for t, answer in zip(PIECES, answers))


# ---- is_bare_device: a text whose first character no name starts with and that joins none is no bare device

def _is_bare_device_reference(text, lex):
    low = rules.lowered(text)
    devices = lex.device_kinds.find(low)
    if not devices:
        return False
    for a, b, _, _ in sorted(devices + lex.positions.find(low), reverse=True):
        low = low[:a] + low[b:]
    return bool(rules._BARE_REST.match(low))


_NAMES = st.lists(st.sampled_from(sorted({*LEX.device_kinds.category, *LEX.positions.category, "的", "和", "、", " ",
                                          "，", "打开", "把", "ΑΣ", "İ"})), max_size=4).map("".join)


def test_is_bare_device_answers_as_its_definition_on_every_bundled_text_and_piece():
    answers = [rules.is_bare_device.__wrapped__(t, LEX) for t in PIECES]
    assert answers == [_is_bare_device_reference(t, LEX) for t in PIECES] and any(answers)


@settings(max_examples=400, deadline=None)
@given(_NAMES)
def test_is_bare_device_answers_as_its_definition_on_random_names(text):
    assert rules.is_bare_device.__wrapped__(text, LEX) == _is_bare_device_reference(text, LEX)


# ---- trailing_command_start: no verb, reminder or memo word after a trigger, no command there

def _trailing_command_start_reference(condition, lex):
    low = rules.lowered(condition)
    for _, e, _, cat in lex.triggers.find(low):
        if cat != "suffix" or e >= len(condition):
            continue
        rest = condition[e:]
        if rules._is_plain_command(rest, lex):
            return e
        for p in rules._condition_starts(rules.lowered(rest), lex, events=True):
            if p > 0 and rules._is_plain_command(rest[:p], lex):
                return e
    return None


def test_trailing_command_start_answers_as_its_definition_on_every_bundled_text_and_piece():
    answers = [rules.trailing_command_start(t, LEX) for t in PIECES]
    assert answers == [_trailing_command_start_reference(t, LEX) for t in PIECES]
    assert any(a is not None for a in answers)


def test_a_sentence_break_is_a_sentence_end_in_the_gap():
    for text in ["上车时打开空调。然后关窗", "到家；开灯", "a!b", "打开空调", ""]:
        for start in range(len(text) + 1):
            for end in range(start, len(text) + 1):
                assert rules.sentence_break(text, start, end) == any(ch in rules._SENTENCE_END for ch in text[start:end])


# ---- round 8: exits of the rule passes the slowest single records spend their time in

def _split_joined_actions_reference(text, spans, lex):
    out = []
    for sp in spans:
        if sp.kind != "A":
            out.append(sp)
            continue
        bounds = [0] + rules.command_cuts(sp.text, lex) + [len(sp.text)]
        for a, b in zip(bounds, bounds[1:]):
            out.append(rules.Span("A", sp.start + a, sp.start + b, text[sp.start + a: sp.start + b],
                                  sp.intent if a == 0 else None))
    return out


def _pieces_as_actions(text):
    """Every piece between the punctuation of ``text`` as an action span, the pauses as no span."""
    spans, pos = [], 0
    for piece in re.split(r"([，,。；;！!？?])", text):
        if piece and piece not in "，,。；;！!？?":
            spans.append(rules.Span("A", pos, pos + len(piece), piece, "导航" if pos == 0 else None))
        pos += len(piece)
    return spans


def test_split_joined_actions_keeps_an_uncut_span_as_its_definition_makes_it_on_every_bundled_text():
    cases = [(t, _pieces_as_actions(t)) for t in TEXTS]
    cases += [("打开空调", [rules.Span("A", 0, 4, "打开空")]), ("打开空调", [rules.Span("A", 2, 6, "空调")]),
              ("打开空调关闭车窗", [rules.Span("A", 0, 8, "打开空调关闭车窗", "车载控制"), rules.Span("C", 8, 8, "")])]
    answers = [rules.split_joined_actions(t, spans, LEX) for t, spans in cases]
    assert answers == [_split_joined_actions_reference(t, spans, LEX) for t, spans in cases]
    assert any(len(a) > len(spans) for a, (_, spans) in zip(answers, cases))  # some are cut


def test_a_reminder_noun_and_a_clause_after_ba_need_their_word():
    for text in PIECES:
        assert "提醒" in text or rules._REMINDER_NOUN.match(text) is None
        assert text.find("把", 1) > 0 or not any(m.start() > 0 for m in rules._BA.finditer(text))


def test_a_per_lexicons_memo_answers_as_its_function_and_keeps_no_memo_without_a_dict():
    class Slotted:
        __slots__ = ("x",)
    calls = []

    @memo.per_lexicons(2)
    def twice(text, lex):
        calls.append(text)
        return text * 2

    lex = type("Lex", (), {})()
    assert [twice(t, lex) for t in "abab"] == ["aa", "bb", "aa", "bb"] and calls == ["a", "b"]
    assert twice("c", lex) == "cc" and list(lex.__dict__[memo.MEMO_PREFIX + "twice"]) == ["c"]  # full: emptied
    assert twice("a", Slotted()) == "aa" and twice("a", Slotted()) == "aa" and calls[-2:] == ["a", "a"]


def test_a_once_per_lexicons_table_is_built_once_per_object_and_left_out_of_a_pickle():
    import pickle

    calls = []

    @memo.once_per_lexicons
    def table(lex):
        calls.append(lex)
        return None  # a table may be None (no such words): still built once

    one, other = type("Lex", (), {})(), type("Lex", (), {})()
    assert [table(one), table(one), table(other)] == [None] * 3 and calls == [one, other]
    lex = pickle.loads(pickle.dumps(load_automation_lexicons()))
    rules.filler_edges(lex), rules.plain_breaks("打开空调然后关窗", lex)
    assert {memo.MEMO_PREFIX + "filler_edges", memo.MEMO_PREFIX + "_plain_break"} <= lex.__dict__.keys()
    assert not any(k.startswith(memo.MEMO_PREFIX) for k in pickle.loads(pickle.dumps(lex)).__dict__)


# ---- lowered: a text without the one character whose lower case is longer is lowered whole

def _lowered_reference(text):
    low = text.lower()
    return low if len(low) == len(text) else "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)


def test_the_one_character_whose_lower_case_is_longer_is_the_one_lowered_looks_for():
    import sys

    longer = [chr(c) for c in range(sys.maxunicode + 1) if len(chr(c).lower()) != 1]
    assert longer == [rules.EXPANDS_WHEN_LOWERED]


def test_lowered_answers_as_its_definition_on_every_bundled_text_and_piece():
    assert all(rules.lowered(text) == _lowered_reference(text) for text in PIECES)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("İIiΣσςAbc打开空调 ,，Ǆǅ\u0307ẞß"), max_size=12) | st.text(max_size=12))
def test_lowered_answers_as_its_definition_on_random_texts(text):
    low = rules.lowered(text)
    assert low == _lowered_reference(text) and len(low) == len(text)


# ---- term_pattern: a trie of the terms matches as their alternation longest first

def _alternation(terms):
    return re.compile("|".join(re.escape(t) for t in sorted(terms, key=lambda t: (-len(t), t))))


def _same_matches(fast, slow, text):
    spans = [(m.span(), m.group()) for m in fast.finditer(text)] == [(m.span(), m.group()) for m in slow.finditer(text)]
    search = [(m.span() if m else None) for m in (fast.search(text), slow.search(text))]
    match = [(m.span() if m else None) for m in (fast.match(text), slow.match(text))]
    return spans and search[0] == search[1] and match[0] == match[1] and fast.findall(text) == slow.findall(text)


def test_the_rules_word_patterns_match_as_their_alternations_on_every_bundled_piece():
    lows = sorted({rules.lowered(p) for p in PIECES})
    verbs = [t for t, cat in LEX.action_verbs.category.items() if len(t) >= 2 and cat in rules._COMMAND_START_KINDS]
    breaks = [t for t, cat in LEX.breaks.category.items() if cat == "break"]
    cut_words = {*verbs, *LEX.positions.category, *LEX.device_kinds.category, *breaks}
    pairs = [(rules._cut_point_words(LEX), _alternation(cut_words)),
             (rules._signal_devices(LEX).pattern, _alternation(rules._signal_devices(LEX).names)),
             (rules._builtin_condition_words(LEX), _alternation({w for b in LEX.builtins for w in b.condition_words})),
             (rules._plain_break(LEX), re.compile(rules._PAUSES.pattern + "|" + _alternation(LEX.breaks.category).pattern))]
    for fast, slow in pairs:
        assert fast.pattern != slow.pattern and all(_same_matches(fast, slow, low) for low in lows), slow.pattern[:40]


def test_every_automation_matcher_is_its_terms_trie_and_matches_as_their_alternation_on_every_bundled_piece():
    from fastslow.features.lexicon import Matcher, term_pattern

    matchers = [m for m in vars(LEX).values() if isinstance(m, Matcher) and m.category]
    assert len(matchers) > 15
    lows = sorted({rules.lowered(p) for p in PIECES})
    for matcher in matchers:
        assert matcher.pattern.pattern == term_pattern(matcher.category).pattern
        slow = _alternation(matcher.category)
        assert all(_same_matches(matcher.pattern, slow, low) for low in lows), matcher.name


def test_a_matcher_pickled_with_the_alternation_gets_the_trie():
    import pickle

    from fastslow.features.lexicon import Matcher

    matcher = Matcher.build("t", [("打开", "on"), ("打开空调", "x"), ("打电话", "comm")])
    state = dict(matcher.__dict__, pattern=_alternation(matcher.category))  # as pickled before the trie
    revived = Matcher.__new__(Matcher)
    revived.__setstate__(state)
    assert revived.pattern.pattern == matcher.pattern.pattern != state["pattern"].pattern
    assert revived.find("打开空调打电话打开") == [(0, 4, "打开空调", "x"), (4, 7, "打电话", "comm"), (7, 9, "打开", "on")]
    assert pickle.loads(pickle.dumps(matcher)).pattern.pattern == matcher.pattern.pattern


_TERMS = st.lists(st.text(alphabet="打开空调电话ab.*", min_size=1, max_size=4), min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(_TERMS, st.text(alphabet="打开空调电话ab.*x", max_size=14))
def test_term_pattern_matches_as_the_alternation_longest_first_on_random_terms(terms, text):
    from fastslow.features.lexicon import term_pattern

    assert _same_matches(term_pattern(terms), _alternation(terms), text)


# ---- round 10: one pattern of a word list asked where each word of it, or a longer scan, was asked

def _condition_said_first_reference(action, lex):
    low = rules.lowered(action)
    if lex.action_verbs.prefix(low) or lex.reminder_verbs.prefix(low):
        return 0
    ends = [b for a, b, _, cat in lex.triggers.find(low) if cat == "suffix" and b - a >= 2 and 0 < a and b < len(low)]
    if not ends or lex.memo.search(low) or rules.is_super_task_mention(action, lex):
        return 0
    return next((b for b in ends if rules._is_plain_command(action[b:], lex)), 0)


def _is_builtin_reference(condition, actions, lex):
    if not condition or condition == rules.DEFAULT or not actions:
        return False
    cond = rules.lowered(condition)
    if any(word in cond for word in lex.triggers.terms("and", "or")):
        return False
    for b in lex.builtins:
        if any(w in cond for w in b.condition_words) and all(rules._builtin_action(a, b) for a in actions):
            return True
    return rules.builtin_by_class(cond, actions, lex)


_TRIGGERS = sorted({*LEX.triggers.category, *list(LEX.action_verbs.category)[::7], *list(LEX.device_kinds.category)[::9],
                    "提醒我", "的时候", "以后", "且", "或者", "ΑΣ", "İ"})


def test_condition_said_first_answers_as_its_definition_on_every_bundled_text_and_piece():
    answers = [rules._condition_said_first(t, LEX) for t in PIECES]
    assert answers == [_condition_said_first_reference(t, LEX) for t in PIECES] and any(answers)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TRIGGERS), max_size=5).map("".join))
def test_condition_said_first_answers_as_its_definition_on_random_texts(text):
    assert rules._condition_said_first(text, LEX) == _condition_said_first_reference(text, LEX)


def test_is_builtin_answers_as_its_definition_on_every_bundled_condition_and_action():
    cases = [(t[:k], [t[k:]]) for t in PIECES[::3] for k in (2, 4, 6) if len(t) > k]
    cases += [(t, ["打开双闪"]) for t in PIECES[::5]] + [(w + "的时候", ["自动锁车"]) for b in LEX.builtins for w in b.condition_words]
    answers = [rules.is_builtin(c, a, LEX) for c, a in cases]
    assert answers == [_is_builtin_reference(c, a, LEX) for c, a in cases] and any(answers)
    assert any(rules._compound_triggers(LEX).search(rules.lowered(c)) for c, _ in cases)  # the and / or exit is taken


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TRIGGERS), max_size=4).map("".join), st.sampled_from(["打开双闪", "提醒我", "自动锁车", "播放音乐"]))
def test_is_builtin_answers_as_its_definition_on_random_conditions(condition, action):
    assert rules.is_builtin(condition, [action], LEX) == _is_builtin_reference(condition, [action], LEX)


def test_the_signal_answers_as_its_pattern_on_every_bundled_piece_with_and_without_a_numeral():
    from fastslow.features.automation_lexicons import _NUMERAL

    lows = [rules.lowered(t) for t in PIECES]
    assert [LEX.signal(t) for t in lows] == [LEX.signal.pattern.search(t) is not None for t in lows]
    assert any(_NUMERAL.search(t) is None for t in lows) and any(LEX.signal(t) and not next(
        LEX.signal._build().iter(t), None) for t in lows)  # both exits are taken: no numeral; a time shape alone


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["0", "7", "٣", "५", "%", "百分之", "百", "一", "两", "三十", "点", "半", "个", "分钟", "小时",
                                  "号", "度", ":", "：", " ", "打开", "空调", "a"]), max_size=6).map("".join))
def test_the_signal_answers_as_its_pattern_on_random_numbers(text):
    assert LEX.signal(text) == (LEX.signal.pattern.search(text) is not None)


def test_plain_breaks_answer_as_the_pattern_scan_on_every_bundled_piece():
    pattern = rules._plain_break(LEX)
    found = [rules.plain_breaks(t, LEX) for t in PIECES]
    assert found == [[(m.start(), m.end(), LEX.breaks.category.get(m.group(), "pause")) for m in pattern.finditer(t)]
                     for t in PIECES]
    assert any(found) and not all(found)


def _command_cuts_reference(text, lex):
    if len(text) < 6:
        return []
    low = rules.lowered(text)
    if lex.reminder_verbs.prefix(low) or low.startswith(("提醒", "别", "不要")):
        return []
    verbs = {a for a, b, _, cat in lex.action_verbs.find(low) if b - a >= 2 and cat in rules._COMMAND_START_KINDS}
    names = {a for a, *_ in lex.positions.find(low)} | {a for a, *_ in lex.device_kinds.find(low)}
    breaks = {a for a, _, kind in rules.plain_breaks(low, lex) if kind == "break"}
    points = sorted(p for p in verbs | names | breaks if 3 <= p <= len(text) - 3)
    if not points or not rules.may_hold_command(text[:points[-1]], lex) or not rules.may_hold_command(text[points[0]:], lex):
        return []
    cuts, last = [], 0
    for p in points:
        if p - last < 3 or (p not in breaks and low[p - 1] in rules._JOINED_BEFORE) or "说" in low[last:p]:
            continue
        left = rules.strip_fillers(text[last:p], lex)
        if p not in verbs and p not in breaks and lex.action_verbs.prefix(rules.lowered(left)):
            continue
        if rules._is_plain_command(left, lex) and rules._is_plain_command(rules.strip_fillers(text[p:], lex), lex):
            cuts.append(p)
            last = p
    if cuts and rules.unconditional_kind(text, lex):
        return []
    return cuts


_COMMANDS = sorted({*list(LEX.action_verbs.category)[::11], *list(LEX.device_kinds.category)[::13], *LEX.positions.category,
                    *LEX.breaks.category, "打开空调", "关闭车窗", "提醒我", "的", "吧", "说", "ΑΣ", "İ", "Σ"})


def test_command_cuts_answer_as_their_definition_on_every_bundled_text_and_piece():
    answers = [rules.command_cuts(t, LEX) for t in PIECES]
    assert answers == [_command_cuts_reference(t, LEX) for t in PIECES] and any(answers)
    # the exit before the point scan is taken: a text with a cut word but no command word before its last three characters
    assert any(len(t) >= 6 and rules._cut_point_words(LEX).search(rules.lowered(t), 3)
               and not rules.may_hold_command(t[:len(t) - 3], LEX) for t in PIECES)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_COMMANDS), max_size=6).map("".join))
def test_command_cuts_answer_as_their_definition_on_random_runs(text):
    assert rules.command_cuts(text, LEX) == _command_cuts_reference(text, LEX)


def _condition_inside_action_reference(action, lex):
    if lex.triggers.search(rules.lowered(action)) is None:
        return None
    low = rules.lowered(rules.signal_text(action, lex))
    for _, e, term, cat in lex.triggers.find(low):
        if cat != "suffix" or e >= len(action) or len(term) < 2 and term != "时":
            continue
        before, rest = action[:e], action[e:]
        if rules._is_plain_command(before, lex) or lex.action_verbs.prefix(rules.lowered(before)) \
                or lex.reminder_verbs.search(rules.lowered(before)):
            return None
        if rules._is_plain_command(rest, lex) or rules.builtin_function_action(rest, lex) \
                or lex.reminder_verbs.prefix(rules.lowered(rest)):
            return e
    return None


def test_condition_inside_action_answers_as_its_definition_on_every_bundled_text_and_piece():
    answers = [rules.condition_inside_action(t, LEX) for t in PIECES]
    assert answers == [_condition_inside_action_reference(t, LEX) for t in PIECES]
    assert any(a is not None for a in answers)
    # the exit is taken where a trigger is found but none that cuts (前, 后, 如果 only)
    assert any(LEX.triggers.search(rules.lowered(t)) and not rules._cutting_suffix_triggers(LEX).search(rules.lowered(t))
               for t in PIECES)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TRIGGERS + ["后视镜", "后排", "往后", "打开空调", "自动紧急制动"]), max_size=5).map("".join))
def test_condition_inside_action_answers_as_its_definition_on_random_texts(text):
    assert rules.condition_inside_action(text, LEX) == _condition_inside_action_reference(text, LEX)
