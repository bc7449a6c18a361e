"""The fast paths give what the plain paths give: the batch memo, the single-row (no scipy.sparse)
logits and the rjieba segmenter (tests/test_features.py) are speed, never a change of output."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_queries, bundled_rows, bundled_subqueries
from fastslow.features import extractors
from fastslow.models.automation.rules import lowered
from fastslow.models.pipeline import Memo
from fastslow.models.routing import router as router_module
from fastslow.models.scoring import score_chunk
from fastslow.cli import main

ROWS = [
    {"id": 1, "query": "上车时打开空调", "endpoint": "car"},
    {"id": 2, "query": "打开空调然后打开座椅加热"},
    {"id": 3, "query": "上车时打开空调", "endpoint": "car",
     "existing_tasks": [{"id": "t9", "condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]},
    {"id": 4, "query": "好的", "context": [{"role": "assistant", "system": "slow", "text": "要开启湿滑模式吗？"}]},
    {"id": 5, "query": "好的"},
    {"id": 1, "query": "上车时打开空调", "endpoint": "car"},
    {"query": ""},
]


def test_the_memo_gives_the_records_of_a_run_without_it(model):
    rows = [(i, row, None) for i, row in enumerate(ROWS * 3, 1)]
    plain = score_chunk(model, rows)
    memo = Memo(size=2)  # smaller than the distinct keys: entries are evicted and analysed again
    assert score_chunk(model, rows[:7], memo) + score_chunk(model, rows[7:], memo) == plain
    assert len(memo) == 2
    # the same query keeps its own record: its id, its idempotency keys, its existing tasks
    assert plain[5] == plain[0]
    assert plain[2]["candidates"] != plain[0]["candidates"]
    assert plain[2]["candidates"][0]["idempotency_key"] != plain[0]["candidates"][0]["idempotency_key"]


def test_a_memo_key_tells_contexts_and_endpoints_apart(model):
    memo = Memo()
    model.score(ROWS[3:5] + [{"query": "上车时打开空调", "endpoint": "home"}, ROWS[0]], memo)
    assert len(memo) == 4


def test_single_row_logits_are_the_batch_logits_bit_for_bit(model):
    router = model.router
    queries = ["上车时打开空调", "我好冷", "导航去公司然后播放音乐", "帮我规划一下周末去哪玩", "第二个", "ＳＵ７支持哪些模式？",
               "好的好的好的", ""]
    utterances = router.utterances(queries)
    batch = router.decision_function(utterances)
    dense = np.vstack([router.decision_function([u]) for u in utterances])
    assert np.array_equal(batch, dense)
    assert np.array_equal(router.decision_function(utterances[:3]), batch[:3])


def test_intent_scores_of_a_batch_are_each_subquerys_alone_and_the_fitted_models(model):
    """A batch of subqueries is scored with numpy over all its entries and a CSR product, a single one on Python
    floats and a gather: the same floats, and the fitted vectorizer and model's up to rounding."""
    intents = model.automation.intents_
    subqueries = sorted(bundled_subqueries())[:300]
    batch = intents.decision_function(subqueries)
    alone = np.vstack([intents.decision_function([s]) for s in subqueries])
    assert np.array_equal(batch, alone)
    lows = [lowered(s) for s in subqueries]
    np.testing.assert_allclose(batch, intents.model_.decision_function(intents._features(lows)), rtol=0, atol=1e-5)


def test_fused_logits_are_the_fitted_pipelines_up_to_rounding_on_every_bundled_query(model):
    """The fused tf-idf path against its definition (the feature union's matrix times the coefficients):
    the same numbers, but for the last bits of rounding (products and sums in another order)."""
    router = model.router
    utterances = router.utterances(bundled_queries(ROUTING_FILES))
    fused = router.decision_function(utterances)
    reference = router.pipeline_.named_steps["classify"].decision_function(
        router.pipeline_.named_steps["features"].transform(utterances))
    np.testing.assert_allclose(fused, reference, rtol=0, atol=1e-12)
    assert np.array_equal(fused.argmax(axis=1), reference.argmax(axis=1))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab空调 ，1", max_size=12), st.integers(1, 3), st.integers(1, 4))
