"""The XA4.1 router: one estimator that predicts the reason code and derives the label from its group."""

from __future__ import annotations


import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.utils.validation import check_is_fitted

from fastslow.features import (
    ActionLexicon, AutomationParse, CharNgrams, Connectors, ContextFeatures, Demonstratives, DeviceLexicon,
    EndpointFeatures, ExplicitTarget, NumbersUnits, QuestionMarkers, SceneWords, Segmenter, SensationWords,
    TriggerMarkers, WhereItRuns, WordTokens,
)
from fastslow.features.extractors import LexiconFeatures, TfidfFeatures, linear_scores, require_fitted, side_by_side
from fastslow.features.lexicon import Matcher
from fastslow.features.references import BuiltinFunctions, EntityReferences
from fastslow.models.routing.rules import Route
from fastslow.models.taxonomy import CODE_LABEL, FAST, LABELS

DEVICE_CATEGORIES = ("car_device", "home_device")
#: devices.txt categories of what is not a device: content, places, apps (an elliptical control names none)
OTHER_DOMAIN_CATEGORIES = ("media", "navigation", "poi", "app")
#: actions.txt categories of a control verb
CONTROL_ACTIONS = ("on", "off", "adjust")
#: devices.txt automation kinds that are no device to control: content (歌, 新闻)
NOT_DEVICES = frozenset({"media"})


def row_softmax(x: np.ndarray) -> np.ndarray:
    """``scipy.special.softmax(x, axis=1)``, the same operations without its array-API dispatch and
    ``np.max``'s (a third of a single query's routing time): the same floats, which a test holds. The
    reductions are the ufuncs' own (what ``ndarray.max`` and ``sum`` call through a Python wrapper)."""
    shifted = np.exp(x - np.maximum.reduce(x, axis=1, keepdims=True))
    return shifted / np.add.reduce(shifted, axis=1, keepdims=True)


