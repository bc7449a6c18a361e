"""The plain baseline: a scikit-learn estimator that is exactly char n-gram tf-idf + logistic regression over
the primary reason code, labels from the taxonomy, and its figures logged beside the router's every run."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from conftest import bundled_rows
from fastslow.models.routing.baseline import PlainBaseline, comparison_table, row_text
from fastslow.models.taxonomy import CODE_LABEL

#: a few reason codes of the hand-written core, so that some codes of the dev set are never seen in training
SOME_CODES = ("DIRECT_ACTION", "MULTI_STEP_PLANNING", "OPEN_CHAT_OR_QA", "CONTEXT_REQUIRED")


@pytest.fixture(scope="module")
def core():
    return bundled_rows(["data/train/core.jsonl"])


@pytest.fixture(scope="module")
def dev():
    return bundled_rows(["data/dev/routing_dev.jsonl"])


@pytest.fixture(scope="module")
def fitted(core):
    return PlainBaseline().fit(core, [r["primary_reason_code"] for r in core])


def codes(rows):
    return [r["primary_reason_code"] for r in rows]


def test_row_text_is_the_query_the_endpoint_and_the_earlier_turns():
    row = {"query": "打开它", "endpoint": "car",
           "context": [{"role": "user", "system": None, "text": "导航去公司"},
                       {"role": "assistant", "system": "fast", "text": "好的"}]}
    assert row_text(row) == "打开它 car 导航去公司 好的"
    assert row_text({"query": "打开空调", "endpoint": None, "context": []}) == "打开空调"
    assert row_text("打开空调") == "打开空调"


def test_clone_gives_an_unfitted_estimator_with_the_same_hyper_parameters():
    baseline = PlainBaseline(C=3.0, ngram_range=(1, 2), random_state=7)
    copy = clone(baseline)
    assert copy.get_params() == baseline.get_params()
    assert not hasattr(copy, "pipeline_")


def test_fit_returns_the_estimator_itself(core):
    baseline = PlainBaseline()
    assert baseline.fit(core[:300], codes(core[:300])) is baseline


def test_it_is_the_tfidf_and_logistic_regression_scikit_learn_defines(core, dev, fitted):
    """The estimator adds nothing to the two library steps it names: the same probabilities."""
    reference = make_pipeline(
        TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), sublinear_tf=True),
        LogisticRegression(C=10.0, solver="newton-cg", max_iter=1000, random_state=0),
    ).fit([row_text(r) for r in core], codes(core))
    np.testing.assert_allclose(fitted.predict_proba(dev), reference.predict_proba([row_text(r) for r in dev]))


def test_it_predicts_only_codes_seen_in_training(core, dev):
    some = [r for r in core if r["primary_reason_code"] in SOME_CODES]
    baseline = PlainBaseline().fit(some, codes(some))
    assert set(baseline.classes_) == set(SOME_CODES)
    assert set(codes(dev)) - set(SOME_CODES), "the dev set must hold codes the baseline never saw"
    assert set(baseline.predict(dev)) <= set(SOME_CODES)


def test_labels_are_the_taxonomy_groups_of_the_predicted_codes(dev, fitted):
    predicted = fitted.predict(dev)
    assert list(fitted.predict_label(dev)) == [CODE_LABEL[c] for c in predicted]
    records = fitted.records(dev)
    assert [r["primary_reason_code"] for r in records] == list(predicted)
    assert [r["label"] for r in records] == [CODE_LABEL[c] for c in predicted]
    assert all(0.0 < r["confidence"] <= 1.0 for r in records)


def test_an_unknown_reason_code_is_refused(core):
    with pytest.raises(ValueError, match="NOT_A_CODE"):
        PlainBaseline().fit(core[:2], ["DIRECT_ACTION", "NOT_A_CODE"])


def test_fitting_twice_on_the_same_rows_gives_the_same_probabilities(core, dev, fitted):
    again = PlainBaseline().fit(core, codes(core))
    assert np.array_equal(again.predict_proba(dev), fitted.predict_proba(dev))


def test_the_table_shows_router_minus_baseline_per_set():
    dev_set = SimpleNamespace(name="dev", metrics={"dev_label_accuracy": 0.95, "dev_code_accuracy": 0.9})
    blind = SimpleNamespace(name="blind", metrics={"blind_label_accuracy": 0.9, "blind_code_accuracy": 0.8})
    baseline = {"baseline_dev_label_accuracy": 0.9, "baseline_dev_code_accuracy": 0.92,
                "baseline_blind_label_accuracy": 0.9, "baseline_blind_code_accuracy": 0.75}
    lines = comparison_table([dev_set, blind], baseline).splitlines()
    assert lines[0].split() == ["set", "router", "label", "baseline", "label", "Δ",
                                "router", "code", "baseline", "code", "Δ"]
    assert lines[2].split() == ["dev", "0.950", "0.900", "+0.050", "0.900", "0.920", "-0.020"]
    assert lines[3].split() == ["blind", "0.900", "0.900", "+0.000", "0.800", "0.750", "+0.050"]


def test_training_logs_the_baseline_beside_the_router_on_every_evaluation_set(trained):
    """The run's MLflow metrics hold baseline_<set>_label_accuracy and _code_accuracy for every set the
    router is scored on except its own training rows, each a real number in [0, 1]."""
    from mlflow.tracking import MlflowClient

    logged = MlflowClient(trained["tracking_uri"]).get_run(trained["run_id"]).data.metrics
    sets = {key.removesuffix("_label_accuracy") for key in logged
            if key.endswith("_label_accuracy") and not key.startswith(("baseline_", "automation_"))} - {"train"}
    assert {"fixture", "dev", "calibration", "blind"} <= sets
    expected = {f"baseline_{name}_{what}_accuracy" for name in sets for what in ("label", "code")}
    assert expected == {key for key in logged if key.startswith("baseline_") and key.endswith("_accuracy")}
    for key in sorted(expected):
        assert math.isfinite(logged[key]) and 0.0 <= logged[key] <= 1.0, key
        assert trained["baseline_metrics"][key] == pytest.approx(logged[key]), key


def test_the_saved_model_does_not_carry_the_baseline(trained):
    assert not [name for name, value in vars(trained["model"]).items() if isinstance(value, PlainBaseline)]
