"""The text layer's fast paths give what their definitions give, on every bundled query (and on generated
text where a path has edges the bundled queries may miss): building utterances, matching lexicons, the
disfluency stripper and the context state are speed, never a change of output."""

from functools import lru_cache

import pytest
from hypothesis import given, settings, strategies as st

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_rows as read_rows
from fastslow.features import lexicon, spoken, text as text_module
from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.features.normalise import normalise, surface

@lru_cache(maxsize=1)
def bundled_rows() -> tuple[dict, ...]:
    return tuple(read_rows((*ROUTING_FILES, *AUTOMATION_FILES)))


def bundled_queries() -> list[str]:
    return sorted({row["query"] for row in bundled_rows()})


@pytest.fixture(scope="module")
def segmenter():
    return text_module.Segmenter(hmm=False, spoken=True).fit()


# ---- lexicon matching

def _find_reference(matcher, lowered):
    """``Matcher.find`` as defined: every match of its pattern, from the start of the text."""
    if matcher.pattern is None:
        return []
    return [(m.start(), m.end(), m.group(), matcher.category[m.group()]) for m in matcher.pattern.finditer(lowered)]


@lru_cache(maxsize=1)
def _matchers():
    lex = load_automation_lexicons()
    return tuple(value for value in vars(lex).values() if isinstance(value, lexicon.Matcher))


def test_matcher_find_is_every_match_of_its_pattern_on_every_bundled_text():
    matchers = _matchers()
    assert len(matchers) > 5
    texts = [q.lower() for q in bundled_queries()]
    found = 0
    for matcher in matchers:
        for lowered in texts:
            got = matcher.find(lowered)
            assert got == _find_reference(matcher, lowered)
            found += bool(got)
    assert 0 < found < len(matchers) * len(texts)  # both paths ran: texts with and without a match


def test_matcher_find_gives_a_new_list_each_time():
    matcher = next(m for m in _matchers() if m.find("打开座椅加热和主驾空调"))
    first = matcher.find("打开座椅加热和主驾空调")
    first.append(None)
    assert None not in matcher.find("打开座椅加热和主驾空调")
    empty = matcher.find("")
    empty.append(None)
    assert matcher.find("") == []


def _bank_match_reference(bank, tokens, charset, text):
    """``LexiconBank.match`` as defined: per lexicon, its whole-token terms in token order, its single
    characters outside the bank's longer terms, its gaps in bank order."""
    hits = [{} for _ in bank.digests]
    for token in tokens:
        for index, col in bank.words.get(token, ()):
            hits[index][col] = hits[index].get(col, 0) + 1
    for ch in sorted(lexicon.free_chars(tokens, bank.words) & bank.char_set):  # sorted: a set's order follows the hash seed
        for index, col in bank.chars[ch]:
            hits[index][col] = hits[index].get(col, 0) + 1
    for pattern, index, col in bank.gaps:
        if pattern.search(text):
            hits[index][col] = hits[index].get(col, 0) + 1
    return dict(zip(bank.digests, hits))


def _ordered(hits):
    """Hits with the order of their keys (the order their feature entries are summed in)."""
    return [(digest, list(found.items())) for digest, found in hits.items()]


def test_the_bank_matches_as_its_definition_in_the_same_order_on_every_bundled_query(segmenter):
    bank = segmenter.lexicons_
    hit = 0
    for query in bundled_queries():
        u = segmenter.utterance(query)
        got = bank.match(u.tokens, u.text)
        assert _ordered(got) == _ordered(_bank_match_reference(bank, u.tokens, u.charset, u.text))
        hit += sum(map(bool, got.values()))
    assert hit
    assert lexicon.NO_HITS == {}  # shared by every utterance: nothing may have changed it


def test_a_bank_with_a_lexicon_twice_or_pickled_before_its_gap_index_matches_as_its_definition(segmenter):
    import dataclasses
    import pickle

    lexicons = [lexicon.load_lexicon(name) for name in ("actions", "triggers", "devices")]
    twice = lexicon.LexiconBank.of([lexicons[1], *lexicons, lexicons[0]])  # equal digests: the later one counts
    before = dataclasses.replace(lexicon.LexiconBank.of(lexicons), gap_chars=())  # every gap searched
    for bank in (twice, before, pickle.loads(pickle.dumps(segmenter.lexicons_))):
        for query in bundled_queries()[::7]:
            u = segmenter.utterance(query)
            reference = _bank_match_reference(bank, u.tokens, u.charset, u.text)
            assert _ordered(bank.match(u.tokens, u.text)) == _ordered(reference)
    assert "_index" not in pickle.loads(pickle.dumps(segmenter.lexicons_)).__dict__


