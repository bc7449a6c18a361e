"""Feature extractors: scikit-learn transformers over lists of ``Utterance``.

Every extractor computes one utterance's features with ``row(u) -> {column: value}``, and
``transform`` is nothing but those rows stacked. The router's inference path calls ``row``
directly, so a single query does not pay scikit-learn's per-call validation thirteen times, and
both paths run the same code.

Each lexicon extractor counts hits per category of its lexicon file; the file is read at ``fit``
and kept in ``lexicon_``, so a fitted model does not depend on the files any more.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import _count_elements  # the C helper of Counter (a Python fallback off CPython)
from functools import partial
from itertools import repeat
from operator import add as _add

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from fastslow.features.lexicon import load_lexicon
from fastslow.features.text import CONTEXT_STATES


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


def tfidf_row(grams, vocabulary: dict, idf: list[float], sublinear: bool = True) -> tuple[list[int], list[float]]:
    """Columns and l2-normalised tf-idf weights of one document's grams: what a fitted
    ``TfidfVectorizer(norm="l2")`` gives for that row, without its per-call validation."""
    get = vocabulary.get
    counts: dict[int, int] = {}  # columns in the order of their first gram, as Counter keeps them
    for gram in grams:
        col = get(gram)
        if col is not None:
            counts[col] = counts.get(col, 0) + 1
    weights = [idf[col] if n == 1 else ((1.0 + math.log(n)) if sublinear else n) * idf[col]
               for col, n in counts.items()]
    scale = 1.0 / (math.sqrt(sum([w * w for w in weights])) or 1.0)
    return list(counts), [w * scale for w in weights]


class FusedTfidf:
    """l2-normalised tf-idf rows (sublinear or raw tf) of one fitted block, as entries of a product with
    the model's coefficients: ``(columns, values)`` that ``csr_sums`` (a batch) or a gather and
    ``np.add.reduce`` (a single query) turn into ``tfidf_rows @ coef``, without building a tf-idf
    row of dicts or a ``TfidfVectorizer`` call.

    Columns are the model's (the block's ``offset`` added); a gram out of the vocabulary, and the zero
    entry that starts every document (so that none is empty), point at ``absent``, a zero row of the
    coefficients. A batch counts each document's distinct grams (``Counter``'s C-level counting, first-occurrence
    order as ``tfidf_row``) and does the rest in numpy; ``entries`` does one document on Python floats
    with the same operations in the same order, so both give the same floats (a test holds it).
    """

    def __init__(self, vocabulary: dict, idf, sublinear: bool = True, offset: int = 0, absent: int | None = None):
        self.absent = len(idf) + offset if absent is None else absent
        self.vocabulary = {gram: col + offset for gram, col in vocabulary.items()}
        full = np.zeros(self.absent + 1)
        full[offset: offset + len(idf)] = idf
        self.idf = full
        self.idf_list = full.tolist()
        self.sublinear = sublinear
        self._tf = [0.0, 1.0]  # tf weight by count, math.log as tfidf_row computes it

    def _tf_table(self, top: int) -> list:
        while len(self._tf) <= top:
            self._tf.append(1.0 + math.log(len(self._tf)))
        return self._tf

    def batch(self, grams_of_docs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(columns, values, starts)`` of every document's entries, document k from ``starts[k]``."""
        keys: list = []
        counts: list = []
        starts: list[int] = []
        sizes: list[int] = []
        for grams in grams_of_docs:
            found: dict = {}
            _count_elements(found, grams)  # Counter's counting without Counter's Python-level set-up
            starts.append(len(keys))
            sizes.append(len(found) + 1)
            keys.append(None)  # the zero entry that starts every document
            counts.append(1)
            keys += found
            counts += found.values()
        cols = np.fromiter(map(self.vocabulary.get, keys, repeat(self.absent)), dtype=np.intp, count=len(keys))
        count = np.fromiter(counts, dtype=np.intp, count=len(counts))
        return cols, self._weights(cols, count, sizes), np.asarray(starts, dtype=np.intp)

    def _weights(self, cols: np.ndarray, count: np.ndarray, sizes) -> np.ndarray:
        """The l2-normalised tf-idf values of entries (columns and counts; document k holds ``sizes[k]`` of them)."""
        weights = self.idf.take(cols)
        top = int(count.max()) if len(count) else 1
        if top > 1:
            weights *= (np.asarray(self._tf_table(top)).take(count) if self.sublinear else count)
        # np.bincount adds in entry order, as ``entries`` does (np.add.reduceat and a 1-d reduce do not)
        owner = np.repeat(np.arange(len(sizes)), sizes)
        norm = np.sqrt(np.bincount(owner, weights * weights, minlength=len(sizes)))
        norm[norm == 0.0] = 1.0
        weights /= norm.take(owner)
        return weights

    def entries(self, grams) -> tuple[list[int], list[float]]:
        """One document's ``batch`` entries as lists, bit for bit (C-level maps over Python floats; the
        squared norm added in entry order, as ``np.bincount`` adds it, by a plain loop: for a few dozen
        entries a third cheaper than ``functools.reduce`` over a map, and so is the division's comprehension)."""
        found: dict = {}
        _count_elements(found, grams)  # Counter's counting without Counter's Python-level set-up
        return self._counted_entries(found, len(grams))

    def _counted_entries(self, found: dict, n_grams: int) -> tuple[list[int], list[float]]:
        """``entries`` of a document whose ``n_grams`` grams are counted in ``found`` (first-occurrence order)."""
        absent = self.absent
        cols = [absent]
        cols += map(self.vocabulary.get, found, repeat(absent))
        weights = list(map(self.idf_list.__getitem__, cols))  # the zero entry first: idf 0.0
        if len(found) < n_grams:  # a repeated gram: its tf weight
            tf = self._tf_table(max(found.values())) if self.sublinear else None
            for k, n in enumerate(found.values(), 1):
                if n > 1:
                    weights[k] *= tf[n] if tf is not None else n
        total = 0.0
        for w in weights:
            total += w * w
        norm = math.sqrt(total) or 1.0
        return cols, [w / norm for w in weights]


