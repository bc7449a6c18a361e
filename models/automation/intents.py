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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from fastslow.features.automation_lexicons import AutomationLexicons, load_automation_lexicons
from fastslow.features.extractors import CharGramColumns, TfidfRows, linear_scores, require_fitted, side_by_side
from fastslow.features.memo import TextMemo
from fastslow.models.automation.rules import INTENT_REMINDER, INTENT_VEHICLE, lowered, switches_reminders
from fastslow.data import TAXONOMY_DIR

INTENTS_FILE = TAXONOMY_DIR / "intents.tsv"
PREDICT_MEMO = 65536  # distinct subqueries whose intent a process keeps (``IntentClassifier.predict``)
CAR_CONTROL, DEVICE_CONTROL, OTHER = INTENT_VEHICLE, "设备控制", "其他"
CONTROL_INTENTS = (CAR_CONTROL, DEVICE_CONTROL)
#: the device kinds that make no control intent (``control_intent``): what is played, and a setting of the system
#: (音量, 亮度: 系统控制, which the classifier tells)
NOT_A_DEVICE = frozenset({"media", "setting"})
_WHITE_SPACES = re.compile(r"\s\s+")  # scikit-learn's own (``_VectorizerMixin._white_spaces``)


def spaced(text: str) -> str:
    """A text as ``TfidfVectorizer(analyzer="char")`` reads it before its grams: runs of white space made one space."""
    return _WHITE_SPACES.sub(" ", text)


@dataclass(frozen=True)
class IntentTaxonomy:
    """Intents in priority order, each with its keyword expression (None when chosen by rule)."""

    intents: tuple[str, ...]
    keywords: tuple[re.Pattern | None, ...]
    #: ``(intent, pattern)`` of the intents with a keyword expression, in priority order, before the control
    #: rule's place (the first control intent) and from there on: the rule answers the same at each control
    #: intent, so ``keyword_intent`` asks it once between the two
    keyword_stages: tuple[tuple, tuple] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        rule = min(self.intents.index(intent) for intent in CONTROL_INTENTS)
        pairs = list(zip(self.intents, self.keywords))
        object.__setattr__(self, "keyword_stages", (tuple((i, p) for i, p in pairs[:rule] if p is not None),
                                                    tuple((i, p) for i, p in pairs[rule:] if p is not None)))

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
    for intent, pattern in before:
        if pattern.search(low):
            return intent
    if control is False:
        control = control_intent(subquery, lex)
    if control:
        return control
    for intent, pattern in after:
        if pattern.search(low):
            return intent
    return OTHER


def resolve_intent(subquery: str, predicted: str, lex: AutomationLexicons, control=False) -> str:
    """Hard rule after the classifier: a device control's intent follows ``control_intent`` (``control``:
    as ``keyword_intent``'s); reminders switched on or off (把提醒打开) are 提醒, as the spec's 打开提醒 is."""
    if predicted in CONTROL_INTENTS:
        if switches_reminders(subquery):
            return INTENT_REMINDER
        return (control_intent(subquery, lex) if control is False else control) or predicted
    return predicted


def follow_named_device(groups: list[dict], lex: AutomationLexicons) -> list[dict]:
    """A device control that names no device (别让它启动, 自动断电, 把它调暗) acts on the device named before it, so
    it takes that device's control intent: its own condition's (洗衣机门没关好的时候) or else the last subquery's
    that named one (把客厅灯打开十点以后把它调暗). The classifier, reading the subquery alone, can only guess.
    ``groups``: the spec's group objects of one query, changed in place and returned."""
    named = None
    for group in groups:
        condition = group.get("condition")
        own = control_intent(condition, lex) if condition and condition != "default" else None
        for query in group["querys"]:
            if query["intent"] not in CONTROL_INTENTS:
                continue
            control = control_intent(query["subquery"], lex)
            if control is not None:
                named = control
            elif (own or named) and not group.get("builtin"):  # a built-in's intent is its owner's, by rule
                query["intent"] = own or named
        if group.get("builtin") and own:
            named = own  # 饭煮好了电饭煲自动转保温 另外…开始煮粥: the rice cooker named in its condition
    return groups


