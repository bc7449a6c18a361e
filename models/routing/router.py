"""The XA4.1 router: one estimator that predicts the reason code and derives the label from its group."""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.utils.validation import check_is_fitted

from fastslow.features import (
    ActionLexicon, CharNgrams, Connectors, ContextFeatures, Demonstratives, DeviceLexicon,
    EndpointFeatures, ExplicitTarget, NumbersUnits, QuestionMarkers, SceneWords, Segmenter, SensationWords,
    TriggerMarkers, WordTokens,
)
from fastslow.features.extractors import (
    FusedCharTfidf, FusedTfidf, LexiconFeatures, _Tfidf, char_ngrams, csr_sums, gathered_sums, interleave,
    require_fitted,
)
from fastslow.features.references import BuiltinFunctions, EntityReferences
from fastslow.models.routing.rules import Route
from fastslow.models.taxonomy import CODE_LABEL, FAST, LABELS

DEVICE_CATEGORIES = ("car_device", "home_device")
#: devices.txt categories of what is not a device: content, places, apps (an elliptical control names none)
OTHER_DOMAIN_CATEGORIES = ("media", "navigation", "poi", "app")
#: up to this many rows, logits are computed row by row (one gather each) without a sparse matrix
DENSE_ROWS = 4
#: actions.txt categories of a control verb
CONTROL_ACTIONS = ("on", "off", "adjust")


def fused_tfidf(transformer: _Tfidf, offset: int, absent: int) -> FusedTfidf:
    """A fitted tf-idf block as ``FusedTfidf``; a ``FusedCharTfidf`` (its batch from the texts' code points) when
    its analyser is ``char_ngrams`` of unigrams and bigrams, as the router's ``CharNgrams`` is by default."""
    args = (transformer.vocabulary_, transformer.idf_, transformer.sublinear_tf, offset, absent)
    analyse = transformer.analyze_
    if isinstance(analyse, partial) and analyse.func is char_ngrams and not analyse.args:
        min_n, max_n = analyse.keywords.get("min_n", 1), analyse.keywords.get("max_n", 3)
        if 1 <= min_n <= max_n <= 2:
            return FusedCharTfidf(*args, min_n=min_n, max_n=max_n)
    return FusedTfidf(*args)


def row_softmax(x: np.ndarray) -> np.ndarray:
    """``scipy.special.softmax(x, axis=1)``, the same operations without its array-API dispatch and
    ``np.max``'s (a third of a single query's routing time): the same floats, which a test holds. The
    reductions are the ufuncs' own (what ``ndarray.max`` and ``sum`` call through a Python wrapper)."""
    shifted = np.exp(x - np.maximum.reduce(x, axis=1, keepdims=True))
    return shifted / np.add.reduce(shifted, axis=1, keepdims=True)


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """Temperature scaling (Guo et al. 2017): the T minimising the NLL of softmax(logits / T)."""

    def nll(t):
        return -log_softmax(logits / t, axis=1)[np.arange(len(y)), y].mean()

    return float(minimize_scalar(nll, bounds=(0.05, 20.0), method="bounded").x)


_FAST = LABELS.index(FAST)


def first_argmax(values: list[float]) -> int:
    """``np.argmax`` of a list: the index of the first largest value."""
    return values.index(max(values))


