"""The fast paths give what their definitions give: one row scores as it scores in a batch, the memo changes
no record, and the logits and row softmax are scikit-learn's and scipy's. Behaviour as a whole is
pinned by the records snapshot (tests/test_records.py); these checks hold each path to a live definition."""

import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_queries, bundled_rows, bundled_subqueries
from fastslow.cli import main
from fastslow.data.io import bad_json_value, has_surrogate, json_clean
from fastslow.features import extractors
from fastslow.models.pipeline import Memo
from fastslow.models.routing import router as router_module
from fastslow.models.scoring import score_chunk

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


# ---- the model as a whole: one row, a batch, the memo

def test_a_row_scored_alone_gets_the_record_it_gets_in_a_batch(model):
    """The server scores one query at a time (single-row paths of the router, intents and tagger), a batch
    file many at once: the same record for every bundled dev and fixture row."""
    rows = bundled_rows((*ROUTING_FILES[:2], *AUTOMATION_FILES[:2]))
    assert len(rows) > 500
    batch = model.score(rows)
    assert [model.score([row])[0] for row in rows] == batch


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


def test_fastslow_score_memo_writes_the_same_file(trained, tmp_path):
    source = tmp_path / "log.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS * 2), encoding="utf-8")
    outputs = []
    for extra in ([], ["--memo"], ["--memo", "3"]):
        out = tmp_path / f"out{len(outputs)}.jsonl"
        assert main(["score", str(source), "-o", str(out), "--model", str(trained["path"]), "--jobs", "1", *extra]) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1] == outputs[2]


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


# ---- the router: its logits are the fitted scikit-learn pipeline's

def test_the_routers_logits_are_the_fitted_pipelines_on_every_bundled_query(model):
    """The router's logits against their definition (the pipeline's feature union times the coefficients):
    the same numbers but for the last bits of rounding (products and sums in another order)."""
    router = model.router
    utterances = router.utterances(bundled_queries(ROUTING_FILES))
    logits = router.decision_function(utterances)
    reference = router.pipeline_.named_steps["classify"].decision_function(
        router.pipeline_.named_steps["features"].transform(utterances))
    np.testing.assert_allclose(logits, reference, rtol=0, atol=1e-12)
    assert np.array_equal(logits.argmax(axis=1), reference.argmax(axis=1))


def test_one_querys_logits_are_the_batchs_bit_for_bit(model):
    router = model.router
    queries = ["上车时打开空调", "我好冷", "导航去公司然后播放音乐", "帮我规划一下周末去哪玩", "第二个", "ＳＵ７支持哪些模式？",
               "好的好的好的", ""]
    batch = router.decision_function(queries)
    assert np.array_equal(np.vstack([router.decision_function([q]) for q in queries]), batch)
    assert np.array_equal(router.decision_function(queries[:3]), batch[:3])


def test_row_softmax_is_scipys_softmax_bit_for_bit(model):
    from scipy.special import softmax

    router = model.router
    scaled = router.decision_function(["上车时打开空调", "我好冷", "导航去公司然后播放音乐", "第二个", "今天天气怎么样"])
    scaled /= router.temperature_
    assert np.array_equal(router_module.row_softmax(scaled), softmax(scaled, axis=1))
    assert np.array_equal(router_module.row_softmax(scaled[:1]), softmax(scaled[:1], axis=1))


def route_fields(route) -> tuple:
    """Every field of a ``Route``, ``alternatives`` too (equality leaves it out)."""
    import dataclasses

    return (*dataclasses.astuple(route), route.alternatives)


@pytest.mark.parametrize("floor", [0.0, 0.9])
def test_a_query_routed_alone_is_routed_as_in_a_batch_on_every_bundled_query(model, monkeypatch, floor):
    """A floor under 快 of 0.9 sends many rows through the floor."""
    router = model.router
    monkeypatch.setattr(router, "fast_min_probability", floor)
    utterances = router.utterances(bundled_queries(ROUTING_FILES))
    batch = router.route(utterances)
    singles = [router.route([u])[0] for u in utterances]
    assert [route_fields(r) for r in singles] == [route_fields(r) for r in batch]
    assert router.route(utterances[:3]) == batch[:3]
    assert any(len(r.reason_codes) > 1 for r in batch)
    if floor:
        assert any(r.label != "快" and r.alternatives["快"] > max(v for k, v in r.alternatives.items() if k != "快")
                   for r in batch)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab空调 ，1", max_size=12), st.integers(1, 3), st.integers(1, 4))
def test_char_ngrams_are_every_slice_by_size(text, low, high):
    want = list(text) if low == 1 else []
    for size in range(max(2, low), high + 1):
        want += [text[i: i + size] for i in range(len(text) - size + 1)]
    assert extractors.char_ngrams(text, low, high) == want


# ---- intents: one subquery as a batch, the memo, and the prediction's definition

