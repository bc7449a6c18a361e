"""Feature extractors: scikit-learn transformers over lists of ``Utterance``.

Every extractor computes one utterance's features with ``row(u) -> {column: value}``, and
``transform`` is nothing but those rows stacked; the tf-idf extractors compute a batch's rows at once
(``TfidfRows``). The router's inference path appends each extractor's entries (``append_row``) to one list
per query and lays the tf-idf blocks' beside them (``side_by_side``), so a single query does not pay
scikit-learn's per-call validation thirteen times, and both paths run the same code.

Each lexicon extractor counts hits per category of its lexicon file; the file is read at ``fit``
and kept in ``lexicon_``, so a fitted model does not depend on the files any more.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import _count_elements  # the C helper of Counter (a Python fallback off CPython)
from functools import partial, reduce
from itertools import repeat
from operator import add as _add, mul as _mul, truediv as _truediv

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from fastslow.features.lexicon import Matcher, load_lexicon, read_entries, resolve_lexicon
from fastslow.features.spoken import digits_as_said
from fastslow.features.text import CONTEXT_STATES, PARSE_SIGNALS

_DIGIT = re.compile(r"\d")


def require_fitted(estimator, attribute: str) -> None:
    """``check_is_fitted(estimator, attribute)`` at the cost of a dict lookup when it is fitted: scikit-learn's
    check builds the estimator's tags on every call (~15 µs), several times per query on the
    single-row path. An unfitted estimator still gets scikit-learn's ``NotFittedError``."""
    if attribute not in estimator.__dict__:
        check_is_fitted(estimator, attribute)


def rows_to_csr(rows: list[dict], n_columns: int) -> sp.csr_matrix:
    """Stack ``{column: value}`` rows into a CSR matrix."""
    indptr, indices, data = [0], [], []
    for row in rows:
        indices.extend(row.keys())
        data.extend(row.values())
        indptr.append(len(indices))
    return sp.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int32), indptr),
                         shape=(len(rows), n_columns))


class RowFeatures(BaseEstimator, TransformerMixin):
    """Base of the extractors: features of one utterance depend on that utterance only."""

    def row(self, u) -> dict[int, float]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @property
    def n_columns(self) -> int:
        return len(self.get_feature_names_out())

    def transform(self, X):
        check_is_fitted(self)
        return rows_to_csr([self.row(u) for u in X], self.n_columns)

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        """Append ``row(u)``, its columns shifted by ``offset``, to CSR buffers: the router's inference
        path builds one matrix for all extractors this way."""
        row = self.row(u)
        indices.extend([col + offset for col in row])
        data.extend(row.values())


class IndicatorFeatures(RowFeatures):
    """Base of the extractors whose every feature is an indicator (1.0 or absent): a subclass says which
    columns an utterance has, in column order (``columns``), and the dict row and the CSR entries both
    come from that one list."""

    def columns(self, u) -> list[int]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def row(self, u) -> dict[int, float]:
        return dict.fromkeys(self.columns(u), 1.0)

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        """``row``'s entries in its order, without building the dict (a plain loop: a row has a few columns
        at most, for which a list comprehension costs more to set up than to run)."""
        for col in self.columns(u):
            indices.append(offset + col)
            data.append(1.0)


#: up to this many rows (a single query, a query's few subqueries), entries are Python lists worked row by row
#: on Python floats; a batch of more is numpy arrays worked at once: numpy's cost per call (~0.5-1 µs, a dozen
#: calls a batch) is more than a few rows' whole work, and far less than a large batch's (see ``TfidfRows``)
FEW_ROWS = 4


#: the column of a gram out of the vocabulary
ABSENT = -1


