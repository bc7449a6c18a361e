"""Intent of each automation subquery: the taxonomy (``data/taxonomy/intents.tsv``), a keyword
labeller, the trained classifier, and the hard rule that picks 车载控制 or 设备控制.

The spec names intents only through its examples (车载控制, 设备控制, 音乐播放, 提醒, 系统控制) and is not
consistent about one of them: ``打开空调`` is 设备控制 in three examples and ``打开主驾空调`` 车载控制 in one,
as is ``打开座椅加热``. fastslow reads that as a rule by device kind and seat (``control_intent``):
a seat, or a device only a car has, makes 车载控制; a device a car and a home share (空调, 灯) named
without a seat, or a home device, makes 设备控制. ``data/automation/README.md`` records the decision.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from fastslow.features.automation_lexicons import AutomationLexicons, load_automation_lexicons
from fastslow.features.extractors import (
    FusedCharTfidf, FusedTfidf, char_ngrams, csr_sums, gathered_sum, gathered_sums, interleave, require_fitted, tfidf_row,
)
from fastslow.features.memo import TextMemo
from fastslow.models.automation.rules import INTENT_VEHICLE, lowered
from fastslow.data import TAXONOMY_DIR

INTENTS_FILE = TAXONOMY_DIR / "intents.tsv"
DENSE_ROWS = 4  # up to this many subqueries, scores are computed one by one without a sparse matrix
PREDICT_MEMO = 65536  # distinct subqueries whose intent a process keeps (``IntentClassifier.predict``)
CAR_CONTROL, DEVICE_CONTROL, OTHER = INTENT_VEHICLE, "设备控制", "其他"
CONTROL_INTENTS = (CAR_CONTROL, DEVICE_CONTROL)
NOT_A_DEVICE = frozenset({"media"})  # the one device kind that makes no control intent (``control_intent``)
_WHITE_SPACES = re.compile(r"\s\s+")  # scikit-learn's own (``_VectorizerMixin._white_spaces``)


@dataclass(frozen=True)
class IntentTaxonomy:
    """Intents in priority order, each with its keyword expression (None when chosen by rule)."""

    intents: tuple[str, ...]
    keywords: tuple[re.Pattern | None, ...]

    @classmethod
    def load(cls, path: str | Path = INTENTS_FILE) -> "IntentTaxonomy":
        with Path(path).open(encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
        intents = tuple(r["intent"].strip() for r in rows)
        keywords = tuple(re.compile(r["keywords"].strip()) if (r.get("keywords") or "").strip() else None
                         for r in rows)
        if CAR_CONTROL not in intents or DEVICE_CONTROL not in intents or OTHER not in intents:
            raise ValueError(f"{path}: the taxonomy must hold {CAR_CONTROL}, {DEVICE_CONTROL} and {OTHER}")
        return cls(intents, keywords)

    @cached_property
    def keyword_stages(self) -> tuple[list, list]:
        """``(intent, pattern.search)`` of the intents with a keyword expression, in priority order, before the
        control rule's place (the first control intent) and from there on: the rule answers the same at each
        control intent, so ``keyword_intent`` asks it once between the two (built on first use, never pickled)."""
        rule = min(self.intents.index(intent) for intent in CONTROL_INTENTS)
        searches = [(intent, pattern.search if pattern is not None else None)
                    for intent, pattern in zip(self.intents, self.keywords)]
        return ([(i, search) for i, search in searches[:rule] if search is not None],
                [(i, search) for i, search in searches[rule:] if search is not None])

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("keyword_stages", None)
        return state


def control_intent(subquery: str, lex: AutomationLexicons) -> str | None:
    """车载控制 vs 设备控制 by seat and device kind (see the module doc); None without a device.

    Reads the matchers ``devices_in`` and ``seat_mentions`` read, for the kinds alone (``Matcher.categories``)
    and whether any seat is named (a test holds it to them)."""
    low = lowered(subquery)
    kinds = lex.device_kinds.categories(low)
    if kinds <= NOT_A_DEVICE:
        return None
    if "car" in kinds or lex.positions.search(low) is not None:
        return CAR_CONTROL
    return DEVICE_CONTROL


def keyword_intent(subquery: str, taxonomy: IntentTaxonomy, lex: AutomationLexicons, control=False) -> str:
    """A first guess from the taxonomy's keywords in priority order, the control rule in its place
    (``control``: ``control_intent(subquery, lex)`` when the caller has it, ``False`` when not).

    Used to pre-label hand-written data and as a feature of the classifier, never as the answer. Loops over the
    taxonomy's ``keyword_stages`` (no per-intent tests of the control rule's place; a test holds it to the loop
    over the taxonomy)."""
    low = lowered(subquery)
    before, after = taxonomy.keyword_stages
    for intent, search in before:
        if search(low):
            return intent
    if control is False:
        control = control_intent(subquery, lex)
    if control:
        return control
    for intent, search in after:
        if search(low):
            return intent
    return OTHER


def resolve_intent(subquery: str, predicted: str, lex: AutomationLexicons, control=False) -> str:
    """Hard rule after the classifier: a device control's intent follows ``control_intent`` (``control``:
    as ``keyword_intent``'s)."""
    if predicted in CONTROL_INTENTS:
        return (control_intent(subquery, lex) if control is False else control) or predicted
    return predicted