def test_intent_scores_of_a_batch_are_each_subquerys_alone_and_the_fitted_models(model):
    """The same floats for a batch and each subquery alone, and the fitted vectorizer and model's up to rounding."""
    from fastslow.models.automation.rules import lowered

    intents = model.automation.intents_
    subqueries = sorted(bundled_subqueries())[:300]
    batch = intents.decision_function(subqueries)
    assert np.array_equal(np.vstack([intents.decision_function([s]) for s in subqueries]), batch)
    lows = [lowered(s) for s in subqueries]
    np.testing.assert_allclose(batch, intents.model_.decision_function(intents._features(lows)), rtol=0, atol=1e-5)


def test_intents_one_by_one_are_the_batchs_with_and_without_the_memo(model):
    """``predict`` keeps a memo of the subqueries it answered (never pickled: a copy starts empty)."""
    subqueries = bundled_subqueries()
    assert len(subqueries) > 100
    batch = pickle.loads(pickle.dumps(model.automation.intents_))
    single = pickle.loads(pickle.dumps(model.automation.intents_))
    want = batch.predict(subqueries)
    assert [single.predict([s])[0] for s in subqueries] == want
    assert batch.predict(subqueries) == want  # now from the memo


def test_an_intent_is_the_best_class_resolved_by_the_rules_on_every_bundled_subquery(model):
    from fastslow.models.automation.intents import resolve_intent

    intents = pickle.loads(pickle.dumps(model.automation.intents_))
    subqueries = bundled_subqueries()
    best = intents.decision_function(subqueries).argmax(axis=1)
    want = [resolve_intent(s, str(intents.classes_[k]), intents.lexicons_) for s, k in zip(subqueries, best)]
    assert intents.predict(subqueries) == want


def test_an_unfitted_estimator_still_says_so():
    from sklearn.exceptions import NotFittedError

    from fastslow.models.automation.intents import IntentClassifier
    from fastslow.models.automation.parser import AutomationParser

    with pytest.raises(NotFittedError):
        router_module.Router().route(["打开空调"])
    with pytest.raises(NotFittedError):
        AutomationParser().parse("上车时打开空调")
    with pytest.raises(NotFittedError):
        IntentClassifier().decision_function(["打开空调"])


# ---- text: the parser's surface, matchers, the condition signal

def test_matcher_find_gives_a_new_list_each_call_and_the_same_matches_after_pickling(model):
    devices = model.automation.lexicons_.device_kinds
    text = "打开座椅加热和主驾空调"
    first = devices.find(text)
    again = devices.find(text)
    assert first == again and first is not again  # a new list each time: a caller may change it
    again.append(None)
    assert devices.find(text) == first
    assert first  # the text holds device names: the comparisons below compare matches
    assert pickle.loads(pickle.dumps(devices)).find(text) == first


def automation_lexicons():
    from fastslow.features.automation_lexicons import load_automation_lexicons

    return load_automation_lexicons()


AUTO = automation_lexicons()
TEXTS = st.text(alphabet="".join(sorted({c for w in AUTO.signal.terms[:200] for c in w})) + "空调打开一二三12:%，。 ",
                max_size=24)
SIGNAL_WORDS = st.lists(st.sampled_from(sorted({*AUTO.signal.terms, "空调", "打开"})), max_size=4).map("".join)
NAMED = st.lists(st.sampled_from(sorted({*list(AUTO.positions.category)[:60], *list(AUTO.device_kinds.category)[:80],
                                         *(AUTO.directions.category if AUTO.directions else ()),
                                         *AUTO.signal.terms[:150], "后", "前", "时", "十分钟", "3点", "打开"})),
                 max_size=5).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXTS, SIGNAL_WORDS, st.tuples(TEXTS, SIGNAL_WORDS, TEXTS).map("".join)))
def test_the_signal_automaton_answers_as_the_signal_pattern(text):
    assert AUTO.signal.terms  # a freshly loaded signal has its terms: the automaton path runs
    assert AUTO.signal(text) == (AUTO.signal.pattern.search(text) is not None)


@settings(max_examples=400, deadline=None)
@given(st.one_of(NAMED, TEXTS, st.tuples(NAMED, TEXTS).map("".join)))
def test_a_text_without_any_signal_has_none_after_blanking_its_names(text):
    from fastslow.models.automation import rules

    assert rules.has_condition_signal(text, AUTO) == AUTO.signal(rules.signal_text(text, AUTO))


# ---- the rules' early answers and the memo of a text

def bundled_automation_texts(model) -> list[str]:
    from fastslow.models.automation.parser import surface_of

    rows = bundled_rows((*AUTOMATION_FILES[:2], ROUTING_FILES[0]))
    return sorted(t for t in {surface_of(r["query"], model.automation.lexicons_) for r in rows} if t)