def test_a_bank_finds_single_characters_and_gaps_a_character_class_must_escape(tmp_path):
    """``match`` finds the bank's characters with one character class: marks that mean something inside a
    class (] ^ - \\) are matched as themselves, and a gap needing one of them is searched when the text has it."""
    (tmp_path / "marks.txt").write_text("]\tclose\n^\tcaret\n-\tdash\n\\\tslash\n开\tverb\n^…]\tspan\n-…开\tspan\n",
                                        encoding="utf-8")
    bank = lexicon.LexiconBank.of([lexicon.load_lexicon(tmp_path / "marks.txt"), lexicon.load_lexicon("actions")])
    assert {"]", "^", "-", "\\"} <= bank.char_set and len(bank.gaps) >= 2
    hit = 0
    for text in ("a]b", "^x]", "-", "\\开", "开-关", "x^y", "[]", "a-z", "^-\\]开", "打开空调", ""):
        tokens = tuple(text)
        got = bank.match(tokens, text)
        assert _ordered(got) == _ordered(_bank_match_reference(bank, tokens, frozenset(text), text))
        hit += bool(got[bank.digests[0]])
    assert hit


# ---- building utterances

_SPACED = st.text(alphabet="打开空调Ａａ Ｂ１2，,。.！!？?~～… \u3000\t\n：:；;ＳＵ７", max_size=16)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_SPACED, st.sampled_from(bundled_queries())))
def test_text_forms_are_normalise_and_surface(query):
    assert text_module.text_forms(query) == (normalise(query), surface(query))


def test_text_forms_are_normalise_and_surface_on_every_bundled_query():
    for query in bundled_queries():
        assert text_module.text_forms(query) == (normalise(query), surface(query))


def _context_reference(context, candidates):
    """``context_state`` as defined (no early exit without earlier turns)."""
    state = text_module._turn_state(context)
    if candidates and state not in ("none", "slow_question") and any(
            any(m in (turn.get("text") or "") for m in candidates) for turn in context):
        return "prev_candidates"
    return state


def _utterance_reference(segmenter, item):
    """``Segmenter.utterance`` as defined, one input at a time."""
    query, context, endpoint = text_module.as_fields(item)
    normalised = normalise(query)
    surface_text = surface(query)
    text = spoken.strip_disfluencies(normalised, segmenter.spoken_)
    bundled = segmenter.spoken_ == spoken.spoken_lexicon()
    spoken_surface = spoken.surface_strip(normalised, text, surface_text) if bundled else None
    assert spoken_surface is None or spoken_surface == spoken.strip_disfluencies(surface_text)
    tokens = tuple(t for t in segmenter.segment(text) if not t.isspace())
    state = _context_reference(context, segmenter.candidates_)
    return text_module.Utterance(text, tokens, state, endpoint,
                                 _bank_match_reference(segmenter.lexicons_, tokens, frozenset(text), text),
                                 surface_text, spoken_surface)


def _fields(u):
    return (u.text, u.tokens, u.charset, u.context, u.endpoint, _ordered(u.hits), u.surface, u.spoken_surface)


def test_a_batch_of_utterances_is_each_input_built_by_its_definition(segmenter):
    rows = list(bundled_rows())
    items = [{"query": row["query"], "context": row.get("context") or [], "endpoint": row.get("endpoint")}
             for row in rows] + ["打开 空调。", "ＳＵ７支持哪些模式？", "小爱同学 帮我打开空调 谢谢", "",
                                 {"query": "打给张伟", "context": [{"role": "user", "text": "我通讯录里有两个张伟"},
                                                                {"role": "assistant", "system": "fast", "text": "好的"}]},
                                 {"query": "第二个", "context": [{"role": "assistant", "text": "好的"}]}]
    assert any(item["context"] for item in items[:len(rows)])
    assert {u.context for u in segmenter.utterances(items)} >= set(text_module.CONTEXT_STATES)
    built = segmenter.utterances(items)
    assert [_fields(u) for u in built] == [_fields(_utterance_reference(segmenter, item)) for item in items]
    assert segmenter.utterances([built[0], items[1], built[2]]) == [built[0], built[1], built[2]]
    assert segmenter.utterances(iter(items[:3])) == built[:3]
    assert sum(u.spoken_surface is not None for u in built) > len(built) // 3


# ---- the disfluency stripper

def _collapse_before(text, lex):
    """``_collapse_repeats`` before its repeat search: the two substitutions after the set test."""
    if len(set(text)) == len(text):
        return text
    text = spoken._REPEAT.sub(lambda m: m[0] if m[1][0] == m[1][1] else m[1], text)
    return lex.stutter_pattern.sub(r"\1", text)


