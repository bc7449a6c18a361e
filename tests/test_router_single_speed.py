"""The router's single-query path (a few rows: lists, one gather) gives the batch path's floats bit for bit, on
every bundled routing query and every subquery (no timings are asserted; see benchmarks/)."""

from __future__ import annotations

import numpy as np

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_queries, bundled_subqueries
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
        for k, doc in enumerate(docs):
            assert fused.entries(doc) == (cols[starts[k]:ends[k]].tolist(), values[starts[k]:ends[k]].tolist())