def test_char_ngrams_are_every_slice_by_size(text, low, high):
    want = list(text) if low == 1 else []
    for size in range(max(2, low), high + 1):
        want += [text[i: i + size] for i in range(len(text) - size + 1)]
    assert extractors.char_ngrams(text, low, high) == want


def test_fastslow_score_memo_writes_the_same_file(model, trained, tmp_path):
    source = tmp_path / "log.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS * 2), encoding="utf-8")
    outputs = []
    for extra in ([], ["--memo"], ["--memo", "3"]):
        out = tmp_path / f"out{len(outputs)}.jsonl"
        assert main(["score", str(source), "-o", str(out), "--model", str(trained["path"]), "--jobs", "1", *extra]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]


def test_row_softmax_is_scipys_softmax_bit_for_bit(model):
    from scipy.special import softmax

    router = model.router
    utterances = router.utterances(["上车时打开空调", "我好冷", "导航去公司然后播放音乐", "第二个", "今天天气怎么样"])
    scaled = router.decision_function(utterances) / router.temperature_
    assert np.array_equal(router_module.row_softmax(scaled), softmax(scaled, axis=1))
    assert np.array_equal(router_module.row_softmax(scaled[:1]), softmax(scaled[:1], axis=1))


def route_fields(route) -> tuple:
    """Every field of a ``Route``, ``alternatives`` too (equality leaves it out)."""
    return (*dataclasses.astuple(route), route.alternatives)


def test_an_unfitted_estimator_still_says_so():
    import pytest
    from sklearn.exceptions import NotFittedError

    from fastslow.models.automation.intents import IntentClassifier
    from fastslow.models.automation.parser import AutomationParser

    with pytest.raises(NotFittedError):
        router_module.Router().route(["打开空调"])
    with pytest.raises(NotFittedError):
        AutomationParser().parse("上车时打开空调")
    with pytest.raises(NotFittedError):
        IntentClassifier().decision_function(["打开空调"])


def test_matcher_find_gives_a_new_list_each_call_and_the_same_matches_after_pickling(model):
    import pickle

    devices = model.automation.lexicons_.device_kinds
    text = "打开座椅加热和主驾空调"
    first = devices.find(text)
    again = devices.find(text)
    assert first == again and first is not again  # a new list each time: a caller may change it
    again.append(None)
    assert devices.find(text) == first
    assert first  # the text holds device names: the comparisons below compare matches
    assert pickle.loads(pickle.dumps(devices)).find(text) == first


# ---- fast paths of the text layer against their definitions, on generated text (hypothesis)

from hypothesis import given, settings, strategies as st  # noqa: E402

from fastslow.data.io import has_surrogate  # noqa: E402
from fastslow.features import spoken  # noqa: E402
from fastslow.features.automation_lexicons import load_automation_lexicons  # noqa: E402

_LEX = spoken.spoken_lexicon()
_AUTO = load_automation_lexicons()
_ALPHABET = "".join(sorted({c for w in (*_LEX.hesitations, *_LEX.tails, *(w for w, _ in _LEX.corrections),
                                        *_AUTO.signal.terms[:200]) for c in w})) + "空调打开一二三12:%，。 "
_TEXTS = st.text(alphabet=_ALPHABET, max_size=24)
_WORDS = st.lists(st.sampled_from(sorted({*_AUTO.signal.terms, *(w for w, _ in _LEX.corrections), "空调", "打开"})),
                  max_size=4).map("".join)


def _slow_strip(text, lex):
    """strip_disfluencies as it was before its fast paths (no set test, no first-character test)."""
    out = spoken._REPEAT.sub(lambda m: m[0] if m[1][0] == m[1][1] else m[1], text)
    out = lex.stutter_pattern.sub(r"\1", out)
    if lex.correction_pattern is not None:
        word = dict(lex.corrections)
        out = lex.correction_pattern.sub(lambda m: word[m[0]], out)
    return out


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXTS, _WORDS, st.tuples(_WORDS, _WORDS).map(lambda p: p[0] + p[0] + p[1])))
def test_repeat_and_correction_fast_paths_change_nothing(text):
    assert spoken._corrected(spoken._collapse_repeats(text, _LEX), _LEX) == _slow_strip(text, _LEX)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXTS, _WORDS, st.tuples(_TEXTS, _WORDS, _TEXTS).map("".join)))
