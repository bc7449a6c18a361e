"""The router's single-query path (a few rows: lists, one gather) gives the batch path's floats bit for bit, on
every bundled routing query and every subquery (no timings are asserted; see benchmarks/)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_queries, bundled_subqueries
from fastslow.features.extractors import FusedCharTfidf, char_ngrams
from fastslow.models.routing import router as router_module


def test_single_query_logits_and_probabilities_are_the_batchs_on_every_bundled_text(model):
    router = model.router
    utterances = router.utterances(bundled_queries(ROUTING_FILES + AUTOMATION_FILES) + bundled_subqueries())
    assert len(utterances) > router_module.DENSE_ROWS
    batch = router._logits(utterances)  # the CSR product: the definition
    singles = np.vstack([router._logits([u]) for u in utterances])
    assert np.array_equal(singles, batch)
    assert np.array_equal(router._proba(utterances), np.vstack([router._proba([u]) for u in utterances]))


def test_single_document_tfidf_entries_are_the_batchs_on_every_bundled_text(model):
    router = model.router
    utterances = router.utterances(bundled_queries(ROUTING_FILES + AUTOMATION_FILES) + bundled_subqueries())
    for fused, analyse, field_name in router._fused()[0]:
        docs = [analyse(getattr(u, field_name)) for u in utterances]
        cols, values, starts = fused.batch(docs)
        ends = [*starts[1:].tolist(), len(cols)]
        for k, (u, doc) in enumerate(zip(utterances, docs)):
            want = (cols[starts[k]:ends[k]].tolist(), values[starts[k]:ends[k]].tolist())
            assert fused.entries(doc) == want
            if isinstance(fused, FusedCharTfidf):
                assert fused.text_entries(u.text) == want


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abc空调 ，1", max_size=14), st.sampled_from([(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 3)]),
       st.booleans())
def test_char_entries_from_the_text_are_the_entries_of_its_char_ngrams(text, ngram_range, sublinear):
    vocabulary = {g: i for i, g in enumerate(["a", "b", "空", "调", "ab", "空调", "调 ", "aba", "空调，", " "])}
    idf = [1.0 + i / 7 for i in range(len(vocabulary))]
    fused = FusedCharTfidf(vocabulary, idf, sublinear, 3, None, *ngram_range)
    assert fused.text_entries(text) == fused.entries(char_ngrams(text, *ngram_range))


def test_an_endpoints_column_is_the_one_of_its_name_and_any_other_is_unknowns():
    from fastslow.features import EndpointFeatures
    from fastslow.features.text import Utterance

    fitted = EndpointFeatures().fit()
    names = fitted.get_feature_names_out().tolist()
    for endpoint in ("car", "speaker", "home", "unknown", None):
        u = Utterance(text="好", tokens=("好",), endpoint=endpoint)
        want = names.index(f"endpoint:{endpoint or 'unknown'}")
        assert fitted.row(u) == {want: 1.0}
        indices: list = []
        fitted.append_row(u, 5, indices, [])
        assert indices == [5 + want]