class CharGramColumns:
    """The vocabulary columns of texts' character n-grams (``char_ngrams``, up to trigrams), in ``char_ngrams``'
    order, looked up with numpy for all the texts at once: each gram is an integer of its code points (a
    character in 21 bits, a trigram in 63), found by ``np.searchsorted`` in the vocabulary's sorted integers.
    No gram string is built and no dict looked up per gram: in a vocabulary of ~19,000 grams a dict lookup is
    mostly cache misses, and the router's character tf-idf cost ~6.1 µs a query that way against ~1.9 from
    code points. Up to ``FEW_ROWS`` texts (a single query, its few subqueries) look their ``char_ngrams`` up in
    the vocabulary dict instead: numpy's dozen calls cost a single query ~15 µs more than the dict, a whole
    record ~50 µs more (``bench_router.py``, single p50). ``counted`` counts each text's columns too (in a batch
    with numpy, where a Python loop over every gram cost more than finding them); a test holds the rows of both
    forms to ``TfidfVectorizer``'s."""

    BITS = 21  # a code point (at most 0x10FFFF) in 21 bits

    def __init__(self, vocabulary: dict, min_n: int = 1, max_n: int = 3):
        if not 1 <= min_n <= max_n <= 3:
            raise ValueError(f"character grams of one to three characters, not ngram_range ({min_n}, {max_n})")
        self.min_n = min_n
        self.max_n = max_n
        self.vocabulary = vocabulary
        coded = sorted((self.code(gram), col) for gram, col in vocabulary.items())
        # a last integer above every gram's, of no column: ``np.searchsorted`` always lands on an entry
        self.codes = np.array([code for code, _ in coded] + [np.iinfo(np.int64).max], dtype=np.int64)
        self.columns_of = np.array([col for _, col in coded] + [ABSENT], dtype=np.int64)

    #: what follows each text among the code points: no character's (above 0x10FFFF), so a gram across two texts
    #: is in no vocabulary
    BETWEEN = (1 << BITS) - 1

    @classmethod
    def code(cls, gram: str) -> int:
        """The integer of a gram: ((a + 1) << 21 | b) + 1 << 21 | c for the characters a, b, c."""
        value = ord(gram[0])
        for char in gram[1:]:
            value = ((value + 1) << cls.BITS) | ord(char)
        return value

    def counted(self, texts: list) -> tuple:
        """Per text, the columns of its grams in the vocabulary, each once in the order of its first gram
        (``char_ngrams``' order: its unigrams, then its bigrams, …, each size in text order), and how many of its
        grams have it: ``(indptr, columns, counts)``, what ``TfidfRows.counted_rows`` weighs. Up to ``FEW_ROWS``
        texts: lists, their grams looked up in the vocabulary dict and counted one by one
        (``count_columns``); a batch: arrays, its grams found and counted with numpy all at once."""
        if len(texts) <= FEW_ROWS:
            get = self.vocabulary.get
            return count_columns([map(get, char_ngrams(text, self.min_n, self.max_n), repeat(ABSENT))
                                  for text in texts])
        points = np.frombuffer("\0".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        lengths = np.array([len(t) + 1 for t in texts], dtype=np.intp)  # each text and the "\0" after it
        ends = np.cumsum(lengths)  # each text's end in ``points``, one after its last character
        points[ends[:-1] - 1] = self.BETWEEN  # the "\0" joining each text to the next
        points = np.concatenate([points, np.full(self.max_n, self.BETWEEN, dtype=np.int64)])
        n = int(ends[-1])  # one gram of each size at each point of a text and after it
        sizes = []
        gram = points
        for size in range(1, self.max_n + 1):
            if size > 1:
                gram = ((gram[:-1] + 1) << self.BITS) | points[size - 1:]
            if size >= self.min_n:
                sizes.append(gram[:n])
        grams = np.concatenate(sizes) if len(sizes) > 1 else sizes[0]
        at = self.codes.searchsorted(grams)
        known = np.flatnonzero(self.codes.take(at) == grams)  # the grams in the vocabulary, by size, then place
        owner = np.tile(np.repeat(np.arange(len(texts)), lengths), len(sizes)).take(known)
        by_text = np.argsort(owner, kind="stable")  # each text's grams in char_ngrams' order
        columns = self.columns_of.take(at.take(known.take(by_text)))
        # a (text, column) pair once, at its first gram, with its count; then the pairs in the order of their first
        key = owner.take(by_text) * len(self.codes) + columns
        pairs, first, counts = np.unique(key, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        pairs, counts = pairs.take(order), counts.take(order)
        indptr = np.zeros(len(texts) + 1, dtype=np.intp)
        np.cumsum(np.bincount(pairs // len(self.codes), minlength=len(texts)), out=indptr[1:])
        return indptr, pairs % len(self.codes), counts


def count_columns(documents) -> tuple[list, list, list]:
    """Per document (an iterable of its grams' columns, ``ABSENT`` for a gram out of the vocabulary), its columns
    once each in the order of their first gram, and their counts: ``(indptr, columns, counts)`` as lists."""
    columns: list = []
    counts: list = []
    indptr = [0]
    for grams in documents:
        found: dict = {}
        _count_elements(found, grams)  # by column, in the order of the first gram of each
        found.pop(ABSENT, None)  # the grams out of the vocabulary
        columns += found
        counts += found.values()
        indptr.append(len(columns))
    return indptr, columns, counts


class TfidfRows:
    """A fitted ``TfidfVectorizer(norm="l2")``'s rows at inference: its vocabulary and idf weights applied to
    analysed documents without its per-call validation. The vectorizer stays the definition: it fits the
    vocabulary and the weights, and a test holds these rows to its ``transform`` on every bundled text, one
    document at a time and in a batch.

    Rows are CSR entries ``(indptr, columns, values)``: per document the columns of its known grams in the
    order each first occurs, and their tf-idf weights (sublinear or raw tf) scaled to unit length. Each
    document's grams are counted by column at C level; then a batch computes the weights, the norms and the
    scaling with numpy over all its entries at once (arrays), and up to ``FEW_ROWS`` documents compute them
    on Python floats (lists). Measured on the router's character n-grams (27 grams, process time, 2 cores
    shared): one document ~12 µs on Python floats and ~29 µs through numpy's calls; in a batch of 512 ~12 µs
    a document on Python floats and ~6.6 with numpy. Both do the same operations in the same order (the tf's
    logarithm from ``math.log``, each document's squares added in entry order, then divided by their root):
    the same floats, which a test holds."""

    def __init__(self, vocabulary: dict, idf, sublinear: bool = True):
        self.vocabulary = vocabulary
        self.idf = np.asarray(idf, dtype=np.float64)
        self.idf_list = self.idf.tolist()  # the weights on Python floats (a few rows)
        self.sublinear = sublinear

    @classmethod
    def of(cls, vectorizer: TfidfVectorizer) -> "TfidfRows":
        """The rows of a fitted vectorizer."""
        return cls(vectorizer.vocabulary_, vectorizer.idf_, vectorizer.sublinear_tf)

    @property
    def n_columns(self) -> int:
        return len(self.idf)

    def tf(self, n: int) -> float:
        """The tf weight of a gram counted ``n`` times: 1 + log(n) (sublinear), else n."""
        return 1.0 + math.log(n) if self.sublinear else float(n)

    def rows(self, documents, offset: int = 0) -> tuple:
        """The analysed documents' entries ``(indptr, columns, values)``, the columns shifted by ``offset``:
        lists for up to ``FEW_ROWS`` documents, else arrays."""
        get = self.vocabulary.get
        return self.column_rows((map(get, grams, repeat(ABSENT)) for grams in documents), offset)

    def column_rows(self, documents, offset: int = 0) -> tuple:
        """``rows`` of documents already mapped to their grams' columns (``ABSENT`` for a gram out of the
        vocabulary)."""
        return self.counted_rows(*count_columns(documents), offset)

    def counted_rows(self, indptr, columns, counts, offset: int = 0) -> tuple:
        """``rows`` of documents whose columns are counted (``count_columns``, ``CharGramColumns.counted``)."""
        if len(indptr) - 1 <= FEW_ROWS:
            return self._few_rows(indptr, columns, counts, offset)
        return self._batch_rows(indptr, columns, counts, offset)

    def _few_rows(self, indptr: list, columns: list, counts: list, offset: int) -> tuple[list, list, list]:
        """``rows`` of a few documents' counted columns, row by row on Python floats."""
        values = list(map(self.idf_list.__getitem__, columns))  # C-level maps: no bytecode per entry
        if counts and max(counts) > 1:  # a repeated gram: its tf weight
            values = [w if n == 1 else self.tf(n) * w for w, n in zip(values, counts)]
        for start, end in zip(indptr, indptr[1:]):
            weights = values[start:end]
            norm = math.sqrt(reduce(_add, map(_mul, weights, weights), 0.0))  # the squares added in entry order
            values[start:end] = map(_truediv, weights, repeat(norm))
        return indptr, list(map(_add, columns, repeat(offset))) if offset else columns, values

    def _batch_rows(self, indptr: list, columns: list, counts: list, offset: int) -> tuple:
        """``rows`` of a batch's counted columns, with numpy over all of them at once."""
        cols = np.array(columns, dtype=np.intp)
        values = self.idf.take(cols)
        counts = np.array(counts, dtype=np.intp)
        repeated = np.flatnonzero(counts > 1)  # few: a gram said twice in one text
        if len(repeated):
            values[repeated] *= [self.tf(n) for n in counts.take(repeated).tolist()]
        indptr = np.array(indptr, dtype=np.intp)
        owner = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        norms = np.sqrt(np.bincount(owner, values * values, minlength=len(indptr) - 1))  # each row's squares in order
        values /= norms.take(owner)  # a row with entries has a positive norm (every idf is at least 1)
        if offset:
            cols += offset
        return indptr, cols, values


def side_by_side(blocks) -> tuple:
    """Blocks of entries of the same rows, each ``(indptr, columns, values)`` with its own columns, as one:
    each row's entries block after block, each block's in its order (what ``scipy.sparse.hstack`` makes of
    CSR matrices, without a matrix per block). A single row's are its blocks' lists one after the other."""
    if len(blocks[0][0]) == 2:
        columns: list = []
        values: list = []
        for _, block_columns, block_values in blocks:
            columns += block_columns
            values += block_values
        return [0, len(columns)], columns, values
    indptr = sum(np.asarray(block[0]) for block in blocks)
    columns = np.concatenate([np.asarray(block[1], dtype=np.intp) for block in blocks])
    values = np.concatenate([np.asarray(block[2], dtype=np.float64) for block in blocks])
    rows = np.arange(len(indptr) - 1)
    owner = np.concatenate([np.repeat(rows, np.diff(block[0])) for block in blocks])
    order = np.argsort(owner, kind="stable")
    return indptr, columns.take(order), values.take(order)


def linear_scores(weights: np.ndarray, intercept: np.ndarray, indptr, columns, values) -> np.ndarray:
    """A linear model's ``decision_function`` of rows of feature entries ``(indptr, columns, values)``: each
    row's entries times the coefficients ``weights`` (features, classes), added in entry order, then the
    intercept. The router and the intent classifier score this way.

    A batch is a CSR product; up to ``FEW_ROWS`` rows (a single query) gather the entries' coefficient rows
    and add each row's with ``np.add.reduce`` along the first axis (the product's set-up costs ~20 µs, the
    gather ~4, and per row in a batch of 512 the gather ~3.7 µs, the product ~0.8). Both add a row's products
    in entry order: the same floats, which a test holds."""
    n = len(indptr) - 1
    if n > FEW_ROWS:
        scores = np.asarray(sp.csr_matrix((values, columns, indptr), shape=(n, weights.shape[0])) @ weights)
    else:
        rows = weights.take(np.array(columns, dtype=np.intp), axis=0)
        rows *= np.array(values, dtype=np.float64)[:, None]
        if n == 1:
            scores = np.add.reduce(rows, axis=0, keepdims=True)
        else:
            scores = np.empty((n, weights.shape[1]))  # each row reduced into its place: an empty row sums to zeros
            for k in range(n):
                np.add.reduce(rows[indptr[k]:indptr[k + 1]], axis=0, out=scores[k])
    scores += intercept
    return scores


def char_ngrams(text, min_n=1, max_n=3):
    """Character n-grams of an already normalised text (the analyzer of CharNgrams): the unigrams, then
    the bigrams, … up to ``max_n``, each size in text order. Each size is the previous one with the next
    character added (``map(add, …)``, C-level) instead of a Python slice per position."""
    grams = list(text) if min_n == 1 else []
    longer = text  # the grams of the previous size (the characters to start with)
    for size in range(2, max_n + 1):
        longer = list(map(_add, longer, text[size - 1:]))
        if size >= min_n:
            grams += longer
    return grams


def token_ngrams(tokens, n=2):
    """Unigrams and up to n-grams of jieba tokens (module level so the model pickles)."""
    grams = list(tokens)
    for size in range(2, n + 1):
        grams.extend(" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1))
    return grams


class TfidfFeatures(RowFeatures):
    """TF-IDF (sublinear tf, l2 norm) of some analysis of the utterance, fitted by scikit-learn's
    ``TfidfVectorizer`` and applied with its vocabulary and idf weights (``TfidfRows``)."""

    def _vectorizer(self) -> TfidfVectorizer:  # pragma: no cover
        raise NotImplementedError

    def document(self, u):  # pragma: no cover
        """What the analyser reads of an utterance."""
        raise NotImplementedError

    def fit(self, X, y=None):
        self.vectorizer_ = self._vectorizer().fit([self.document(u) for u in X])
        self.analyze_ = self.vectorizer_.analyzer  # a plain function: the same analysis in fit and at inference
        self.rows_ = TfidfRows.of(self.vectorizer_)
        return self

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return self.vectorizer_.get_feature_names_out()

    @property
    def n_columns(self) -> int:
        return self.rows_.n_columns

    def rows(self, X, offset: int = 0) -> tuple:
        """The utterances' entries ``(indptr, columns, values)`` (``TfidfRows.rows``), the columns shifted by ``offset``."""
        return self.rows_.rows(map(self.analyze_, map(self.document, X)), offset)  # each analysis counted as made

    def transform(self, X):
        check_is_fitted(self)
        indptr, columns, values = self.rows(X)
        return sp.csr_matrix((values, columns, indptr), shape=(len(indptr) - 1, self.n_columns))

    def row(self, u) -> dict[int, float]:
        _, columns, values = self.rows([u])  # one row: lists
        return dict(zip(columns, values))


class CharNgrams(TfidfFeatures):
    """TF-IDF of character n-grams of the normalised text: robust to unseen words and ASR noise.
    ``digits_as_said``: numbers written in digits are read as the Chinese numerals they are said as
    (``features.spoken.digits_as_said``), so 9点 and 九点, 22度 and 二十二度 share their grams, as ASR writes
    either."""

    def __init__(self, ngram_range=(1, 3), min_df=1, sublinear_tf=True, digits_as_said=False):
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf
        self.digits_as_said = digits_as_said

    def _vectorizer(self):
        low, high = self.ngram_range
        return TfidfVectorizer(analyzer=partial(char_ngrams, min_n=low, max_n=high), min_df=self.min_df,
                               sublinear_tf=self.sublinear_tf, lowercase=False)

    def document(self, u):
        if self.digits_as_said and _DIGIT.search(u.text) is not None:
            return digits_as_said(u.text)
        return u.text

    def fit(self, X, y=None):
        super().fit(X, y)
        self.grams_ = CharGramColumns(self.vectorizer_.vocabulary_, *self.ngram_range)
        return self

    def rows(self, X, offset: int = 0) -> tuple:
        """The utterances' entries ``(indptr, columns, values)``, their grams' columns found all at once
        (``CharGramColumns``), the columns shifted by ``offset``."""
        return self.rows_.counted_rows(*self.grams_.counted([self.document(u) for u in X]), offset)


class WordTokens(TfidfFeatures):
    """TF-IDF of jieba tokens and token n-grams up to ``max_n``."""

    def __init__(self, max_n=2, min_df=1, sublinear_tf=True):
        self.max_n = max_n
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf

    def _vectorizer(self):
        return TfidfVectorizer(analyzer=partial(token_ngrams, n=self.max_n), min_df=self.min_df,
                               sublinear_tf=self.sublinear_tf, lowercase=False)

    def document(self, u):
        return u.tokens


_LOG1P = [math.log1p(n) for n in range(8)]


class LexiconFeatures(RowFeatures):
    """Hit counts per category of one lexicon file, squashed with log1p."""

    def __init__(self, lexicon):
        self.lexicon = lexicon

    def fit(self, X=None, y=None):
        self.lexicon_ = load_lexicon(self.lexicon)
        # the features are the hit counts alone, unless a subclass adds columns of its own (its own ``row``)
        self.counts_only_ = type(self).row is LexiconFeatures.row
        return self

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return np.array([f"{self.lexicon_.name}:{c}" for c in self.lexicon_.categories], dtype=object)

    def row(self, u) -> dict[int, float]:
        return {col: _LOG1P[n] if n < 8 else math.log1p(n)
                for col, n in self.lexicon_.hits(u).items()}

    @staticmethod
    def append_hits(hits: dict[int, int], offset: int, indices: list, data: list) -> None:
        """``row``'s values for precomputed hits, straight into CSR buffers (no intermediate dict)."""
        for col, n in hits.items():
            indices.append(col + offset)
            data.append(_LOG1P[n] if n < 8 else math.log1p(n))

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        if not self.counts_only_:
            return super().append_row(u, offset, indices, data)
        hits = self.lexicon_.hits(u)
        if hits:  # most texts hit few of the lexicons
            self.append_hits(hits, offset, indices, data)


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

    def row(self, u) -> dict[int, float]:
        out = super().row(u)
        base = len(self.lexicon_.categories)
        if _NUMBER.search(u.text):
            out[base] = 1.0
        out[base + 1 + bisect_left(self.LENGTH_BANDS, len(u.text))] = 1.0  # the first band >= the length
        return out

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        """``row``'s entries in its order, without building the dict."""
        hits = self.lexicon_.hits(u)
        if hits:  # most texts name no unit
            self.append_hits(hits, offset, indices, data)
        base = offset + len(self.lexicon_.categories)
        if _NUMBER.search(u.text):
            indices.append(base)
            data.append(1.0)
        indices.append(base + 1 + bisect_left(self.LENGTH_BANDS, len(u.text)))
        data.append(1.0)


class ContextFeatures(RowFeatures):
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

    def row(self, u) -> dict[int, float]:
        col = self.states_.index(u.context) if u.context in self.states_ else self.states_.index("prev_other")
        out = {col: 1.0}
        if len(u.text) <= self.short_chars:
            out[len(self.states_) + col] = 1.0
        return out

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        """``row``'s entries in its order, without building the dict."""
        states = self.states_
        col = offset + (states.index(u.context) if u.context in states else states.index("prev_other"))
        indices.append(col)
        data.append(1.0)
        if len(u.text) <= self.short_chars:
            indices.append(len(states) + col)
            data.append(1.0)


class EndpointFeatures(RowFeatures):
    """One-hot of the endpoint (car, speaker, home, unknown), and crossed with automation markers.

    The cross is what lets a linear model learn the spec's endpoint policy: the same reminder is 快
    in the car, 慢 on a speaker and 模糊 when the endpoint is unknown.
    """

    ENDPOINTS = ("car", "speaker", "home", "unknown")
    #: an endpoint's column: each of the first three its own, any other (None, "unknown") the last
    COLUMNS = dict(zip(ENDPOINTS[:3], range(3)))

    def __init__(self, lexicon="triggers"):
        self.lexicon = lexicon

    def fit(self, X=None, y=None):
        self.lexicon_ = load_lexicon(self.lexicon)
        return self

    def get_feature_names_out(self, input_features=None):
        names = [f"endpoint:{e}" for e in self.ENDPOINTS] + [f"endpoint:{e}&trigger" for e in self.ENDPOINTS]
        return np.array(names, dtype=object)

    def row(self, u) -> dict[int, float]:
        n = len(self.ENDPOINTS)
        col = self.COLUMNS.get(u.endpoint, n - 1)
        out = {col: 1.0}
        if self.lexicon_.hits(u):
            out[n + col] = 1.0
        return out

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        """``row``'s entries in its order, without building the dict."""
        n = len(self.ENDPOINTS)
        col = offset + self.COLUMNS.get(u.endpoint, n - 1)
        indices.append(col)
        data.append(1.0)
        if self.lexicon_.hits(u):
            indices.append(n + col)
            data.append(1.0)


class AutomationParse(IndicatorFeatures):
    """What the automation parse of the whole query says (``Utterance.parse``: a condition of the user's, a
    reminder under it, a built-in behaviour, managing a task), alone and crossed with the endpoint.

    LABELING.md rule 10 routes an automation by its endpoint (快 in the car, 慢 on a speaker or at home, 模糊
    unknown); the parser finds conditions no trigger word marks (以后我说出门了就…, 孩子房间一有哭声就…), which the
    router's own trigger features miss. Learned like any feature, so a parse informs and never overrules."""

    def fit(self, X=None, y=None):
        ends = EndpointFeatures.ENDPOINTS
        self.names_ = tuple(f"parse:{s}" for s in PARSE_SIGNALS) + tuple(
            f"parse:{s}@{e}" for s in PARSE_SIGNALS for e in ends)
        self.columns_ = {name: i for i, name in enumerate(self.names_)}
        return self

    def get_feature_names_out(self, input_features=None):
        return np.array(self.names_, dtype=object)

    def columns(self, u) -> list[int]:
        if not u.parse:
            return []
        end = u.endpoint if u.endpoint in EndpointFeatures.COLUMNS else "unknown"
        names = [f"parse:{s}" for s in u.parse] + [f"parse:{s}@{end}" for s in u.parse]
        return sorted(col for col in map(self.columns_.get, names) if col is not None)  # a signal fit never saw: none


class WhereItRuns(IndicatorFeatures):
    """Where an automation said with no endpoint runs, as its content says (LABELING.md rule 10): a thing only
    a car has or a car's place or moment (座椅加热, 车里, 上车) → ``car``, 快 like the car's; a thing or room only
    a home has (窗帘, 客厅) → ``home``, 慢; neither (每天早上七点打开空调: a car and a home both have one) →
    ``unplaced``, which the spec sends to 模糊 (缺端侧且端侧会改变标签时). Set only for a query with no endpoint
    that has a trigger word or a parsed condition of the user's; read from the devices' automation view and
    ``places.txt`` in running text, so a place said inside a longer word (客厅的灯) counts. An alarm or a timer
    (the ``alarm`` triggers: 闹钟) runs alike everywhere, 快 on every endpoint (rule 10): no trigger of this."""

    NAMES = ("no_endpoint_automation:car", "no_endpoint_automation:home", "no_endpoint_automation:unplaced")

    def __init__(self, devices="devices", places="places", triggers="triggers"):
        self.devices = devices
        self.places = places
        self.triggers = triggers

    def fit(self, X=None, y=None):
        entries = read_entries(resolve_lexicon(self.devices), "automation") + read_entries(resolve_lexicon(self.places))
        self.places_ = Matcher.build("places", entries)
        self.triggers_ = load_lexicon(self.triggers)
        self.alarm_cols_ = frozenset(i for i, c in enumerate(self.triggers_.categories) if c == "alarm")
        return self

    def get_feature_names_out(self, input_features=None):
        return np.array(self.NAMES, dtype=object)

    def columns(self, u) -> list[int]:
        if u.endpoint in EndpointFeatures.COLUMNS or not (
                "condition" in u.parse or not self.alarm_cols_.issuperset(self.triggers_.hits(u))):
            return []
        kinds = self.places_.categories(u.text)
        return [i for i, kind in enumerate(("car", "home")) if kind in kinds] or [2]


class ExplicitTarget(IndicatorFeatures):
    """Does the query name what to act on? XA4.1's central contrast, crossed for a linear model.

    "太冷了，调一下空调" (feeling + named device → 快) and "太冷了，帮我调一下" (feeling + vague verb →
    慢) differ by one word; the crosses of {sensation, vague verb} × {target named, no target} give
    the classifier that distinction directly instead of leaving it to n-gram weights.
    """

    NAMES = ("target", "no_target", "sensation&target", "sensation&no_target",
             "vague&target", "vague&no_target", "action&target", "action&no_target")

    def __init__(self, devices="devices", sensations="sensations", actions="actions"):
        self.devices = devices
        self.sensations = sensations
        self.actions = actions

    def fit(self, X=None, y=None):
        self.devices_ = load_lexicon(self.devices)
        self.sensations_ = load_lexicon(self.sensations)
        self.actions_ = load_lexicon(self.actions)
        categories = self.actions_.categories
        self.vague_cols_ = frozenset(i for i, c in enumerate(categories) if c == "vague")
        self.action_cols_ = frozenset(i for i, c in enumerate(categories) if c not in ("vague", "request"))
        return self

    def get_feature_names_out(self, input_features=None):
        return np.array([f"target:{n}" for n in self.NAMES], dtype=object)

    def columns(self, u) -> list[int]:
        """The crosses ``u`` has, in the order of ``NAMES``."""
        untargeted = 0 if self.devices_.hits(u) else 1  # NAMES alternate: X&target, X&no_target
        actions = self.actions_.hits(u).keys()
        out = [untargeted]
        if self.sensations_.hits(u):
            out.append(2 + untargeted)
        if not self.vague_cols_.isdisjoint(actions):
            out.append(4 + untargeted)
        if not self.action_cols_.isdisjoint(actions):
            out.append(6 + untargeted)
        return out