class IntentClassifier(BaseEstimator, ClassifierMixin):
    """Logistic regression over character n-grams of a subquery plus its keyword guess.

    ``fit(subqueries, intents)``; ``predict`` applies ``resolve_intent`` after the model. At inference the
    scores are the router's machinery: the tf-idf row (``TfidfRows``) and the keyword guess as entries, summed
    with the coefficients (``linear_scores``), without scikit-learn's per-call validation."""

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
        min_n, max_n = self.ngram_range
        self.vectorizer_ = TfidfVectorizer(analyzer="char", ngram_range=(min_n, max_n),
                                           sublinear_tf=True, lowercase=False, dtype=np.float32).fit(X)
        self.model_ = LogisticRegression(C=self.C, max_iter=2000).fit(self._features(X), list(y))
        self.classes_ = self.model_.classes_
        # the inference form of the fitted vectorizer and model (scikit-learn's own transform and predict cost
        # about a millisecond per call in validation alone, most of a single query's record)
        self.grams_ = CharGramColumns(self.vectorizer_.vocabulary_, min_n, max_n)
        self.tfidf_ = TfidfRows.of(self.vectorizer_)
        self.keyword_columns_ = {intent: self.tfidf_.n_columns + i for i, intent in enumerate(self.taxonomy_.intents)}
        self.weights_ = np.ascontiguousarray(self.model_.coef_.T, dtype=np.float64)  # (features, classes)
        self.intercept_ = self.model_.intercept_.astype(np.float64)
        self.class_names_ = [str(c) for c in self.classes_]
        #: the intents of the last ``PREDICT_MEMO`` distinct subqueries this process predicted (``predict``); a
        #: ``TextMemo`` pickles empty
        self.memo_ = TextMemo(PREDICT_MEMO)
        return self

    def decision_function(self, X) -> np.ndarray:
        """The model's scores for raw subqueries, ``model_.decision_function(_features(X))`` up to the last
        bits of rounding."""
        lows = [lowered(s) for s in X]
        return self._scores(lows, [False] * len(lows))

    def _scores(self, lows: list[str], controls: list) -> np.ndarray:
        """``decision_function`` of lowered subqueries, with their ``control_intent`` where known (else False):
        per subquery its tf-idf entries, then its keyword guess's."""
        require_fitted(self, "weights_")
        n = len(lows)
        keywords = [self.keyword_columns_[keyword_intent(low, self.taxonomy_, self.lexicons_, control)]
                    for low, control in zip(lows, controls)]
        keyword_entries = (list(range(n + 1)), keywords, [float(self.keyword_weight)] * n)
        entries = side_by_side([self.tfidf_.counted_rows(*self.grams_.counted(list(map(spaced, lows)))), keyword_entries])
        return linear_scores(self.weights_, self.intercept_, *entries)

    def predict(self, X):
        """The intent of each subquery: the model's best class, then ``resolve_intent``.

        A pure function of the subquery, and subqueries repeat across queries far more than queries
        do (打开空调 ends hundreds of different requests), so the last ``PREDICT_MEMO`` distinct
        subqueries' intents are kept for this process (``memo_``)."""
        X = list(X)
        memo = self.memo_
        missing = [s for s in dict.fromkeys(X) if s not in memo]
        if missing:
            if len(memo) + len(missing) > memo.size:
                memo.clear()
                missing = list(dict.fromkeys(X))
            memo.update(zip(missing, self._predict(missing)))
        return [memo[s] for s in X]

    def _predict(self, X: list[str]) -> list[str]:
        """The model's best class, then ``resolve_intent``; the keyword guess and the rule share each
        subquery's ``control_intent`` (a function of its lowered text, and ``lowered`` is idempotent)."""
        lows = [lowered(s) for s in X]
        controls = [control_intent(low, self.lexicons_) for low in lows]
        scores = self._scores(lows, controls)
        best = (scores.argmax(axis=1) if scores.shape[1] > 1 else (scores[:, 0] > 0).astype(int)).tolist()  # binary: one column
        names = self.class_names_
        return [resolve_intent(s, names[k], self.lexicons_, control) for s, k, control in zip(X, best, controls)]