def test_the_signal_automaton_answers_as_the_signal_pattern(text):
    assert _AUTO.signal.terms  # a freshly loaded signal has its terms: the automaton path runs
    assert _AUTO.signal(text) == (_AUTO.signal.pattern.search(text) is not None)


@given(st.text(max_size=12))
def test_has_surrogate_is_a_test_of_every_character(text):
    assert has_surrogate(text) == any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def test_a_text_memo_pickles_empty_and_clear_memos_reaches_every_memo():
    """(Emptying a full memo: tests/test_rules_early_exits.py, through ``per_lexicons``.)"""
    import pickle

    from fastslow.features.memo import TextMemo, clear_memos

    memo, other = TextMemo(2), TextMemo(2)
    memo["c"] = 3
    other["a"] = 1
    copy = pickle.loads(pickle.dumps(memo))
    assert isinstance(copy, TextMemo) and copy == {} and copy.size == 2
    clear_memos()
    assert memo == {} and other == {}


def _bank_match_reference(bank, tokens, charset, text):
    """LexiconBank.match as it was before its gap index: every gap's set test, in order (single characters in
    sorted order, as ``Lexicon.match``: a set's order follows the hash seed)."""
    hits = [{} for _ in bank.digests]
    for token in tokens:
        for index, col in bank.words.get(token, ()):
            hits[index][col] = hits[index].get(col, 0) + 1
    for ch in sorted({c for token in tokens if token not in bank.words for c in token} & bank.char_set):
        for index, col in bank.chars[ch]:
            hits[index][col] = hits[index].get(col, 0) + 1
    for (pattern, index, col), needed in zip(bank.gaps, bank.gap_chars):
        if needed <= charset and pattern.search(text):
            hits[index][col] = hits[index].get(col, 0) + 1
    return dict(zip(bank.digests, hits))


def test_the_lexicon_bank_finds_what_every_gap_finds_in_the_same_order(model):
    segmenter = model.router.segmenter
    bank = segmenter.lexicons_
    assert bank.gaps and bank.gap_chars
    heads = sorted({c for needed in bank.gap_chars for c in needed})
    alphabet = "".join(heads) + "打开空调时的了"

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=alphabet, max_size=30))
    def check(text):
        tokens = segmenter.segment(text)
        charset = frozenset(text)
        got = bank.match(tokens, text)
        want = _bank_match_reference(bank, tokens, charset, text)
        assert [(d, list(h.items())) for d, h in got.items()] == [(d, list(h.items())) for d, h in want.items()]

    check()


def _bundled_automation_texts():
    from fastslow.models.automation.parser import surface_of
    from fastslow.models.lifecycle.dataset import DEV_FILE, load_labelled

    rows = bundled_rows(AUTOMATION_FILES[:2])
    return [t for t in {surface_of(r["query"]) for r in rows + load_labelled(DEV_FILE)} if t]





def test_the_pruned_crf_features_are_the_known_ones_in_order_and_tag_alike(model):
    """crfsuite drops attributes it has no weight for; the tagger leaves most character n-grams out before
    that: the same attributes reach the CRF in the same order, so the tags and marginals are the same."""
    tagger = model.automation.tagger_
    crf = tagger._tagger()
    known = {a for a, _ in crf.info().state_features}
    assert tagger._known() is not None
    texts = _bundled_automation_texts() + ["", "a", "Ａ1：2%", "上车时\n打开空调", " 打 开 "]
    for text in texts:
        full, pruned = tagger.features(text), tagger.tagging_features(text)  # pruned: crfsuite's UTF-8 bytes
        names = [[a.decode("utf-8") for a in item] for item in pruned]
        assert [[a for a in item if a in known] for item in full] == [[a for a in item if a in known] for item in names]
        assert all(set(item) <= set(whole) for item, whole in zip(names, full))
        grams = ("c=", "l=", "r=", "lc=", "cr=", "lcr=", "ll=", "rr=")
        assert all(a in known for item in names for a in item if a.startswith(grams))
        if text:
            tags = crf.tag(full)
            marginals = [crf.marginal(t, i) for i, t in enumerate(tags)]
            assert crf.tag(pruned) == tags and [crf.marginal(t, i) for i, t in enumerate(tags)] == marginals
    assert "_known_attributes" not in tagger.__getstate__()