def fit_temperature(logits: np.ndarray, y: np.ndarray, label_of_class: np.ndarray) -> float:
    """Temperature scaling (Guo et al. 2017) for the label: the T minimising the NLL of each row's gold label, whose
    probability is the sum of its classes' in softmax(logits / T) (``label_of_class``: the label index of each
    class). A record's confidence is its label's probability; the T that fits the 17 codes' own NLL left that
    confidence below the label accuracy on nearly every held-out set (by 0.016 on average, on both seeds)."""
    labels = np.unique(label_of_class)
    members = [label_of_class == k for k in labels]
    gold = np.searchsorted(labels, label_of_class[y])

    def nll(t):
        by_code = log_softmax(logits / t, axis=1)
        by_label = np.stack([logsumexp(by_code[:, m], axis=1) for m in members], axis=1)
        return -by_label[np.arange(len(y)), gold].mean()

    return float(minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded").x)


_FAST = LABELS.index(FAST)


def fast_floor(by_label: np.ndarray, label_index: np.ndarray, floor: float) -> np.ndarray:
    """``label_index`` with 快 kept only where its probability (column of ``by_label``) is at least ``floor``;
    elsewhere the more probable of the other labels."""
    if not floor:
        return label_index
    unsure = (label_index == _FAST) & (by_label[:, _FAST] < floor)
    if not unsure.any():
        return label_index
    others = by_label.copy()
    others[:, _FAST] = -1.0
    return np.where(unsure, others.argmax(axis=1), label_index)


class Router(BaseEstimator, ClassifierMixin):
    """Segmenter → feature union → multinomial logistic regression over the 17 reason codes.

    The label is the group (快/慢/模糊) with the largest summed probability, the primary code the
    most probable code inside that group, so label and code can never disagree.

    ``fast_min_probability``: the costly error is a slow or ambiguous query answered 快, so 快 is chosen only
    when its (temperature-scaled) probability reaches this floor; below it the more probable of 慢 and 模糊
    is the label (0: plain argmax).

    Probabilities are temperature-scaled so that ``confidence`` means what it says. ``fit`` leaves the
    temperature at 1; ``calibrate`` fits it on held-out rows written apart from the training data
    (``train.py`` uses a calibration set nobody studies, see ``models.lifecycle.training.fit_temperature``).
    Out-of-fold predictions of the training data (``calibration_folds`` ≥ 2, off by default) are the
    fallback of a router fitted without such a set; they come from the same templates as the rows they
    score, so they make the router look better calibrated than it is on speech nobody on the team wrote.
    """

    def __init__(self, C=8.0, char_ngram_range=(1, 2), word_max_n=1, class_weight=None, hmm=False,
                 calibration_folds=0, secondary_threshold=0.2, max_iter=3000, random_state=0, spoken=True,
                 fast_min_probability=0.0):
        self.C = C
        self.fast_min_probability = fast_min_probability
        self.hmm = hmm
        self.spoken = spoken
        self.char_ngram_range = char_ngram_range
        self.word_max_n = word_max_n
        self.class_weight = class_weight
        self.calibration_folds = calibration_folds
        self.secondary_threshold = secondary_threshold
        self.max_iter = max_iter
        self.random_state = random_state

    def _features(self):
        return FeatureUnion([
            ("chars", CharNgrams(ngram_range=self.char_ngram_range, digits_as_said=True)),
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
            ("parse", AutomationParse()),
            ("where", WhereItRuns()),
            ("target", ExplicitTarget()),
            ("references", EntityReferences()),
            ("builtins", BuiltinFunctions()),
        ])

    def _classifier(self):
        return LogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter,
                                  random_state=self.random_state)

    def fit(self, X, y):
        y = np.asarray(y, dtype=object)
        unknown = sorted(set(y) - set(CODE_LABEL))
        if unknown:
            raise ValueError(f"unknown reason codes in y: {unknown}")
        segmenter = Segmenter(hmm=self.hmm, spoken=self.spoken).fit()
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
            self.temperature_ = fit_temperature(logits, y_index, self._label_of_class())
        self._compile()
        return self

    def calibrate(self, X, y) -> "Router":
        """Fit ``temperature_`` on held-out inputs ``X`` with gold reason codes ``y`` (rows whose code the
        router never saw in training are left out: they have no logit)."""
        check_is_fitted(self)
        y = np.asarray(y, dtype=object)
        known = np.isin(y, self.classes_)
        if not known.any():
            raise ValueError("no calibration row has a reason code the router was trained on")
        logits = self.decision_function([x for x, k in zip(X, known) if k])
        self.temperature_ = fit_temperature(logits, np.searchsorted(self.classes_, y[known]), self._label_of_class())
        return self

    def _label_of_class(self) -> np.ndarray:
        """The index in ``LABELS`` of each class's label."""
        return np.array([LABELS.index(label) for label in self.class_labels_])

    def _compile(self):
        """The inference path's learned state, derived from the fitted pipeline (pickled with it): the
        extractors with their column offsets in the order their entries are added (row by row the counts-only
        lexicons' hits, ``lexicon_blocks_``, and the other extractors, ``blocks_``; then ``tfidf_blocks_``, a batch
        at once), the classifier's coefficients as (features, classes), and what ``route`` decides with."""
        union = self.pipeline_.named_steps["features"]
        classifier = self.pipeline_.named_steps["classify"]
        # the lexicon counts first, then the other extractors, then the tf-idf blocks: the order of a row's sum
        lexicon_blocks, other_blocks, tfidf_blocks, offset = [], [], [], 0
        for _, transformer in union.transformer_list:
            if isinstance(transformer, TfidfFeatures):
                tfidf_blocks.append((transformer, offset))
            elif isinstance(transformer, LexiconFeatures) and transformer.counts_only_:
                lexicon_blocks.append((transformer.lexicon_, offset))
            else:
                other_blocks.append((transformer, offset))
            offset += transformer.n_columns
        self.n_features_ = offset
        self.lexicon_blocks_ = tuple(lexicon_blocks)  # a counts-only extractor's row is its lexicon's hits
        self.blocks_ = tuple(other_blocks)
        self.tfidf_blocks_ = tuple(tfidf_blocks)
        self.weights_ = np.ascontiguousarray(classifier.coef_.T)  # (features, classes)
        self.intercept_ = classifier.intercept_.copy()
        extractors = dict(union.transformer_list)
        self.devices_ = extractors["devices"].lexicon_
        self.device_columns_ = frozenset(
            i for i, c in enumerate(self.devices_.categories) if c in DEVICE_CATEGORIES)
        # every device devices.txt names, its columns' or not (自动启停, 靠背, 电热毯: the automation kinds), bar
        # content: a part naming one is a device control when parts are aggregated (多个明确设备控制). Found in the
        # text, not the tokens: jieba cuts a name it does not know (行车 记录仪, 自动 启 停)
        self.named_devices_ = Matcher.load(extractors["devices"].lexicon, "automation")
        # the devices.txt columns of other domains and the actions.txt columns of control verbs
        # (``Route.elliptical_control``)
        self.other_domain_columns_ = frozenset(
            i for i, c in enumerate(self.devices_.categories) if c in OTHER_DOMAIN_CATEGORIES)
        self.actions_ = extractors["actions"].lexicon_
        self.control_columns_ = frozenset(
            i for i, c in enumerate(self.actions_.categories) if c in CONTROL_ACTIONS)
        self.label_of_class_ = self._label_of_class()
        self.label_sums_ = np.eye(len(LABELS))[self.label_of_class_]  # (classes, labels): sums probability per label
        self.in_label_ = self.label_sums_.T.astype(bool)  # (labels, classes): the classes of each label
        self.class_names_ = [str(c) for c in self.classes_]

    def _entries(self, utterances) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every utterance's feature entries ``(indptr, columns, values)`` (``side_by_side``): per row, each block's
        entries in the order of ``blocks_`` (appended row by row), then each tf-idf block's (a batch at once)."""
        indices: list[int] = []
        data: list[float] = []
        ends = [0]
        lexicon_blocks, blocks, append_hits = self.lexicon_blocks_, self.blocks_, LexiconFeatures.append_hits
        for u in utterances:
            for lexicon, offset in lexicon_blocks:
                hits = lexicon.hits(u)
                if hits:  # most texts hit few of the lexicons
                    append_hits(hits, offset, indices, data)
            for transformer, offset in blocks:
                transformer.append_row(u, offset, indices, data)
            ends.append(len(indices))
        return side_by_side([(ends, indices, data),
                             *(transformer.rows(utterances, offset) for transformer, offset in self.tfidf_blocks_)])

    def features(self, utterances) -> "sp.csr_matrix":
        """The feature matrix of utterances: the values of ``pipeline_``'s union, without its per-call
        validation (each row's entries in the order ``decision_function`` adds them)."""
        indptr, columns, values = self._entries(utterances)
        return sp.csr_matrix((values, columns, indptr), shape=(len(utterances), self.n_features_))

    def decision_function(self, X):
        require_fitted(self, "pipeline_")
        return self._logits(self.utterances(X))

    def _logits(self, utterances) -> np.ndarray:
        """``features(utterances) @ weights_ + intercept_`` (the fitted pipeline's ``decision_function`` up to the
        last bits of rounding): each row's entries added in order, then the intercept (``linear_scores``)."""
        return linear_scores(self.weights_, self.intercept_, *self._entries(utterances))

    @property
    def segmenter(self) -> Segmenter:
        require_fitted(self, "pipeline_")
        return self.pipeline_.steps[0][1]  # ``fit`` puts it first

    def utterances(self, X):
        """``Utterance`` objects of raw inputs (``Utterance`` objects pass through)."""
        return self.segmenter.utterances(X)

    def predict_proba(self, X):
        require_fitted(self, "pipeline_")
        return self._proba(self.utterances(X))

    def _proba(self, utterances):
        return row_softmax(self._logits(utterances) / self.temperature_)

    def predict(self, X):
        return [r.primary_reason_code for r in self.route(X)]

    def route(self, X) -> list[Route]:
        """A ``Route`` per input (raw strings, input dicts or ``Utterance`` objects): the decision over the
        matrix of probabilities."""
        utterances = self.utterances(X)
        if not utterances:
            return []
        proba = self._proba(utterances)
        by_label = proba @ self.label_sums_  # (n, 3): summed probability per label
        label_index = fast_floor(by_label, by_label.argmax(axis=1), self.fast_min_probability)
        in_group = np.where(self.in_label_[label_index], proba, -1.0)
        primary_index = in_group.argmax(axis=1).tolist()
        others: dict[int, list[int]] = {}
        rows, columns = np.nonzero(proba >= self.secondary_threshold)
        for i, j in zip(rows.tolist(), columns.tolist()):  # few: mostly the primary codes
            if j != primary_index[i]:
                others.setdefault(i, []).append(j)
        classes = self.class_names_
        second = {i: [classes[j] for j in sorted(js, key=lambda j: -proba[i, j])] for i, js in others.items()}
        rounded = by_label.round(4).tolist()  # np.round's own method, without its wrapper (~1 µs a call)
        labels = label_index.tolist()
        return [self._decided(u, labels[i], classes[primary_index[i]], second.get(i, []), rounded[i])
                for i, u in enumerate(utterances)]

    def _decided(self, u, label: int, primary: str, second: list[str], rounded: list[float]) -> Route:
        """The ``Route`` of utterance ``u``: label (index), primary and secondary codes decided, label
        probabilities rounded."""
        device_hits = self.devices_.hits(u)
        no_device = self.device_columns_.isdisjoint(device_hits)
        # a device control is a fast one (``rules.is_explicit_device_control``): the wider list is read for no other
        # (``u.text`` is normalised, so lower case already, as the matcher reads it)
        names_device = not no_device or (LABELS[label] == FAST
                                         and bool(self.named_devices_.categories(u.text) - NOT_DEVICES))
        return Route(
            text=u.text, label=LABELS[label], primary_reason_code=primary, reason_codes=(primary, *second),
            confidence=rounded[label],
            device_control=names_device,
            alternatives=dict(zip(LABELS, rounded)),
            elliptical_control=(no_device and self.other_domain_columns_.isdisjoint(device_hits)
                                and not self.control_columns_.isdisjoint(self.actions_.hits(u))),
        )
