"""The XA4.1 router: one estimator that predicts the reason code and derives the label from its group."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.utils.validation import check_is_fitted

from features import (
    ActionLexicon, CharNgrams, Connectors, ContextFeatures, Demonstratives, DeviceLexicon,
    EndpointFeatures, NumbersUnits, QuestionMarkers, SceneWords, Segmenter, SensationWords,
    TriggerMarkers, WordTokens,
)
from models.rules import Route
from models.taxonomy import CODE_LABEL, LABELS

DEVICE_CATEGORIES = ("car_device", "home_device")


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """Temperature scaling (Guo et al. 2017): the T minimising the NLL of softmax(logits / T)."""

    def nll(t):
        return -log_softmax(logits / t, axis=1)[np.arange(len(y)), y].mean()

    return float(minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded").x)


class Router(BaseEstimator, ClassifierMixin):
    """Segmenter → feature union → multinomial logistic regression over the 17 reason codes.

    The label is the group (快/慢/模糊) with the largest summed probability, the primary code the
    most probable code inside that group, so label and code can never disagree. Probabilities are
    temperature-scaled on out-of-fold predictions so that ``confidence`` means what it says.
    """

    def __init__(self, C=8.0, char_ngram_range=(1, 3), word_max_n=2, class_weight="balanced",
                 calibration_folds=3, secondary_threshold=0.2, max_iter=3000, random_state=0):
        self.C = C
        self.char_ngram_range = char_ngram_range
        self.word_max_n = word_max_n
        self.class_weight = class_weight
        self.calibration_folds = calibration_folds
        self.secondary_threshold = secondary_threshold
        self.max_iter = max_iter
        self.random_state = random_state

    def _features(self):
        return FeatureUnion([
            ("chars", CharNgrams(ngram_range=self.char_ngram_range)),
            ("words", WordTokens(max_n=self.word_max_n)),
            ("triggers", TriggerMarkers()),
            ("sensations", SensationWords()),
            ("scenes", SceneWords()),
            ("devices", DeviceLexicon()),
            ("actions", ActionLexicon()),
            ("questions", QuestionMarkers()),
            ("connectors", Connectors()),
            ("demonstratives", Demonstratives()),
            ("numbers", NumbersUnits()),
            ("context", ContextFeatures()),
            ("endpoint", EndpointFeatures()),
        ])

    def _classifier(self):
        return LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter,
                                  random_state=self.random_state)

    def fit(self, X, y):
        y = np.asarray(y, dtype=object)
        unknown = sorted(set(y) - set(CODE_LABEL))
        if unknown:
            raise ValueError(f"unknown reason codes in y: {unknown}")
        segmenter = Segmenter().fit()
        utterances = segmenter.transform(X)  # segment once; the pipeline passes Utterances through
        model = Pipeline([("features", self._features()), ("classify", self._classifier())])
        self.pipeline_ = Pipeline([("segment", segmenter), *clone(model).fit(utterances, y).steps])
        self.classes_ = self.pipeline_.classes_
        self.class_labels_ = np.array([CODE_LABEL[c] for c in self.classes_], dtype=object)
        self.temperature_ = 1.0
        if self.calibration_folds and self.calibration_folds >= 2:
            folds = StratifiedKFold(self.calibration_folds, shuffle=True, random_state=self.random_state)
            logits = cross_val_predict(clone(model), utterances, y, cv=folds, method="decision_function")
            y_index = np.searchsorted(self.classes_, y)
            self.temperature_ = fit_temperature(logits, y_index)
        devices = self.pipeline_.named_steps["features"].get_params()["devices"]
        self.device_columns_ = [i for i, c in enumerate(devices.lexicon_.categories) if c in DEVICE_CATEGORIES]
        return self

    @property
    def segmenter(self) -> Segmenter:
        check_is_fitted(self)
        return self.pipeline_.named_steps["segment"]

    def utterances(self, X):
        return self.segmenter.transform(X)

    def predict_proba(self, X):
        check_is_fitted(self)
        return softmax(self.pipeline_.decision_function(X) / self.temperature_, axis=1)

    def predict(self, X):
        return [r.primary_reason_code for r in self.route(X)]

    def route(self, X) -> list[Route]:
        """A ``Route`` per input (raw strings, input dicts or ``Utterance`` objects)."""
        check_is_fitted(self)
        utterances = self.utterances(X)
        proba = self.predict_proba(utterances)
        devices = self.pipeline_.named_steps["features"].get_params()["devices"].lexicon_
        routes = []
        for u, p in zip(utterances, proba):
            by_label = {label: float(p[self.class_labels_ == label].sum()) for label in LABELS}
            label = max(LABELS, key=by_label.__getitem__)
            in_group = np.where(self.class_labels_ == label, p, -1.0)
            order = np.argsort(-p)
            primary = self.classes_[int(np.argmax(in_group))]
            secondary = [self.classes_[i] for i in order
                         if p[i] >= self.secondary_threshold and self.classes_[i] != primary]
            hits = devices.match(u.tokens, u.charset, u.text)
            routes.append(Route(
                text=u.text, label=label, primary_reason_code=str(primary),
                reason_codes=(str(primary), *map(str, secondary)),
                confidence=round(by_label[label], 4),
                device_control=any(col in hits for col in self.device_columns_),
                alternatives={k: round(v, 4) for k, v in by_label.items()},
            ))
        return routes