def _strip_before(text, lex):
    """``strip_disfluencies`` as it stood before its per-edge gates (one gate for both edges, then both
    loops) and before the repeat search: the definition the fast paths are held to."""
    out = _collapse_before(text, lex)
    if lex.correction_pattern is not None:
        out = lex.correction_pattern.sub(lambda m: lex.correction_map[m[0]], out)
    starts, ends = lex.edge_chars
    if not out or (out[0] not in starts and out[-1] not in ends and not out.endswith(lex.stripped_wake_words)):
        return out or text
    wake_at, hesitation_at, demonstrative_at, tail_at, pause_tail_at = lex.by_edge
    while True:
        before = out
        out = out.lstrip(spoken._PAUSE)
        for k in (1, 2):  # a stutter on the wake word's first characters (小小爱同学, 你你好小鹏)
            if out[:k] == out[k:2 * k] and out[k:].startswith(lex.stripped_wake_words):
                out = out[k:]
                break
        for group in (wake_at, hesitation_at):
            for term in group.get(out[:1], ()):
                if out.startswith(term) and len(out) > len(term):
                    out = out[len(term):]
                    break
        for term in demonstrative_at.get(out[:1], ()):
            if out.startswith(term) and spoken._hesitation_demonstrative(out[len(term):], lex):
                out = out[len(term):]
                break
        out = spoken._without_assistant_name(out, text, lex)
        if out == before:
            break
    while True:
        before = out
        body = out.rstrip(spoken._PAUSE)
        for term in tail_at.get(body[-1:], ()):
            if body.endswith(term) and len(body) > len(term) + 1:
                body = body[: -len(term)]
                break
        if body.endswith(lex.stripped_wake_words):  # a wake word said last calls the assistant (放首歌吧小爱同学; 你好小鹏 stays)
            for term in lex.stripped_wake_words:
                if body.endswith(term) and len(body) > len(term) + 1 and (
                        len(term) >= 3 or body[-len(term) - 1] in spoken._PAUSE):
                    body = body[: -len(term)]
                    break
        for term in pause_tail_at.get(body[-1:], ()):
            if body.endswith(term) and len(body) > len(term) + 1 and (
                    body[-len(term) - 1] in spoken._PAUSE
                    or (term in lex.statement_tails and spoken._statement(body[: -len(term)]))):
                body = body[: -len(term)]
                break
        out = body.rstrip(spoken._PAUSE)
        if out == before:
            break
    out = out.strip(spoken._PAUSE)
    return out if out else text


_LEX = spoken.spoken_lexicon()
_EDGES = st.lists(st.sampled_from(sorted({*_LEX.stripped_wake_words, *_LEX.hesitations, *_LEX.demonstrative_fillers,
                                          *_LEX.tails, *_LEX.pause_tails, *_LEX.command_starts, *_LEX.greetings,
                                          *(w for w, _ in _LEX.corrections), *_LEX.stutter_chars, "小途", "小声",
                                          "Hi", "HI小途", "，", "。", " ", "打开空调", "空调空调", "好"})),
                  max_size=6).map("".join)


@settings(max_examples=600, deadline=None)
@given(st.one_of(_EDGES, st.tuples(_EDGES, st.sampled_from(bundled_queries()), _EDGES).map("".join)))
def test_the_stripper_is_its_definition_on_spoken_edges(text):
    assert spoken.strip_disfluencies(text, _LEX) == _strip_before(text, _LEX)


#: upper case before a greeting's lower-case first letter: the start is stripped only when the end may be
_CASED = ("HI小途打开空调谢谢", "Hi小途，打开空调吧", "HEY小途打开空调", "Hi小途打开空调")


def test_the_stripper_is_its_definition_on_every_bundled_query():
    changed = 0
    for query in [*bundled_queries(), *_CASED]:
        for text in {query, normalise(query), surface(query)}:
            fast = spoken.strip_disfluencies(text, _LEX)
            assert fast == _strip_before(text, _LEX)
            changed += fast != text
    assert changed


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_matcher_find_is_every_match_of_its_pattern_on_generated_text(data):
    matcher = data.draw(st.sampled_from(_matchers()))
    terms = sorted(matcher.category)
    pieces = st.one_of(st.sampled_from(terms), st.sampled_from(terms).map(lambda t: t[1:] + t[:1]),
                       st.text("打开的了a1", max_size=2))
    lowered = "".join(data.draw(st.lists(pieces, max_size=6)))
    assert matcher.find(lowered) == _find_reference(matcher, lowered)


def test_a_matcher_refuses_an_empty_term():
    with pytest.raises(ValueError):
        lexicon.Matcher.build("x", [("打开", "verb"), ("", "verb")])


def test_the_scanner_finds_what_each_matcher_s_pattern_finds_on_every_bundled_text():
    matchers = list(_matchers())
    scanner = lexicon.Scanner(matchers)
    found = 0
    for query in bundled_queries():
        lowered = query.lower()
        got = scanner.scan(lowered)
        assert got == [[(a, b, t) for a, b, t, _ in _find_reference(m, lowered)] for m in matchers]
        found += sum(map(bool, got))
    assert found
    assert lexicon.Scanner([]).scan("打开空调") == []


_PIECES = st.sampled_from(sorted({*_LEX.stutter_chars, "空调", "小爱", "谢谢", "哈", "打开", "a", "1", "，"}))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_PIECES, st.integers(1, 3)).map(lambda p: p[0] * p[1]), max_size=6).map("".join))
def test_collapsing_repeats_after_one_search_is_the_two_substitutions(text):
    assert spoken._collapse_repeats(text, _LEX) == _collapse_before(text, _LEX)