def test_command_cuts_without_room_for_two_commands_are_none(model):
    """command_cuts answers [] early when no cut point leaves three characters on each side: the same
    answer as its full search, on every bundled text and on each of its prefixes and suffixes."""
    from fastslow.models.automation import rules

    lex = model.automation.lexicons_

    def full_search(text):
        low = rules.lowered(text)
        if lex.reminder_verbs.prefix(low) or low.startswith(("提醒", "别", "不要")) or rules.unconditional_kind(text, lex):
            return []
        verbs = {a for a, b, _, cat in lex.action_verbs.find(low) if b - a >= 2 and cat in rules._COMMAND_START_KINDS}
        names = {a for a, *_ in lex.positions.find(low)} | {a for a, *_ in lex.device_kinds.find(low)}
        breaks = {a for a, _, kind in rules.plain_breaks(low, lex) if kind == "break"}
        cuts, last = [], 0
        for p in sorted(verbs | names | breaks):
            if p - last < 3 or (p not in breaks and low[p - 1] in rules._JOINED_BEFORE) or "说" in low[last:p]:
                continue
            left = rules.strip_fillers(text[last:p], lex)
            if p not in verbs and p not in breaks and lex.action_verbs.prefix(rules.lowered(left)):
                continue
            if rules._is_plain_command(left, lex) and rules._is_plain_command(rules.strip_fillers(text[p:], lex), lex):
                cuts.append(p)
                last = p
        return cuts

    texts = _bundled_automation_texts() + ["关掉客厅的灯打开扫地机器人", "打开空调关窗", "打开空调关闭车窗"]
    cut_somewhere = 0
    for text in texts:
        for part in {text, *(text[:k] for k in range(1, len(text))), *(text[k:] for k in range(1, len(text)))}:
            assert rules.command_cuts(part, lex) == full_search(part), part
        cut_somewhere += bool(rules.command_cuts(text, lex))
    assert cut_somewhere > 0


class _EveryTerm(dict):
    """An edge index that gives every term for every character: the stripper's loops as first written."""

    def __init__(self, terms):
        super().__init__()
        self.terms = terms

    def get(self, key, default=None):
        return self.terms


class _EveryCharacter:
    def __contains__(self, character):
        return True


def _unindexed(lex):
    plain = spoken.SpokenLexicon(**{f.name: getattr(lex, f.name) for f in dataclasses.fields(lex)})
    plain.__dict__["by_edge"] = tuple(_EveryTerm(terms) for terms in (
        lex.stripped_wake_words, lex.hesitations, lex.demonstrative_fillers, lex.tails, lex.pause_tails))
    plain.__dict__["greeting_firsts"] = _EveryCharacter()  # and the assistant-name gate lets every text through
    return plain


_PLAIN_LEX = _unindexed(_LEX)
_EDGE_WORDS = st.lists(st.sampled_from(sorted({*_LEX.stripped_wake_words, *_LEX.hesitations, *_LEX.demonstrative_fillers,
                                               *_LEX.tails, *_LEX.pause_tails, *_LEX.command_starts, *_LEX.greetings,
                                               "小途", "小声", "，", "。", " ", "打开空调", "好", "HI"})),
                       max_size=6).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_EDGE_WORDS, _TEXTS, st.tuples(_EDGE_WORDS, _TEXTS, _EDGE_WORDS).map("".join)))
def test_the_stripper_s_edge_index_finds_what_every_term_would(text):
    assert spoken.strip_disfluencies(text, _LEX) == spoken.strip_disfluencies(text, _PLAIN_LEX)