class IntentClassifier(BaseEstimator, ClassifierMixin):
    """Logistic regression over character n-grams of a subquery plus its keyword guess.

    ``fit(subqueries, intents)``; ``predict`` applies ``resolve_intent`` after the model."""

    def __init__(self, C=8.0, ngram_range=(1, 3), keyword_weight=1.0, taxonomy_file=None, lexicon_dir=None):
        self.C = C
        self.ngram_range = ngram_range
        self.keyword_weight = keyword_weight
        self.taxonomy_file = taxonomy_file
        self.lexicon_dir = lexicon_dir

    def _keyword_matrix(self, subqueries):
        cols = {intent: i for i, intent in enumerate(self.taxonomy_.intents)}
        rows = range(len(subqueries))
        data = np.full(len(subqueries), self.keyword_weight, dtype=np.float32)
        idx = [cols[keyword_intent(s, self.taxonomy_, self.lexicons_)] for s in subqueries]
        return sp.csr_matrix((data, (list(rows), idx)), shape=(len(subqueries), len(cols)))

    def _features(self, subqueries):
        return sp.hstack([self.vectorizer_.transform(subqueries), self._keyword_matrix(subqueries)], format="csr")

    def fit(self, X, y):
        self.taxonomy_ = IntentTaxonomy.load(self.taxonomy_file or INTENTS_FILE)
        self.lexicons_ = load_automation_lexicons(self.lexicon_dir)
        unknown = sorted(set(y) - set(self.taxonomy_.intents))
        if unknown:
            raise ValueError(f"intents not in the taxonomy: {unknown}")
        X = [lowered(s) for s in X]
        self.vectorizer_ = TfidfVectorizer(analyzer="char", ngram_range=tuple(self.ngram_range),
                                           sublinear_tf=True, lowercase=False, dtype=np.float32).fit(X)
        self.model_ = LogisticRegression(C=self.C, max_iter=2000).fit(self._features(X), list(y))
        self.classes_ = self.model_.classes_
        self._compile()
        return self

    def _compile(self):
        """The fitted vectorizer and model flattened for ``decision_function``: scikit-learn's own
        transform and predict cost about a millisecond per call in validation alone, most of a
        single query's record."""
        self.analyze_ = self.vectorizer_.build_analyzer()
        self.vocabulary_ = self.vectorizer_.vocabulary_
        self.idf_ = self.vectorizer_.idf_.tolist()
        self.keyword_columns_ = {intent: len(self.idf_) + i for i, intent in enumerate(self.taxonomy_.intents)}
        self.weights_ = np.ascontiguousarray(self.model_.coef_.T, dtype=np.float64)  # (features, classes)
        self.intercept_ = self.model_.intercept_.astype(np.float64)

    def _plain_char_range(self) -> tuple[int, int] | None:
        """The vectorizer's ``ngram_range`` when its analyzer is the character analyzer without lower-casing or
        accent stripping (how it is fitted), else None."""
        ngram_range = self.__dict__.get("_char_range", False)
        if ngram_range is False:
            v = self.vectorizer_
            plain = (v.analyzer == "char" and not v.lowercase and v.strip_accents is None and v.preprocessor is None
                     and v.input == "content")
            ngram_range = self.__dict__["_char_range"] = tuple(v.ngram_range) if plain else None
        return ngram_range

    def _grams(self, low: str) -> list[str]:
        """``analyze_(low)``: for the plain character analyzer (``_plain_char_range``) that is ``char_ngrams`` of
        the text with runs of white space made one space, without scikit-learn's per-gram Python loop; any
        other vectorizer runs its own analyzer."""
        ngram_range = self._plain_char_range()
        if ngram_range is None:
            return self.analyze_(low)
        return char_ngrams(_WHITE_SPACES.sub(" ", low), *ngram_range)

    def _batch_tfidf(self, tfidf: FusedTfidf, lows: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The tf-idf entries of a batch: from the texts' code points (``FusedCharTfidf.batch_texts``) for the plain
        character analyzer, ``batch`` of each text's ``_grams`` for any other; the same entries."""
        if isinstance(tfidf, FusedCharTfidf):
            return tfidf.batch_texts([_WHITE_SPACES.sub(" ", low) for low in lows])
        return tfidf.batch([self._grams(low) for low in lows])

    def _row(self, s: str) -> tuple[list, list]:
        """One subquery's feature columns and values (the definition ``decision_function`` is held to)."""
        low = lowered(s)
        columns, weights = tfidf_row(self._grams(low), self.vocabulary_, self.idf_, self.vectorizer_.sublinear_tf)
        columns.append(self.keyword_columns_[keyword_intent(low, self.taxonomy_, self.lexicons_)])
        weights.append(self.keyword_weight)
        return columns, weights

    def decision_function(self, X) -> np.ndarray:
        """The model's scores for raw subqueries, ``model_.decision_function(_features(X))`` up to the last
        bits of rounding: the tf-idf block's entries (``FusedTfidf``: no tf-idf row of dicts, no
        ``TfidfVectorizer`` call), then the keyword guess's, summed, then the intercept. A CSR product for
        a batch, one gather for a few (``gathered_sums``): the same floats."""
        lows = [lowered(s) for s in X]
        return self._decision(lows, [False] * len(lows))

    def _decision(self, lows: list[str], controls: list) -> np.ndarray:
        """``decision_function`` of lowered subqueries, with their ``control_intent`` where known (else False)."""
        if len(lows) == 1:  # the usual single query's one subquery: no stacking
            return self._scores_one(lows[0], controls[0])[None, :]
        tfidf, weights, _ = self._fused()
        keyword = [self.keyword_columns_[keyword_intent(low, self.taxonomy_, self.lexicons_, control)]
                   for low, control in zip(lows, controls)]
        if not lows:
            return np.zeros((0, weights.shape[1]))
        if len(lows) <= DENSE_ROWS:  # as ``_row``: each subquery's tf-idf entries, then its keyword's; one gather
            cols, values, ends = [], [], []
            intercept = len(weights) - 1
            for low, k in zip(lows, keyword):
                row_cols, row_values = tfidf.entries(self._grams(low))
                cols += row_cols
                cols += k, intercept
                values += row_values
                values += self.keyword_weight, 1.0
                ends.append(len(cols))
            return gathered_sums(weights, cols, values, ends)
        n = len(lows)
        guess = (np.asarray(keyword, dtype=np.intp), np.full(n, float(self.keyword_weight)), np.arange(n))
        scores = csr_sums(weights, *interleave([self._batch_tfidf(tfidf, lows), guess], n))
        scores += self.intercept_
        return scores

    def _scores_one(self, low: str, control) -> np.ndarray:
        """One lowered subquery's row of ``_decision``, 1-d: its tf-idf entries and its keyword guess's
        gathered and added in the batch's order, then the intercept (the last row of ``_fused``'s weights, times
        1.0: the same sum as adding it after, without another numpy call)."""
        tfidf, weights, _ = self._fused()
        cols, values = tfidf.entries(self._grams(low))  # fresh lists: the keyword's entry goes last, as in ``_row``
        cols += self.keyword_columns_[keyword_intent(low, self.taxonomy_, self.lexicons_, control)], len(weights) - 1
        values += self.keyword_weight, 1.0
        return gathered_sum(weights, cols, values)

    def _fused(self) -> tuple[FusedTfidf, np.ndarray, list[str]]:
        """The tf-idf block as ``FusedTfidf`` (a ``FusedCharTfidf`` for the plain character analyzer of grams up
        to three characters, as fitted), the coefficients with a zero row for its absent grams and the intercept
        as the last row (which the few-row paths gather as an entry of value 1.0), and the class names as ``str``
        (built on first use, never pickled)."""
        require_fitted(self, "weights_")
        fused = self.__dict__.get("_fused_parts")
        if fused is None:
            weights = np.vstack([self.weights_, np.zeros((1, self.weights_.shape[1])), self.intercept_[None, :]])
            args = (self.vocabulary_, self.idf_, self.vectorizer_.sublinear_tf)
            ngram_range = self._plain_char_range()
            if ngram_range is not None and 1 <= ngram_range[0] <= ngram_range[1] <= 3:
                tfidf = FusedCharTfidf(*args, absent=len(self.weights_), min_n=ngram_range[0], max_n=ngram_range[1])
            else:
                tfidf = FusedTfidf(*args, absent=len(self.weights_))
            fused = self.__dict__["_fused_parts"] = (tfidf, weights, [str(c) for c in self.classes_])
        return fused

    def predict(self, X):
        """The intent of each subquery: the model's best class, then ``resolve_intent``.

        A pure function of the subquery, and subqueries repeat across queries far more than queries
        do (打开空调 ends hundreds of different requests), so the last ``PREDICT_MEMO`` distinct
        subqueries' intents are kept for this process (never pickled)."""
        X = list(X)
        if not X:
            return []
        memo = self.__dict__.get("_predicted")
        if memo is None:
            memo = self.__dict__["_predicted"] = TextMemo(PREDICT_MEMO)
        if len(X) == 1:  # the server's usual request: one subquery, nothing to de-duplicate
            intent = memo.get(X[0])  # an intent is a str, never None
            if intent is not None:
                return [intent]
            missing = X
        else:
            missing = [s for s in dict.fromkeys(X) if s not in memo]
        if missing:
            if len(memo) + len(missing) > memo.size:
                memo.clear()
                missing = list(dict.fromkeys(X))
            memo.update(zip(missing, self._predict(missing)))
        return [memo[s] for s in X]

    def _predict(self, X: list[str]) -> list[str]:
        """The model's best class, then ``resolve_intent``; the keyword guess and the rule share each
        subquery's ``control_intent`` (a function of its lowered text, and ``lowered`` is idempotent).
        One subquery (a single query's usual case) takes ``_scores_one`` without the batch's 2-d steps."""
        lows = [lowered(s) for s in X]
        controls = [control_intent(low, self.lexicons_) for low in lows]
        names = self._fused()[2]
        if len(lows) == 1:
            scores = self._scores_one(lows[0], controls[0])
            best = [int(scores.argmax()) if len(scores) > 1 else int(scores[0] > 0)]  # binary: one column
        else:
            scores = self._decision(lows, controls)
            best = (scores.argmax(axis=1) if scores.shape[1] > 1 else (scores[:, 0] > 0).astype(int)).tolist()
        return [resolve_intent(s, names[k], self.lexicons_, control) for s, k, control in zip(X, best, controls)]

    def __getstate__(self):
        state = dict(super().__getstate__())
        state.pop("_predicted", None)
        state.pop("_char_range", None)
        state.pop("_fused_parts", None)
        return state