class FusedCharTfidf(FusedTfidf):
    """A ``FusedTfidf`` of ``char_ngrams(text, min_n, max_n)`` with ``max_n`` ≤ 3 whose batch starts from the texts
    (``batch_texts``): each gram is an integer of its code points, a document's distinct grams and their counts
    come from one ``np.unique`` for the batch (ordered by first occurrence, as ``batch`` counts them), and their
    columns from a hash table of the vocabulary's integers (``_columns``). No gram string is built and no dict is
    looked up per gram (in a vocabulary of ~19,000 grams a lookup costs ~100 ns, mostly cache misses). The
    entries are ``batch``'s of the texts' ``char_ngrams``, bit for bit (a test holds it).

    A gram's integer and its document's number share one int64 for ``np.unique``: unigrams and bigrams as their
    integer (42 bits); trigrams (63 bits) in the base of the batch's largest code point plus two instead of
    2**21 (48 bits for Chinese text), which leaves the document's number room."""

    BITS = 21  # a code point (at most 0x10FFFF) in 21 bits; a bigram (a + 1, b) in 42, a trigram in 63
    KEY_BITS = 63  # a document's number times the grams' span, plus the gram, below 2**63
    EMPTY = -1  # a free slot of the hash table (no gram's integer is negative)
    SLOTS_PER_GRAM = 8  # the table's size: the power of two above this many slots a vocabulary gram (one or more free)
    FIBONACCI = np.uint64(0x9E3779B97F4A7C15)  # 2**64 over the golden ratio: multiplicative hashing

    def __init__(self, vocabulary: dict, idf, sublinear: bool = True, offset: int = 0, absent: int | None = None,
                 min_n: int = 1, max_n: int = 2):
        if not 1 <= min_n <= max_n <= 3:
            raise ValueError(f"FusedCharTfidf holds grams of up to three characters, not ngram_range ({min_n}, {max_n})")
        super().__init__(vocabulary, idf, sublinear, offset, absent)
        self.min_n, self.max_n = min_n, max_n
        coded = {self.code(gram): col for gram, col in self.vocabulary.items() if 1 <= len(gram) <= 3}
        codes = np.fromiter(coded, dtype=np.int64, count=len(coded))
        self._fill_table(codes, np.fromiter(coded.values(), dtype=np.intp, count=len(coded)))

    def text_entries(self, text: str) -> tuple[list[int], list[float]]:
        """``entries(char_ngrams(text, min_n, max_n))`` (a test holds it), each size's grams counted as they are
        made: the unigrams straight from the text, no list of every gram (~0.7 µs of a query's ~8)."""
        found: dict = {}
        n_grams = 0
        grams = text  # the grams of the size at hand, each the previous size's with the next character added
        for size in range(1, self.max_n + 1):
            if size > 1:
                grams = list(map(_add, grams, text[size - 1:]))
            if size >= self.min_n:
                _count_elements(found, grams)
                n_grams += len(grams)
        return self._counted_entries(found, n_grams)

    def _home(self, codes: np.ndarray) -> np.ndarray:
        """Each integer's first slot in the table: the top ``table_bits`` of its product with ``FIBONACCI``."""
        return ((codes.view(np.uint64) * self.FIBONACCI) >> np.uint64(64 - self.table_bits)).astype(np.intp)

    def _fill_table(self, codes: np.ndarray, cols: np.ndarray) -> None:
        """The vocabulary's integers in an open-addressing table (``SLOTS_PER_GRAM``), each in the first free slot
        from its home on (linear probing), a probe a round for all that are not placed yet: every slot between an
        integer's home and its own is taken, so a look-up may stop at a free one."""
        self.table_bits = max(1, (self.SLOTS_PER_GRAM * len(codes)).bit_length())
        size = 1 << self.table_bits
        self.slots = np.full(size, self.EMPTY, dtype=np.int64)
        self.slot_cols = np.zeros(size, dtype=np.intp)
        home, pending, probe = self._home(codes), np.arange(len(codes)), 0
        while len(pending):
            at = (home[pending] + probe) & (size - 1)
            free = self.slots[at] == self.EMPTY
            taken, first = np.unique(at[free], return_index=True)  # one integer a free slot
            chosen = pending[free][first]
            self.slots[taken], self.slot_cols[taken] = codes[chosen], cols[chosen]
            pending = np.setdiff1d(pending, chosen, assume_unique=True)
            probe += 1

    def _columns(self, grams: np.ndarray) -> np.ndarray:
        """The vocabulary's column of each gram's integer, ``absent`` for a gram out of it: each integer's slots
        from its home on, up to its own or a free one (~0.3 µs a hundred grams; ``np.searchsorted`` in the
        sorted integers takes ~4, a mispredicted branch a step)."""
        cols = np.full(len(grams), self.absent, dtype=np.intp)
        at, which, mask = self._home(grams), np.arange(len(grams)), len(self.slots) - 1
        while len(which):
            slot = self.slots.take(at)
            hit = slot == grams
            cols[which[hit]] = self.slot_cols.take(at[hit])
            going = (slot != self.EMPTY) & ~hit
            which, at, grams = which[going], (at[going] + 1) & mask, grams[going]
        return cols

    @classmethod
    def code(cls, gram: str) -> int:
        """The integer of a gram of one to three characters (what ``batch_texts`` computes for every gram of a text)."""
        value = ord(gram[0])
        for char in gram[1:]:
            value = ((value + 1) << cls.BITS) | ord(char)
        return value

    def _grams(self, values: np.ndarray, doc: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray]:
        """Every gram's document and integer, a size after the other, each in text order (a gram (a, b, c) of
        characters numbered below ``base``: ((a + 1) * base + b + 1) * base + c)."""
        gram_docs, grams = [], []
        for size in range(self.min_n, self.max_n + 1):
            last = len(values) - size + 1  # a gram starts at most size - 1 characters before the end
            if last <= 0:
                break
            whole = doc[:last] == doc[size - 1:]  # its first and last characters in one text
            gram = values[:last][whole]
            for k in range(1, size):
                gram = (gram + 1) * base + values[k:last + k][whole]
            gram_docs.append(doc[:last][whole])
            grams.append(gram)
        if not grams:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)
        return np.concatenate(gram_docs), np.concatenate(grams)

    def batch_texts(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``batch([char_ngrams(t, min_n, max_n) for t in texts])``, from the texts' code points."""
        n = len(texts)
        points = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
        base = 1 << self.BITS if self.max_n <= 2 else int(points.max(initial=0)) + 2
        span = base ** self.max_n  # every gram's integer in this base is below it
        if n * span >= 1 << self.KEY_BITS:  # the document number would not fit beside the gram
            return self.batch([char_ngrams(t, self.min_n, self.max_n) for t in texts])
        doc = np.repeat(np.arange(n), np.fromiter(map(len, texts), dtype=np.intp, count=n))
        gram_doc, gram = self._grams(points, doc, 1 << self.BITS)
        key_gram = gram if base == 1 << self.BITS else self._grams(points, doc, base)[1]
        # each document's grams together, in char_ngrams' order (its unigrams, then its bigrams, …, in text order)
        order = np.argsort(gram_doc, kind="stable")
        keys, first, count = np.unique(gram_doc[order] * span + key_gram[order], return_index=True, return_counts=True)
        # per document, its distinct grams in the order they first occur (distinct indices: a stable sort orders them
        # as any sort, and it is quick on their runs: a tenth of a quicksort's time on a batch of 500 subqueries)
        by_first = np.argsort(first, kind="stable")
        key_doc, count = keys[by_first] // span, count[by_first]
        key_gram = gram[order[first[by_first]]]  # in 2**21, the vocabulary's base
        sizes = np.bincount(key_doc, minlength=n) + 1  # each document's entries after its zero entry
        starts = np.zeros(n, dtype=np.intp)
        np.cumsum(sizes[:-1], out=starts[1:])
        cols = np.full(int(sizes.sum()), self.absent, dtype=np.intp)  # the zero entries
        counts = np.ones(len(cols), dtype=np.intp)
        at_entry = np.arange(len(keys)) + key_doc + 1  # after the zero entries of this document and the ones before it
        cols[at_entry] = self._columns(key_gram)
        counts[at_entry] = count
        return cols, self._weights(cols, counts, sizes), starts


def csr_sums(weights: np.ndarray, cols: np.ndarray, values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per row of entries (row k: ``starts[k]`` up to the next start) the sum of
    ``values[i] * weights[cols[i]]``: a CSR product, which adds a row's products in stored order, as
    ``gathered_sum`` does for one row (the single-query paths): the same floats."""
    indptr = np.append(starts, len(cols))
    matrix = sp.csr_matrix((values, cols, indptr), shape=(len(starts), weights.shape[0]))
    return np.asarray(matrix @ weights)


def gathered_sum(weights: np.ndarray, cols: list, values: list) -> np.ndarray:
    """One row's ``csr_sums``: the rows of ``weights`` gathered, scaled and added row after row
    (``np.add.reduce`` along the first axis adds in order; ``np.add.reduceat`` would not)."""
    return np.add.reduce(scaled_rows(weights, cols, values), axis=0)


def gathered_sums(weights: np.ndarray, cols: list, values: list, ends: list[int]) -> np.ndarray:
    """A few rows' ``csr_sums`` (row k: the entries from the previous row's end up to ``ends[k]``), each row
    as ``gathered_sum`` adds it, with one gather and one product for them all."""
    rows = scaled_rows(weights, cols, values)
    if len(ends) == 1:
        return np.add.reduce(rows, axis=0, keepdims=True)
    sums = np.empty((len(ends), weights.shape[1]))  # each row reduced into its place: no list of rows to stack
    for k, (start, end) in enumerate(zip([0, *ends], ends)):
        np.add.reduce(rows[start:end], axis=0, out=sums[k])
    return sums


def scaled_rows(weights: np.ndarray, cols: list, values: list) -> np.ndarray:
    """``values[i] * weights[cols[i]]`` for every entry, as rows of a new matrix."""
    rows = weights.take(np.array(cols, dtype=np.intp), axis=0)
    rows *= np.array(values, dtype=np.float64)[:, None]
    return rows


def interleave(parts, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Several ``(cols, values, starts)`` entry lists of the same ``n`` rows (none empty) as one, each
    row's entries part after part: the batch's CSR rows hold what a single row's lists hold, in order."""
    sizes = [np.diff(np.append(starts, len(cols))) for cols, _, starts in parts]
    row_start = np.zeros(n, dtype=np.intp)
    np.cumsum(sum(sizes)[:-1], out=row_start[1:])
    total = sum(len(cols) for cols, _, _ in parts)
    cols_out = np.empty(total, dtype=np.intp)
    values_out = np.empty(total, dtype=np.float64)
    before = row_start.copy()
    rows = np.arange(n)
    for (cols, values, starts), size in zip(parts, sizes):
        owner = np.repeat(rows, size)
        at = np.arange(len(cols)) + (before - starts).take(owner)
        cols_out[at] = cols
        values_out[at] = values
        before += size
    return cols_out, values_out, row_start


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


class _Tfidf(RowFeatures):
    """TF-IDF (sublinear tf, l2 norm) of some analysis of the utterance, fitted by scikit-learn's
    ``TfidfVectorizer`` and applied row by row with its vocabulary and idf weights."""

    def _vectorizer(self) -> TfidfVectorizer:  # pragma: no cover
        raise NotImplementedError

    def _document(self, u):  # pragma: no cover
        raise NotImplementedError

    def fit(self, X, y=None):
        self.vectorizer_ = self._vectorizer().fit([self._document(u) for u in X])
        self.analyze_ = self.vectorizer_.analyzer  # a plain function: the same analysis in fit and row
        self.vocabulary_ = self.vectorizer_.vocabulary_
        self.idf_ = self.vectorizer_.idf_.tolist()
        return self

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return self.vectorizer_.get_feature_names_out()

    @property
    def n_columns(self) -> int:
        return len(self.idf_)

    def row(self, u) -> dict[int, float]:
        columns, weights = tfidf_row(self.analyze_(self._document(u)), self.vocabulary_, self.idf_, self.sublinear_tf)
        return dict(zip(columns, weights))

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        columns, weights = tfidf_row(self.analyze_(self._document(u)), self.vocabulary_, self.idf_, self.sublinear_tf)
        indices.extend([col + offset for col in columns])
        data.extend(weights)


class CharNgrams(_Tfidf):
    """TF-IDF of character n-grams of the normalised text: robust to unseen words and ASR noise."""

    def __init__(self, ngram_range=(1, 3), min_df=1, sublinear_tf=True):
        self.ngram_range = ngram_range
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf

    def _vectorizer(self):
        low, high = self.ngram_range
        return TfidfVectorizer(analyzer=partial(char_ngrams, min_n=low, max_n=high), min_df=self.min_df,
                               sublinear_tf=self.sublinear_tf, lowercase=False)

    def _document(self, u):
        return u.text


class WordTokens(_Tfidf):
    """TF-IDF of jieba tokens and token n-grams up to ``max_n``."""

    def __init__(self, max_n=2, min_df=1, sublinear_tf=True):
        self.max_n = max_n
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf

    def _vectorizer(self):
        return TfidfVectorizer(analyzer=partial(token_ngrams, n=self.max_n), min_df=self.min_df,
                               sublinear_tf=self.sublinear_tf, lowercase=False)

    def _document(self, u):
        return u.tokens


_LOG1P = [math.log1p(n) for n in range(8)]


class LexiconFeatures(RowFeatures):
    """Hit counts per category of one lexicon file, squashed with log1p."""

    def __init__(self, lexicon):
        self.lexicon = lexicon

    def fit(self, X=None, y=None):
        self.lexicon_ = load_lexicon(self.lexicon)
        return self

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        return np.array([f"{self.lexicon_.name}:{c}" for c in self.lexicon_.categories], dtype=object)

    def row(self, u) -> dict[int, float]:
        return {col: _LOG1P[n] if n < 8 else math.log1p(n)
                for col, n in self.lexicon_.hits(u).items()}

    @property
    def counts_only(self) -> bool:
        """True when the features are the hit counts alone (a subclass may add columns of its own)."""
        return type(self).row is LexiconFeatures.row

    @staticmethod
    def append_hits(hits: dict[int, int], offset: int, indices: list, data: list) -> None:
        """``row``'s values for precomputed hits, straight into CSR buffers (no intermediate dict)."""
        for col, n in hits.items():
            indices.append(col + offset)
            data.append(_LOG1P[n] if n < 8 else math.log1p(n))

    def append_row(self, u, offset: int, indices: list, data: list) -> None:
        if not self.counts_only:
            return super().append_row(u, offset, indices, data)
        self.append_hits(self.lexicon_.hits(u), offset, indices, data)


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