_NAMED = st.lists(st.sampled_from(sorted({*list(_AUTO.positions.category)[:60], *list(_AUTO.device_kinds.category)[:80],
                                          *(_AUTO.directions.category if _AUTO.directions else ()),
                                          *_AUTO.signal.terms[:150], "后", "前", "时", "十分钟", "3点", "打开"})),
                  max_size=5).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_NAMED, _TEXTS, st.tuples(_NAMED, _TEXTS).map("".join)))
def test_a_text_without_any_signal_has_none_after_blanking_its_names(text):
    from fastslow.models.automation import rules

    assert rules.has_condition_signal(text, _AUTO) == _AUTO.signal(rules.signal_text(text, _AUTO))


_MEMOISED_RULES = ("signal_text", "strip_fillers", "has_verb", "is_bare_device")


def test_memoised_rule_helpers_answer_as_their_definitions_on_every_bundled_text_and_its_pieces(model):
    """Each memoised helper gives what its undecorated definition gives, on first asking and from the memo,
    for every bundled automation text and every piece between its punctuation."""
    import re

    from fastslow.models.automation import rules

    lex = model.automation.lexicons_
    texts = _bundled_automation_texts()
    texts += [p for t in texts for p in re.split(r"[，,。；;！!？?]", t) if p] + ["", "吧", "帮我打开空调吧"]
    for name in _MEMOISED_RULES:
        fn = getattr(rules, name)
        expected = [fn.__wrapped__(t, lex) for t in texts]
        assert [fn(t, lex) for t in texts] == expected, name
        assert [fn(t, lex) for t in texts] == expected, name  # now from the memo


def test_rule_memos_are_per_lexicons_object_and_never_pickled(model):
    import pickle

    from fastslow.features.memo import MEMO_PREFIX
    from fastslow.models.automation.rules import strip_fillers

    lex = model.automation.lexicons_
    assert strip_fillers("帮我打开空调吧", lex) == "打开空调"
    assert any(k.startswith(MEMO_PREFIX) for k in lex.__dict__)
    copy = pickle.loads(pickle.dumps(lex))
    assert not any(k.startswith(MEMO_PREFIX) for k in copy.__dict__)
    other = load_automation_lexicons()
    memo = other.__dict__.get(MEMO_PREFIX + "strip_fillers")
    assert memo is None or "帮我打开空调吧" not in memo  # another object: its own memo
    assert strip_fillers("帮我打开空调吧", other) == "打开空调"


_JSON_LEAF = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
              | st.sampled_from(["a\ud800", "\udfff", "打开空调"]))
_JSON_VALUE = st.recursive(_JSON_LEAF, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=3) | st.sampled_from(["\udc00k"]), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=500)
@given(_JSON_VALUE)
def test_the_path_free_json_check_refuses_what_the_named_walk_finds(value):
    """``bad_json_value`` asks ``json_clean`` first and walks with paths only what it refuses: the two agree
    on any value (NaN, infinities, lone surrogates in text and field names, anywhere)."""
    from fastslow.data.io import _first_bad, bad_json_value, json_clean

    assert json_clean(value) == (_first_bad(value, "") is None)
    assert bad_json_value(value, "row") == _first_bad(value, "row")


def test_rows_whose_values_the_server_checked_score_as_unchecked_rows(model):
    """``/v1/route/batch`` scores the items ``invalid_value`` passed with ``values_checked``: the same records
    (error records included) as the full validation, on the bundled rows and rows that fail validation."""
    from fastslow.serve.server import invalid_value

    rows = bundled_rows((*ROUTING_FILES[:2], *AUTOMATION_FILES))
    rows += ROWS + [{"query": "x" * 2000}, {"query": 3}, {"query": "好的", "context": [{"role": "bot"}]}, ["好的"],
                    {"query": "好的", "endpoint": "tv", "id": 1.5}, {"query": "打开空调", "explain": "yes"}]
    rows = [row for row in rows if invalid_value(row) is None]
    assert len(rows) > 400
    assert model.score(rows, values_checked=True) == model.score(rows)
