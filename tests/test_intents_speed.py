"""The intent classifier's batch path gives what its plain definition gives: the tf-idf entries of a batch from
the subqueries' code points (``FusedCharTfidf.batch_texts``) are ``FusedTfidf.batch`` of their ``_grams``, bit
for bit, on every bundled subquery and on random texts (no timings are asserted)."""

from __future__ import annotations


import numpy as np
from hypothesis import given, settings, strategies as st

from conftest import bundled_subqueries

from fastslow.features.extractors import FusedCharTfidf, FusedTfidf
from fastslow.models.automation.rules import lowered

def plain_tfidf(intents) -> FusedTfidf:
    """The tf-idf block as the definition: ``FusedTfidf`` with the classifier's own vocabulary."""
    tfidf = intents._fused()[0]
    return FusedTfidf(intents.vocabulary_, intents.idf_, intents.vectorizer_.sublinear_tf, absent=tfidf.absent)


def assert_same_entries(got, want):
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_the_intent_batch_counts_grams_from_code_points_as_from_its_grams(model):
    intents = model.automation.intents_
    assert isinstance(intents._fused()[0], FusedCharTfidf)  # the plain character analyzer of (1, 3)
    lows = [lowered(s) for s in bundled_subqueries()]
    assert len(lows) > 100
    plain = plain_tfidf(intents)
    for batch in (lows[:7], lows[:500], lows):
        assert_same_entries(intents._batch_tfidf(intents._fused()[0], batch),
                            plain.batch([intents._grams(low) for low in batch]))


def test_the_intent_scores_of_a_batch_are_their_scores_one_by_one_bit_for_bit(model):
    intents = model.automation.intents_
    subqueries = bundled_subqueries()[:300]
    batch = intents.decision_function(subqueries)
    one_by_one = np.vstack([intents.decision_function([s]) for s in subqueries])
    assert np.array_equal(np.signbit(batch), np.signbit(one_by_one)) and np.array_equal(batch, one_by_one)


TEXT = st.text(alphabet=["打", "开", "空", "调", " ", "\t", "\u3000", "a", "1", "，", "\U0001F600", "\U0010FFFF"],
               max_size=14)


def test_the_intent_batch_of_random_texts_is_the_batch_of_their_grams(model):
    """White space runs (collapsed before the grams), characters outside the BMP (the largest code point as
    the trigrams' base), empty texts, repeated grams."""
    intents = model.automation.intents_
    fused, plain = intents._fused()[0], plain_tfidf(intents)
    subqueries = [lowered(s) for s in bundled_subqueries()]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.one_of(TEXT, st.sampled_from(subqueries)), max_size=12))
    def check(lows):
        assert_same_entries(intents._batch_tfidf(fused, lows), plain.batch([intents._grams(low) for low in lows]))

    check()


def plain_keyword_intent(subquery, taxonomy, lex, control=False) -> str:
    """``keyword_intent`` as written before its stages: the taxonomy in priority order, the rule at each control intent."""
    from fastslow.models.automation.intents import CONTROL_INTENTS, OTHER, control_intent

    low = lowered(subquery)
    for intent, pattern in zip(taxonomy.intents, taxonomy.keywords):
        if intent in CONTROL_INTENTS:
            if control is False:
                control = control_intent(subquery, lex)
            if control:
                return control
        if pattern is not None and pattern.search(low):
            return intent
    return OTHER


def test_the_keyword_guess_in_stages_is_the_loop_over_the_taxonomy(model):
    import pickle

    from fastslow.models.automation.intents import IntentTaxonomy, control_intent, keyword_intent

    intents = model.automation.intents_
    lex, subqueries = intents.lexicons_, bundled_subqueries()
    taxonomy = IntentTaxonomy.load()
    assert taxonomy.keyword_stages and "keyword_stages" in taxonomy.__dict__
    assert "keyword_stages" not in pickle.loads(pickle.dumps(taxonomy)).__dict__  # built on first use, never pickled
    for t in (intents.taxonomy_, taxonomy, IntentTaxonomy(taxonomy.intents[::-1], taxonomy.keywords[::-1])):
        guesses = [keyword_intent(s, t, lex) for s in subqueries]
        assert guesses == [plain_keyword_intent(s, t, lex) for s in subqueries]
        assert guesses == [keyword_intent(s, t, lex, control_intent(s, lex)) for s in subqueries]
        assert len(set(guesses)) > 5

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=list("提醒我去吗?？打开空调主驾座椅音乐导航天气蓝牙电话锁车 "), max_size=10))
    def check(text):
        assert keyword_intent(text, taxonomy, lex) == plain_keyword_intent(text, taxonomy, lex)

    check()


def test_a_matchers_categories_are_those_of_its_matches(model):
    lex = model.automation.lexicons_
    texts = [lowered(s) for s in bundled_subqueries()] + ["", "打开主驾空调和电视", "播放音乐"]
    for matcher in (lex.device_kinds, lex.positions):
        found = [matcher.categories(t) for t in texts]
        assert found == [{category for *_, category in matcher.find(t)} for t in texts]
        assert sum(bool(f) for f in found) > 10