def round_like_numpy(x: float, decimals: int) -> float:
    """``np.round(x, decimals)`` of a float, as numpy computes it (scale, round half to even, unscale), which
    is not always Python's correctly rounded ``round(x, decimals)``."""
    scale = 10.0 ** decimals
    return round(x * scale) / scale


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
            self.temperature_ = fit_temperature(logits, y_index)
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
        self.temperature_ = fit_temperature(logits, np.searchsorted(self.classes_, y[known]))
        return self

    def _compile(self):
        """Flatten the fitted feature union and classifier for the row-by-row inference path."""
        union = self.pipeline_.named_steps["features"]
        classifier = self.pipeline_.named_steps["classify"]
        # each extractor at its column offset; lexicon counts are read straight from the utterance's
        # precomputed hits (see ``features``), every other extractor appends its own row
        lexicon_blocks, other_blocks, offset = [], [], 0
        for _, transformer in union.transformer_list:
            if isinstance(transformer, LexiconFeatures) and transformer.counts_only:
                lexicon_blocks.append((transformer.lexicon_.digest, transformer, offset))
            else:
                other_blocks.append((transformer, offset))
            offset += transformer.n_columns
        self.n_features_ = offset
        self.lexicon_blocks_, self.other_blocks_ = tuple(lexicon_blocks), tuple(other_blocks)
        self.devices_ = dict(union.transformer_list)["devices"].lexicon_
        self.device_columns_ = frozenset(
            i for i, c in enumerate(self.devices_.categories) if c in DEVICE_CATEGORIES)
        self._compile_domains()
        self.weights_ = np.ascontiguousarray(classifier.coef_.T)  # (features, classes)
        self.intercept_ = classifier.intercept_.copy()

    def _compile_domains(self) -> None:
        """The devices.txt columns of other domains and the actions.txt columns of control verbs
        (``Route.elliptical_control``); computed on first use for a router pickled without them."""
        union = dict(self.pipeline_.named_steps["features"].transformer_list)
        self.other_domain_columns_ = frozenset(
            i for i, c in enumerate(self.devices_.categories) if c in OTHER_DOMAIN_CATEGORIES)
        self.actions_ = union["actions"].lexicon_
        self.control_columns_ = frozenset(
            i for i, c in enumerate(self.actions_.categories) if c in CONTROL_ACTIONS)

    def _append_row(self, u, indices: list, data: list) -> None:
        """One utterance's feature columns and values, appended to CSR buffers."""
        self._append_lexicon_hits(u, indices, data)
        for transformer, offset in self.other_blocks_:
            transformer.append_row(u, offset, indices, data)

    def features(self, utterances) -> "sp.csr_matrix":
        """The feature matrix from each extractor's rows: the same values as ``pipeline_``'s union,
        without its per-call validation."""
        indptr, indices, data = [0], [], []
        for u in utterances:
            self._append_row(u, indices, data)
            indptr.append(len(indices))
        return sp.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int32), indptr),
                             shape=(len(utterances), self.n_features_))

    def decision_function(self, X):
        require_fitted(self, "pipeline_")
        return self._logits(self.utterances(X))

    def _logits(self, utterances):
        """``features(utterances) @ weights_ + intercept_`` (the fitted pipeline's ``decision_function``)
        up to the last bits of rounding, with the tf-idf blocks fused (``FusedTfidf``): no tf-idf row of
        dicts, no matrix of every feature. Per row, the sum of the lexicon and other extractors' entries,
        then each tf-idf block's, then the intercept: one CSR product per part for a batch, one gather
        for a few rows (the server's single query, ``_dense_logits``), the same floats either way."""
        n = len(utterances)
        if n <= DENSE_ROWS:
            return self._dense_logits(utterances) if n else np.empty((0, len(self.intercept_)))
        tfidf_blocks, others, weights, absent = self._fused()
        indices: list = []
        data: list = []
        starts: list[int] = []
        for u in utterances:
            starts.append(len(indices))
            self._append_rest(u, indices, data, others, absent)
        parts = [(np.asarray(indices, dtype=np.intp), np.asarray(data, dtype=np.float64), np.asarray(starts, dtype=np.intp))]
        parts += [fused.batch_texts([getattr(u, field_name) for u in utterances]) if isinstance(fused, FusedCharTfidf)
                  else fused.batch([analyse(getattr(u, field_name)) for u in utterances])
                  for fused, analyse, field_name in tfidf_blocks]
        logits = csr_sums(weights, *interleave(parts, n))
        logits += self.intercept_
        return logits

    def _dense_logits(self, utterances) -> np.ndarray:
        """A few utterances' ``_logits`` rows, bit for bit: each row's entries as lists, the intercept as
        its last entry (1.0 times the intercept row of the weights, added last as the batch adds it), one
        gather for all of them (``gathered_sums``)."""
        tfidf_blocks, others, weights, absent = self._fused()
        intercept = absent + 1
        indices: list = []
        data: list = []
        ends: list[int] = []
        for u in utterances:
            self._append_rest(u, indices, data, others, absent)
            for fused, analyse, field_name in tfidf_blocks:
                document = getattr(u, field_name)
                cols, values = (fused.text_entries(document) if isinstance(fused, FusedCharTfidf)
                                else fused.entries(analyse(document)))
                indices += cols
                data += values
            indices.append(intercept)
            data.append(1.0)
            ends.append(len(indices))
        return gathered_sums(weights, indices, data, ends)

    def _append_rest(self, u, indices: list, data: list, others, absent: int) -> None:
        """The entries of every extractor but the tf-idf blocks (the lexicon blocks', then ``others``
        at their offsets), after a zero entry (no row is empty)."""
        indices.append(absent)
        data.append(0.0)
        self._append_lexicon_hits(u, indices, data)
        for transformer, offset in others:
            transformer.append_row(u, offset, indices, data)

    def _append_lexicon_hits(self, u, indices: list, data: list) -> None:
        """The lexicon blocks' entries, from the hits the segmenter already found for ``u``."""
        hits = u.hits
        for digest, transformer, offset in self.lexicon_blocks_:
            found = hits.get(digest)
            if found is None:  # an utterance from another segmenter: match now
                transformer.append_row(u, offset, indices, data)
            elif found:
                LexiconFeatures.append_hits(found, offset, indices, data)

    def _fused(self):
        """``_logits``' compiled form of the fitted union (per process, never pickled): the tf-idf
        blocks as ``FusedTfidf`` with their analyser and the utterance field they read, the other
        non-lexicon blocks with their offsets, and ``weights_`` with a zero row (at ``absent``) and the
        intercept (at ``absent + 1``, ``_dense_logits``) after it."""
        fused = self.__dict__.get("_fused_cache")
        if fused is None:
            union = self.pipeline_.named_steps["features"]
            absent = self.n_features_
            tfidf, others, offset = [], [], 0
            for _, transformer in union.transformer_list:
                if isinstance(transformer, _Tfidf):
                    field_name = {CharNgrams: "text", WordTokens: "tokens"}.get(type(transformer))
                    if field_name is None:  # pragma: no cover - the router's union holds these two only
                        raise TypeError(f"no fused path for {type(transformer).__name__}")
                    tfidf.append((fused_tfidf(transformer, offset, absent), transformer.analyze_, field_name))
                elif not (isinstance(transformer, LexiconFeatures) and transformer.counts_only):
                    others.append((transformer, offset))
                offset += transformer.n_columns
            weights = np.vstack([self.weights_, np.zeros((1, self.weights_.shape[1])), self.intercept_])
            fused = (tuple(tfidf), tuple(others), weights, absent)
            self.__dict__["_fused_cache"] = fused
        return fused

    def _label_layout(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Per class its label's index, the (classes, labels) 0/1 matrix that sums probabilities per
        label, and the class names as strings: fixed by ``classes_``, built once per process."""
        layout = self.__dict__.get("_label_layout_cache")
        if layout is None:
            group_of_class = np.array([LABELS.index(label) for label in self.class_labels_])
            layout = (group_of_class, np.eye(len(LABELS))[group_of_class], [str(c) for c in self.classes_])
            self.__dict__["_label_layout_cache"] = layout
        return layout

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_label_layout_cache", None)
        state.pop("_fused_cache", None)
        state.pop("_label_members_cache", None)
        return state

    @property
    def segmenter(self) -> Segmenter:
        require_fitted(self, "pipeline_")
        return self._segmenter()

    def utterances(self, X):
        """``Utterance`` objects of raw inputs (``Utterance`` objects pass through)."""
        require_fitted(self, "pipeline_")
        return self._segmenter().utterances(X)

    def _segmenter(self) -> Segmenter:
        """The pipeline's first step: ``named_steps`` builds a new Bunch of every step on each call (several
        times per query), the step list does not."""
        name, step = self.pipeline_.steps[0]
        return step if name == "segment" else self.pipeline_.named_steps["segment"]

    def predict_proba(self, X):
        require_fitted(self, "pipeline_")
        return self._proba(self.utterances(X))

    def _proba(self, utterances):
        return row_softmax(self._logits(utterances) / self.temperature_)

    def predict(self, X):
        return [r.primary_reason_code for r in self.route(X)]

    def route(self, X) -> list[Route]:
        """A ``Route`` per input (raw strings, input dicts or ``Utterance`` objects)."""
        utterances = self.utterances(X)
        if not utterances:
            return []
        if not hasattr(self, "control_columns_"):
            self._compile_domains()
        if len(utterances) > DENSE_ROWS:
            return self._route_rows(utterances)
        return [self._route_row(u, proba) for u, proba in zip(utterances, self._proba(utterances).tolist())]

    def _route_rows(self, utterances) -> list[Route]:
        """``route`` of a batch, the definition: the decision over the matrix of probabilities."""
        proba = self._proba(utterances)
        group_of_class, label_matrix, classes = self._label_layout()
        by_label = proba @ label_matrix  # (n, 3): summed probability per label
        label_index = fast_floor(by_label, by_label.argmax(axis=1), getattr(self, "fast_min_probability", 0.0))
        in_group = np.where(group_of_class[None, :] == label_index[:, None], proba, -1.0)
        primary_index = in_group.argmax(axis=1).tolist()
        secondary = proba >= self.secondary_threshold
        secondary[np.arange(len(utterances)), primary_index] = False
        others: dict[int, list[int]] = {}
        for i, j in zip(*np.nonzero(secondary)):  # few: most rows have no second code
            others.setdefault(int(i), []).append(int(j))
        second = {i: [classes[j] for j in sorted(js, key=lambda j: -proba[i, j])] for i, js in others.items()}
        rounded = np.round(by_label, 4).tolist()
        labels = label_index.tolist()
        return [self._decided(u, labels[i], classes[primary_index[i]], second.get(i, []), rounded[i])
                for i, u in enumerate(utterances)]

    def _route_row(self, u, proba: list[float]) -> Route:
        """``_route_rows`` of one utterance, from its row of probabilities, in plain Python (a few rows, the
        server's single query: a dozen numpy calls on a small matrix cost more than the decision itself).
        The same route, which a test holds on every bundled query: a label's probability is summed in class
        order, which may differ from the matrix product's in the last bit (so does a product of fewer rows:
        BLAS adds in blocks), far below the 4 decimals a record shows."""
        members = self._label_members()
        by_label = []  # a plain loop: faster than a reduce over a map per label for a few classes each
        for label_classes in members:
            total = 0.0
            for j in label_classes:
                total += proba[j]
            by_label.append(total)
        label = first_argmax(by_label)
        floor = getattr(self, "fast_min_probability", 0.0)
        if floor and label == _FAST and by_label[_FAST] < floor:
            label = first_argmax([-1.0 if i == _FAST else p for i, p in enumerate(by_label)])
        # the label's first most probable class (``max`` keeps the first); no class: 0, as argmax of all -1
        primary = max(members[label], key=proba.__getitem__, default=0)
        threshold = self.secondary_threshold
        second = sorted([j for j, p in enumerate(proba) if p >= threshold and j != primary], key=lambda j: -proba[j])
        classes = self._label_layout()[2]
        return self._decided(u, label, classes[primary], [classes[j] for j in second] if second else [],
                             [round_like_numpy(p, 4) for p in by_label])

    def _label_members(self) -> list[tuple[int, ...]]:
        """Per label, the indices of its classes in class order (from ``_label_layout``'s first array)."""
        members = self.__dict__.get("_label_members_cache")
        if members is None:
            groups = self._label_layout()[0].tolist()
            members = [tuple(j for j, group in enumerate(groups) if group == label) for label in range(len(LABELS))]
            self.__dict__["_label_members_cache"] = members
        return members

    def _decided(self, u, label: int, primary: str, second: list[str], rounded: list[float]) -> Route:
        """The ``Route`` of utterance ``u``: label (index), primary and secondary codes decided, label
        probabilities rounded."""
        device_hits = self.devices_.hits(u)
        no_device = self.device_columns_.isdisjoint(device_hits)
        return Route(
            text=u.text, label=LABELS[label], primary_reason_code=primary, reason_codes=(primary, *second),
            confidence=rounded[label],
            device_control=not no_device,
            alternatives=dict(zip(LABELS, rounded)),
            elliptical_control=(no_device and self.other_domain_columns_.isdisjoint(device_hits)
                                and not self.control_columns_.isdisjoint(self.actions_.hits(u))),
        )