def test_command_cuts_answer_early_only_where_no_cut_can_be(model):
    """command_cuts answers [] without its search when a text has no room for two commands, no cut-point word
    where a cut could be, or no command word on one side; every plain command holds a command word, and every
    cut lies where such a word begins with one on each side: so the early answers lose no cut. Checked on every
    bundled text and each of its prefixes and suffixes, against ``is_plain_command`` and the matchers."""
    from fastslow.models.automation import rules

    lex = model.automation.lexicons_
    points = [lex.positions, lex.device_kinds]
    texts = bundled_automation_texts(model) + ["关掉客厅的灯打开扫地机器人", "打开空调关窗", "打开空调关闭车窗"]
    cut_somewhere = 0
    for text in texts:
        for part in {text, *(text[:k] for k in range(1, len(text))), *(text[k:] for k in range(1, len(text)))}:
            if rules.is_plain_command(part, lex):
                assert rules.may_hold_command(part, lex), part
            low = rules.lowered(part)
            starts = {a for m in points for a, *_ in m.find(low)} | {a for a, _, kind in rules.plain_breaks(low, lex)
                                                                    if kind == "break"}
            starts |= {a for a, b, _, cat in lex.action_verbs.find(low) if b - a >= 2 and cat in rules.COMMAND_START_KINDS}
            names = {a for m in points for a, *_ in m.find(low)}
            # 开 or 关 right before a name (开灯|关窗): the name one character on is the cut-point word
            before_name = {a for a, b, _, cat in lex.action_verbs.find(low) if b in names and cat in rules.COMMAND_START_KINDS}
            for p in starts:
                assert lex.cut_point_words.search(low, p).start() == p, (part, p)  # a cut-point word begins there
            for p in before_name - starts:
                assert lex.cut_point_words.search(low, p).start() == p + 1, (part, p)
            for c in rules.command_cuts(part, lex):
                assert 2 <= c <= len(part) - 2 and c in starts | before_name, (part, c)  # a command is two characters or more
                assert rules.may_hold_command(part[:c], lex) and rules.may_hold_command(part[c:], lex), (part, c)
        cut_somewhere += bool(rules.command_cuts(text, lex))
    assert cut_somewhere > 0


def test_the_lexicons_early_answer_tables_say_what_their_matchers_find(model):
    """The tables the rules read to answer early (``AutomationLexicons.__post_init__``) against the word classes
    they come from: where a table finds nothing, neither does any matcher it stands for, on every bundled text,
    each of its prefixes and suffixes and a few made-up ones."""
    from fastslow.models.automation import rules

    lex = AUTO
    suffixes = lambda low, short: [(a, b) for a, b, t, cat in lex.triggers.find(low)
                                   if cat == "suffix" and (b - a >= 2 or t in short)]
    texts = bundled_automation_texts(model) + ["主驾座椅往后调一点", "后视镜折叠", "帮我打开空调吧", "额那个打开空调就行"]
    for text in texts:
        for part in {text, *(text[:k] for k in range(1, len(text))), *(text[k:] for k in range(1, len(text)))}:
            low = rules.lowered(part)
            if lex.signal_names.search(low) is None:
                assert rules.signal_text(part, lex) == low and not lex.positions.find(low), part
                assert not lex.directions.find(low) and not any(h[2] in lex.signal_devices
                                                                for h in lex.device_kinds.find(low)), part
            if lex.command_words.search(low) is None:
                assert not (lex.action_verbs.find(low) or lex.reminder_verbs.find(low) or lex.memo.find(low)), part
            if lex.long_suffix_words.search(low) is None:
                assert not suffixes(low, ()), part
            if lex.cutting_suffix_words.search(low) is None:
                assert not suffixes(low, ("时",)), part
            if lex.action_cut_words.search(low) is None:
                assert not (suffixes(low, ()) or lex.scope_end.find(low) or lex.breaks.find(low)), part
            head = lex.fillers.prefix(low)
            if head in lex.filler_prefixes:
                assert low[0] in lex.filler_firsts, part
            if lex.fillers.category.get(head) == "hesitation":
                assert low[0] in lex.hesitation_firsts, part
            if any(low.endswith(t) for t in lex.filler_suffixes | lex.filler_soft):
                assert low[-1] in lex.filler_lasts, part
            if any(a == 0 for a, *_ in lex.device_kinds.find(low) + lex.positions.find(low)):
                assert low[0] in lex.name_firsts, part


def test_a_text_memo_pickles_empty_and_clear_memos_reaches_every_memo():
    from fastslow.features.memo import TextMemo, clear_memos

    memo, other = TextMemo(2), TextMemo(2)
    memo["c"] = 3
    other["a"] = 1
    copy = pickle.loads(pickle.dumps(memo))
    assert isinstance(copy, TextMemo) and copy == {} and copy.size == 2
    clear_memos()
    assert memo == {} and other == {}


# ---- JSON values: what the record cannot hold is what json and UTF-8 refuse

JSON_LEAF = (st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4)
             | st.sampled_from(["a\ud800", "\udfff", "打开空调"]))
JSON_VALUE = st.recursive(JSON_LEAF, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=3) | st.sampled_from(["\udc00k"]), inner, max_size=4),
                          max_leaves=20)


def writable(value) -> bool:
    """The definition: strict JSON (no NaN or infinity) that encodes as UTF-8 (no lone surrogate)."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return False
    return True


@settings(max_examples=500)
@given(JSON_VALUE)
def test_a_json_value_is_clean_exactly_when_json_and_utf8_can_write_it(value):
    assert json_clean(value) == writable(value) == (bad_json_value(value, "row") is None)


@given(st.text(max_size=12))
def test_has_surrogate_is_a_test_of_every_character(text):
    assert has_surrogate(text) == any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)
