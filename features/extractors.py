"""Feature extractors: scikit-learn transformers over lists of ``Utterance``.

Each lexicon extractor counts hits per category of its lexicon file; the file is read at ``fit``
and kept in ``lexicon_`` so a fitted model does not depend on the files any more.
"""

from __future__ import annotations

import re
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from features.lexicon import load_lexicon
from features.text import CONTEXT_STATES


def token_ngrams(tokens, n=2):
    """Unigrams and up to n-grams of jieba tokens (module level so the model pickles)."""
    grams = list(tokens)
    for size in range(2, n + 1):
        grams.extend(" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))
    return grams


class CharNgrams(BaseEstimator, TransformerMixin):
    """TF-IDF of character n-grams of the normalised text: robust to unseen words and ASR noise."""

    def __init__(self, ngram_range=(1, 3), min_df=1, sublinear_tf=True):
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf

    def fit(self, X, y=None):
        self.vectorizer_ = TfidfVectorizer(
            analyzer="char", ngram_range=tuple(self.ngram_range), min_df=self.min_df,
            sublinear_tf=self.sublinear_tf, lowercase=False, dtype=np.float32,
        ).fit([u.text for u in X])
        return self

    def transform(self, X):
        check_is_fitted(self)
        return self.vectorizer_.transform([u.text for u in X])


class WordTokens(BaseEstimator, TransformerMixin):
    """TF-IDF of jieba tokens and token bigrams."""

    def __init__(self, max_n=2, min_df=1, sublinear_tf=True):
        self.max_n = max_n
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf

    def fit(self, X, y=None):
        self.vectorizer_ = TfidfVectorizer(
            analyzer=partial(token_ngrams, n=self.max_n), min_df=self.min_df,
            sublinear_tf=self.sublinear_tf, lowercase=False, dtype=np.float32,
        ).fit([u.tokens for u in X])
        return self

    def transform(self, X):
        check_is_fitted(self)
        return self.vectorizer_.transform([u.tokens for u in X])


class LexiconFeatures(BaseEstimator, TransformerMixin):
    """Hit counts per category of one lexicon file, squashed with log1p."""

    def __init__(self, lexicon):
        self.lexicon = lexicon

    def fit(self, X=None, y=None):
        self.lexicon_ = load_lexicon(self.lexicon)
        return self

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return np.array([f"{self.lexicon_.name}:{c}" for c in self.lexicon_.categories], dtype=object)

    def transform(self, X):
        check_is_fitted(self)
        match = self.lexicon_.match
        rows, cols, vals = [], [], []
        for i, u in enumerate(X):
            for col, count in match(u.tokens, u.charset, u.text).items():
                rows.append(i)
                cols.append(col)
                vals.append(count)
        data = np.log1p(np.asarray(vals, dtype=np.float32))
        return sp.csr_matrix((data, (rows, cols)), shape=(len(X), len(self.lexicon_.categories)))


class TriggerMarkers(LexiconFeatures):
    """Condition triggers (时, 当…时, 如果…就, 每…, 提醒我): automations and reminders."""

    def __init__(self, lexicon="triggers"):
        super().__init__(lexicon)


class SensationWords(LexiconFeatures):
    """Feelings and body states (冷, 刺眼, 困): the signal of intent inference."""

    def __init__(self, lexicon="sensations"):
        super().__init__(lexicon)


class SceneWords(LexiconFeatures):
    """Scene and goal-state words (睡觉, 约会, 情人节, 适合…状态)."""

    def __init__(self, lexicon="scenes"):
        super().__init__(lexicon)


class DeviceLexicon(LexiconFeatures):
    """Devices, functions and resources by domain (car_device, home_device, media, navigation, app)."""

    def __init__(self, lexicon="devices"):
        super().__init__(lexicon)


class ActionLexicon(LexiconFeatures):
    """Action verbs by kind (on, off, adjust, media, nav, search, create, vague)."""

    def __init__(self, lexicon="actions"):
        super().__init__(lexicon)


class QuestionMarkers(LexiconFeatures):
    """Question words and marks (吗, 怎么, 为什么, 多少, ？)."""

    def __init__(self, lexicon="questions"):
        super().__init__(lexicon)


class Connectors(LexiconFeatures):
    """Sequence connectors (然后, 再, 并且) and dependency markers (决定, 根据, 看看)."""

    def __init__(self, lexicon="connectors"):
        super().__init__(lexicon)


class Demonstratives(LexiconFeatures):
    """Demonstratives, pronouns and anaphora (那个, 刚才那个, 第二个)."""

    def __init__(self, lexicon="demonstratives"):
        super().__init__(lexicon)


_NUMBER = re.compile(r"\d+(?:\.\d+)?|[零一二两三四五六七八九十百千万半]+")


class NumbersUnits(LexiconFeatures):
    """Numbers (digits or Chinese numerals) and units (度, 档, %, 分钟), plus the query's length band.

    Length is here because it is a number too: two-character fragments (好的, 开启) and forty-character
    requests behave differently, and no other extractor sees it.
    """

    LENGTH_BANDS = (2, 4, 8, 16, 32)

    def __init__(self, lexicon="units"):
        super().__init__(lexicon)

    def get_feature_names_out(self, input_features=None):
        names = list(super().get_feature_names_out())
        names += ["number"] + [f"len<={b}" for b in self.LENGTH_BANDS] + ["len>32"]
        return np.array(names, dtype=object)

    def transform(self, X):
        units = super().transform(X)
        extra = np.zeros((len(X), 2 + len(self.LENGTH_BANDS)), dtype=np.float32)
        for i, u in enumerate(X):
            extra[i, 0] = 1.0 if _NUMBER.search(u.text) else 0.0
            length = len(u.text)
            band = next((j for j, b in enumerate(self.LENGTH_BANDS) if length <= b), len(self.LENGTH_BANDS))
            extra[i, 1 + band] = 1.0
        return sp.hstack([units, sp.csr_matrix(extra)], format="csr")


class ContextFeatures(BaseEstimator, TransformerMixin):
    """One-hot of the conversation state: no context, previous fast/slow turn, pending slow question.

    Crossed with "short query" because a bare 好的 / 第二个 means something only through its context.
    """

    def __init__(self, short_chars=6):
        self.short_chars = short_chars

    def fit(self, X=None, y=None):
        self.states_ = CONTEXT_STATES
        return self

    def get_feature_names_out(self, input_features=None):
        names = [f"ctx:{s}" for s in self.states_] + [f"ctx:{s}&short" for s in self.states_]
        return np.array(names, dtype=object)

    def transform(self, X):
        check_is_fitted(self)
        n = len(self.states_)
        out = np.zeros((len(X), 2 * n), dtype=np.float32)
        index = {s: i for i, s in enumerate(self.states_)}
        for i, u in enumerate(X):
            col = index.get(u.context, index["prev_other"])
            out[i, col] = 1.0
            if len(u.text) <= self.short_chars:
                out[i, n + col] = 1.0
        return sp.csr_matrix(out)


class EndpointFeatures(BaseEstimator, TransformerMixin):
    """One-hot of the endpoint (car, speaker, home, unknown), and crossed with automation markers.

    The cross is what lets a linear model learn the spec's endpoint policy: the same reminder is 快
    in the car, 慢 on a speaker and 模糊 when the endpoint is unknown.
    """

    ENDPOINTS = ("car", "speaker", "home", "unknown")

    def __init__(self, lexicon="triggers"):
        self.lexicon = lexicon

    def fit(self, X=None, y=None):
        self.lexicon_ = load_lexicon(self.lexicon)
        return self

    def get_feature_names_out(self, input_features=None):
        names = [f"endpoint:{e}" for e in self.ENDPOINTS] + [f"endpoint:{e}&trigger" for e in self.ENDPOINTS]
        return np.array(names, dtype=object)

    def transform(self, X):
        check_is_fitted(self)
        n = len(self.ENDPOINTS)
        out = np.zeros((len(X), 2 * n), dtype=np.float32)
        for i, u in enumerate(X):
            col = self.ENDPOINTS.index(u.endpoint) if u.endpoint in self.ENDPOINTS[:3] else n - 1
            out[i, col] = 1.0
            if self.lexicon_.match(u.tokens, u.charset, u.text):
                out[i, n + col] = 1.0
        return sp.csr_matrix(out)
