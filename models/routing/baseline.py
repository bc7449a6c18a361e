"""The plain baseline every routing feature and rule is measured against: character n-gram tf-idf and a
logistic regression over the primary reason code, trained on the router's own rows.

It is a yardstick, not a served model: training fits it beside the router and prints its figures next to
the router's on every evaluation set (``comparison_table``); it is never saved in the model bundle.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from fastslow.features.text import as_fields
from fastslow.models.routing.metrics import name_width
from fastslow.models.taxonomy import CODE_LABEL, label_of


def row_text(item) -> str:
    """A row as one string: its query, its endpoint and the texts of its earlier turns, space-separated
    (a raw string is a query without endpoint or context)."""
    query, context, endpoint = as_fields(item)
    return " ".join(part for part in (query, endpoint, *(turn.get("text") for turn in context)) if part)


class PlainBaseline(BaseEstimator, ClassifierMixin):
    """``TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), sublinear_tf=True)`` over ``row_text`` →
    ``LogisticRegression(C=10)`` over the primary reason codes; the label is the code's group in the
    taxonomy. No lexicon, segmenter, context state, spoken stripping, temperature or hard rule.

    ``solver="newton-cg"``: the same objective as the default lbfgs, reached in a few Newton steps; on the
    router's ~27k rows it lands nearer the optimum than lbfgs at the same tolerance, in under half its time.
    """

    def __init__(self, ngram_range=(1, 3), C=10.0, solver="newton-cg", max_iter=1000, random_state=0):
        self.ngram_range = ngram_range
        self.C = C
        self.solver = solver
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X, y):
        y = np.asarray(y, dtype=object)
        unknown = sorted(set(y) - set(CODE_LABEL))
        if unknown:
            raise ValueError(f"unknown reason codes in y: {unknown}")
        pipeline = Pipeline([
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=tuple(self.ngram_range), sublinear_tf=True)),
            ("classify", LogisticRegression(C=self.C, solver=self.solver, max_iter=self.max_iter,
                                            random_state=self.random_state)),
        ])
        # one BLAS thread: on the training corpus the threaded fit took 13.5 s of CPU and 25 s of wall time
        # against 8 s and 10 s on one thread (its matrices are too small to share out)
        with threadpool_limits(1):
            self.pipeline_ = pipeline.fit([row_text(x) for x in X], y)
        self.classes_ = self.pipeline_.classes_
        return self

    def predict_proba(self, X) -> np.ndarray:
        check_is_fitted(self)
        return self.pipeline_.predict_proba([row_text(x) for x in X])

    def predict(self, X) -> np.ndarray:
        """The most probable primary reason code of each row."""
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def predict_label(self, X) -> np.ndarray:
        """The label of each row: the group of its predicted code (``taxonomy.label_of``)."""
        return np.array([label_of(code) for code in self.predict(X)], dtype=object)

    def records(self, X) -> list[dict]:
        """``{"label", "primary_reason_code", "confidence"}`` per row, as ``routing.metrics.evaluate`` reads a
        record (the confidence is the code's probability, not temperature-scaled)."""
        proba = self.predict_proba(X)
        best = proba.argmax(axis=1)
        return [{"label": label_of(self.classes_[i]), "primary_reason_code": self.classes_[i],
                 "confidence": float(p[i])} for i, p in zip(best, proba)]


def comparison_table(evaluations, baseline: dict) -> str:
    """Label and primary-code accuracy of the router (its ``evaluations``) and of the baseline (``baseline``:
    the same metric names behind ``baseline_``), one line a set. Δ is router minus baseline: what the
    router's features and rules add over the plain baseline fitted on the same rows."""
    w = name_width(evaluations)
    head = (f"{'set':<{w}}{'router label':>14}{'baseline label':>16}{'Δ':>8}"
            f"{'router code':>13}{'baseline code':>15}{'Δ':>8}")
    lines = [head, "-" * len(head)]
    for ev in evaluations:
        line = f"{ev.name:<{w}}"
        for what, width in (("label", 16), ("code", 15)):
            key = f"{ev.name}_{what}_accuracy"
            mine, plain = ev.metrics[key], baseline[f"baseline_{key}"]
            line += f"{mine:>{width - 2}.3f}{plain:>{width}.3f}{mine - plain:>+8.3f}"
        lines.append(line)
    return "\n".join(lines)
