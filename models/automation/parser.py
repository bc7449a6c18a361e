"""The automation parser: a CRF span tagger over characters, an intent classifier, and the rules.

    parser = AutomationParser().fit(queries, annotations)   # annotations: rows of fastslow.models.automation.data
    parser.parse("上车时打开空调")
    # [{"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]

``AutomationTagger`` labels every character of the query with a BIO tag of the five span kinds of
``models/automation/rules/`` (condition, action, duration, once, scope end). It is a linear-chain
CRF (python-crfsuite, the engine behind sklearn-crfsuite, as in snips-nlu and Rasa) over features of
each character: the characters and character pairs around it, the jieba token it belongs to, the
automation lexicons (time words, trigger markers, seats, devices, action and reminder verbs, super-task
keywords, memo words, once markers, scope ends, fillers), number/clock/duration shapes, and where the
clause's markers are (a 就 or 时 still ahead, a trigger or reminder verb already behind). The rules turn
its spans into groups; ``IntentClassifier`` labels each subquery.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from functools import cached_property
from itertools import accumulate, compress, repeat
from operator import add, itemgetter
import tempfile
import weakref
from typing import NamedTuple

import numpy as np
import pycrfsuite
from sklearn.base import BaseEstimator

from fastslow.features.automation_lexicons import AutomationLexicons, load_automation_lexicons
from fastslow.features.extractors import require_fitted
from fastslow.features.lexicon import Scanner
from fastslow.features.memo import TextMemo
from fastslow.features.normalise import chinese_punctuation, clean, normalise, spaces_as_pauses
from fastslow.features.spoken import slips, strip_disfluencies, without_false_starts
from fastslow.features.text import domain_cut
from fastslow.models.automation.rules import (
    DEFAULT, Span, analyse, automation_text, done_tail, group_dict, leading_hesitation, lowered, management_group,
    plain_groups, plan_groups, repair_spans, retracted, spans_to_tags, tags_to_spans,
)
from fastslow.models.automation.crf import CODE_POINTS, CRFModel, find_keys
from fastslow.models.automation.intents import IntentClassifier, follow_named_device

#: readable names of the span kinds of ``models.automation.rules`` (in explanations)
SPAN_NAMES = {"C": "condition", "A": "action", "D": "duration", "N": "once", "E": "scope_end"}

_NUM = re.compile(r"\d+(?:\.\d+)?|[零一二两三四五六七八九十百千万半几]+")
_CLOCK = re.compile(r"(?:\d{1,2}|[零一二两三四五六七八九十]+)(?:点钟|点半|点|:\d\d)(?:\d{1,2}分|[一二三四五六七八九十]+分)?")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百半几]+)(?:个)?(?:分钟|小时|钟头|秒钟|秒|刻钟|天)|半小时|半个小时")
_PERCENT = re.compile(r"\d+(?:\.\d+)?%|百分之[零一二两三四五六七八九十百]+")
_LOCAL = frozenset("BIwd")  # marks copied to the neighbours: lexicon B/I, trigger words, delay (not ahead/behind)
_CLAUSE_END = ",，;；。!！?？\n"
_CLAUSE_BREAK = re.compile(f"[{re.escape(_CLAUSE_END)}]")
#: between the texts of a batch laid out as one string (``char_attributes``): the pads that end one text's n-grams
#: and begin the next one's, around a clause end mark, so that no clause, lexicon term or number shape runs from
#: one text into the next (``FeatureTable`` refuses a term holding one of these characters)
_BETWEEN = "\x03\x03\n\x02\x02"
_SHAPES = ((_CLOCK, "clock"), (_DURATION, "dur"), (_PERCENT, "pct"), (_NUM, "num"))  # marked in this order
_NUMERAL = re.compile(r"[\d零一二两三四五六七八九十百千万半几]")  # every match of a shape starts with one of these
#: what every match of a shape holds besides its numeral (its unit, sign or separator): a text without it has no
#: match of that shape, so ``_char_layout`` runs only the patterns whose cue is in the text (most numbers are plain)
_SHAPE_CUES = {"clock": re.compile("[点:]"), "dur": re.compile("[钟时秒天]"), "pct": re.compile("%|百分之")}
#: markers whose presence ahead of / behind a character in its clause is a feature
_LOOK = {"triggers": ("suffix", "then", "and", "or", "prefix", "threshold"), "reminder_verbs": None,
         "once": None, "scope_end": None, "action_verbs": None, "events": None}


def _char_class(ch: str) -> str:
    if ch.isdigit():
        return "d"
    if "\u3400" <= ch <= "\u9fff":
        return "c"
    if ch.isalpha():
        return "a"
    if ch.isspace():
        return "s"
    return "p"


class FeatureTable:
    """The lexicon part of the features, precomputed per term: for every word list, its pattern and,
    per term, the marks of its first and inner characters and the clause marker it counts as."""

    def __init__(self, lex: AutomationLexicons):
        self.lists = []
        matchers = []
        for name in AutomationLexicons.FEATURE_MATCHERS:
            matcher = getattr(lex, name)
            if matcher.pattern is None:
                continue
            watch = _LOOK.get(name, False)
            by_term = {}
            for term, cat in matcher.category.items():
                tag = f"{name}:{cat}"
                first = ["B:" + tag]
                if name in ("triggers", "reminder_verbs", "once", "scope_end") and len(term) <= 3:
                    first.append("w:" + term)
                look = None
                if watch is not False and (watch is None or cat in watch):
                    look = f"{name}:{cat}" if watch else name
                by_term[term] = (tuple(first), "I:" + tag, look)
            self.lists.append(by_term)
            matchers.append(matcher)
        if any(ch in term for by_term in self.lists for term in by_term for ch in _BETWEEN):
            raise ValueError(f"a word list term holds one of {_BETWEEN!r}, which char_attributes puts between texts")
        self.scanner = Scanner(matchers)  # every word list in one Aho-Corasick pass over the text


def _char_layout(low: str, starts: list[int], table: FeatureTable, tokens: list | None):
    """What the features of the characters of ``low`` are made of (``low``: lowered texts laid out as one
    string, text ``k`` from ``starts[k]``, ``_BETWEEN`` them): the lexicon and shape marks and their places (a
    place's marks in order: by word list, then by shape), and per place of ``low`` its clause (numbered over all
    of ``low``), the clause-structure marks as ranges ``(mark, start, end)`` (each place of ``start:end`` gets
    ``mark`` after its own marks, range by range), and the jieba token's position code and text (``tokens``:
    per text its tokens or None; without any, both None)."""
    n = len(low)
    marks: list[str] = []
    marked: list[int] = []  # the place of each of marks
    look_points: dict[tuple[int, str], list[int]] = {}  # (text, look key): a text's keys come in its own order
    for by_term, found in zip(table.lists, table.scanner.scan(low)):
        for a, b, term in found:
            first, inner, look = by_term[term]
            marks += first
            marked += [a] * len(first)
            marks += [inner] * (b - a - 1)
            marked += range(a + 1, b)
            if look is not None:
                look_points.setdefault((bisect_right(starts, a) - 1, look), []).append(a)
    numerals = [m.start() for m in _NUMERAL.finditer(low)]
    for pattern, tag in _SHAPES if numerals else ():
        if tag in _SHAPE_CUES and _SHAPE_CUES[tag].search(low) is None:
            continue
        for a, b in _shape_spans(pattern, low, numerals):
            marks += ["B:" + tag] + ["I:" + tag] * (b - a - 1)
            marked += range(a, b)
            if tag == "dur" and low.startswith(("后", "以后", "之后"), b):
                marks += ["delay"] * (b - a)
                marked += range(a, b)
    ends = [start - len(_BETWEEN) for start in starts[1:]] + [n]
    clause_of, looks = _clause_layout(low, look_points, list(zip(starts, ends)))
    if tokens is None or all(tok is None for tok in tokens):
        return marks, marked, clause_of, looks, None, None
    tok_pos, tok_of = [""] * n, [""] * n
    for start, end, tok in zip(starts, ends, tokens):
        if tok is not None:
            tok_pos[start:end], tok_of[start:end] = _token_layout(low[start:end], tok)
    return marks, marked, clause_of, looks, tok_pos, tok_of


def _shape_spans(pattern: re.Pattern, low: str, numerals: list[int]) -> list[tuple[int, int]]:
    """The spans of ``pattern.finditer(low)`` for a shape, whose every match starts with a numeral: tried only
    at the places of the numerals (``numerals``, in order), not at every place of a batch's layout."""
    spans, end, match = [], 0, pattern.match
    for at in numerals:
        if at >= end:
            m = match(low, at)
            if m is not None:
                spans.append(m.span())
                end = m.end()
    return spans


def _clause_layout(text: str, look_points: dict[tuple[int, str], list[int]],
                   bounds: list[tuple[int, int]]) -> tuple[np.ndarray, list[tuple[str, int, int]]]:
    """The clause structure of ``_char_layout``: every character's clause (a clause's end mark opens the next
    one) and which markers lie ahead of / behind each character within its clause, as ranges: per look key
    and clause holding its points, ``ahead:`` up to its last point there, ``behind:`` after its first (``bounds``:
    each text's start and end, which the ranges of its points stay within)."""
    n = len(text)
    if _CLAUSE_BREAK.search(text) is None:  # one clause (most texts): the same ranges as the loop below finds
        looks = []
        for (_, key), points in look_points.items():
            looks += [("ahead:" + key, 0, max(points)), ("behind:" + key, min(points) + 1, n)]
        return np.zeros(n, dtype=np.intp), looks
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
    opens = np.zeros(n, dtype=np.intp)
    opens[breaks] = 1
    clause_of = opens.cumsum()  # the number of end marks up to each place
    starts = [0] + [b + 1 for b in breaks]
    ends = starts[1:] + [n]
    looks = []
    for (t, key), points in look_points.items():
        low, high = bounds[t]
        cl = clause_of[points[0]]
        if clause_of[points[-1]] == cl:  # the points (in order) in one clause (most): the loop's two ranges
            looks += [("ahead:" + key, max(starts[cl], low), points[-1]),
                      ("behind:" + key, points[0] + 1, min(ends[cl], high))]
            continue
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for pt in points:
            cl = clause_of[pt]
            if cl not in first or pt < first[cl]:
                first[cl] = pt
            if cl not in last or pt > last[cl]:
                last[cl] = pt
        looks += [("ahead:" + key, max(starts[cl], low), pt) for cl, pt in last.items()]
        looks += [("behind:" + key, pt + 1, min(ends[cl], high)) for cl, pt in first.items()]
    return clause_of, looks


def _token_layout(low: str, tokens: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Per character of ``low``, where it sits in its jieba token (``S``, ``B``, ``M``, ``E``; ``""`` past the
    first token that does not match the text) and that token (``""`` if longer than 4)."""
    tok_pos = [""] * len(low)
    tok_of = [""] * len(low)
    i = 0
    for tok in tokens:
        length = len(tok)
        if low[i:i + length] != tok.lower():
            break
        for k in range(length):
            tok_pos[i + k] = "S" if length == 1 else ("B" if k == 0 else ("E" if k == length - 1 else "M"))
            tok_of[i + k] = tok if length <= 4 else ""
        i += length
    return tok_pos, tok_of


class Column(NamedTuple):
    """One family of CRF attributes of a text: the attribute ``prefix + values[k]`` belongs to the character
    ``at[k]`` (``at`` None: one value per character, in order)."""

    prefix: str
    values: "list[str] | Grams | Coded"
    at: np.ndarray | None = None


class Coded:
    """The values of a column of few distinct values, ``names[codes[k]]``: ``attribute_ids`` finds each name's
    id once and takes the ids of the whole column in one step. Iterated, the values as str."""

    __slots__ = ("names", "codes")

    def __init__(self, names: tuple[str, ...], codes: np.ndarray):
        self.names, self.codes = names, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __iter__(self):
        return map(self.names.__getitem__, self.codes.tolist())


class Padded:
    """The texts of a batch laid out as one string between the n-grams' pads (``text``: the character at place
    ``j`` of the layout is ``text[j + 2]``), and, made once for every n-gram column that names its n-grams,
    its characters and its pairs of neighbours as str (``pairs[k]``: ``text[k:k + 2]``)."""

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def chars(self) -> list[str]:
        return list(self.text)

    @cached_property
    def pairs(self) -> list[str]:
        return list(map(add, self.chars, self.chars[1:]))


class Grams:
    """The values of a column of character n-grams of one to three characters: per character, the characters at
    ``offsets`` from it (one after the other, e.g. ``(-1, 0)``: the one before and itself) in ``padded``;
    ``keep``: the places of the characters (None: every place). Iterated, the n-grams as str; ``places``, where
    each starts in ``padded.text``, whose n-grams ``gram_keys`` reads as numbers."""

    __slots__ = ("padded", "keep", "offsets")

    def __init__(self, padded: Padded, keep: np.ndarray | None, offsets: tuple[int, ...]):
        self.padded, self.keep, self.offsets = padded, keep, offsets

    def __len__(self) -> int:
        return len(self.padded.text) - 4 if self.keep is None else len(self.keep)

    def __iter__(self):
        every, start, width = len(self.padded.text) - 4, 2 + self.offsets[0], len(self.offsets)
        firsts = (self.padded.chars if width == 1 else self.padded.pairs)[start:start + every]
        grams = firsts if width < 3 else map(add, firsts, self.padded.chars[start + 2:start + 2 + every])
        return iter(grams) if self.keep is None else map(list(grams).__getitem__, self.keep.tolist())

    def places(self) -> np.ndarray:
        return (np.arange(len(self)) if self.keep is None else self.keep) + (2 + self.offsets[0])


def gram_keys(padded: str, width: int) -> np.ndarray:
    """Per place of ``padded`` (up to ``width`` from its end), the ``width`` characters from it as one number
    (``crf.code_key``)."""
    codes = np.frombuffer(padded.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)
    count = len(codes) - width + 1
    key = codes[:count]
    for k in range(1, width):
        key = key * CODE_POINTS + codes[k:k + count]
    return key


def _placed(prefix: str, places, values, char_of: np.ndarray) -> Column:
    """The column of ``values`` at ``places`` of the layout, those that are characters (``char_of``: each place's
    character, ``-1`` between texts and past the ends)."""
    if not len(places):  # the token columns of a tagger without tokens: no numpy call for nothing
        return Column(prefix, [], np.empty(0, dtype=np.intp))
    at = char_of.take(np.asarray(places, dtype=np.intp))
    inside = at >= 0
    if inside.all():
        return Column(prefix, values, at)
    if isinstance(values, Coded):
        return Column(prefix, Coded(values.names, values.codes[inside]), at[inside])
    return Column(prefix, list(compress(values, inside.tolist())), at[inside])


_CHAR_CLASS_NAMES = ("d", "c", "a", "s", "p")  # every value of ``_char_class``


class _CharClasses(dict):
    """Character -> the number of its ``_char_class`` in ``_CHAR_CLASS_NAMES``, filled as characters come (at
    most one entry per character)."""

    def __missing__(self, ch: str) -> int:
        self[ch] = value = _CHAR_CLASS_NAMES.index(_char_class(ch))
        return value


_CHAR_CLASSES = _CharClasses()
_CLAUSES = ("0", "1", "2", "3")  # the cl= values: a character's clause in its text, 3 for any later one


def char_attributes(texts: list[str], table: FeatureTable, tokens: list | None = None) -> list[Column]:
    """The CRF's attributes of every character of ``texts`` (see the module doc), the characters of all texts
    numbered one after another, as columns: the one definition from which training (``attribute_rows``: the
    names crfsuite is trained on), crfsuite's tagging of a few texts (``attribute_rows`` of the names the CRF
    knows) and the numpy scoring of a batch (``attribute_ids``) all derive. A character's attributes come in
    the order of the columns, the order crfsuite adds their weights in. ``tokens``: per text its jieba tokens
    (or None), or None.

    The texts are laid out as one string, ``_BETWEEN`` each two, so that a batch costs a pass of each column,
    not one per text; an n-gram column is ``Grams``, which makes its n-grams as str only when the names are
    asked for (``attribute_rows``): ``attribute_ids`` reads them as numbers.

    To add an attribute, add a column here (what it is made of, if it comes from the lexicons or the clause
    structure, in ``_char_layout``; an n-gram of up to three characters: ``grams`` and its offsets) and retrain."""
    lows = [lowered(text) for text in texts]
    lengths = [len(low) for low in lows]
    n = sum(lengths)
    if n == 0:
        return []
    low = _BETWEEN.join(lows)
    starts = list(accumulate([len(_BETWEEN) + m for m in lengths[:-1]], initial=0))  # each text's place
    own, own_at, clause_of, looks, tok_pos, tok_of = _char_layout(low, starts, table, tokens)
    firsts = list(accumulate(lengths[:-1], initial=0))  # each text's first character
    places = np.repeat(np.subtract(starts, firsts), lengths) + np.arange(n)  # each character's place
    char_of = np.full(len(low) + 1, -1)  # each place's character ([-1] and [len(low)]: past the ends)
    char_of[places] = np.arange(n)
    keep = None if len(lows) == 1 else places
    padded = Padded("\x02\x02" + low + "\x03\x03")  # the n-grams reach two out

    def grams(*offsets):
        return Grams(padded, keep, offsets)

    # a text's clauses from 0: the pad before it is in the clause the end mark of _BETWEEN opens
    before = clause_of.take(np.subtract(starts, 1))  # the clause of the pad before each text (none before the first)
    before[0] = 0
    first_clause = np.repeat(before, lengths)
    clauses = np.minimum(clause_of.take(places) - first_clause, 3)
    classes = np.fromiter(map(_CHAR_CLASSES.__getitem__, "".join(lows)), dtype=np.intp, count=n)
    local = list(map(_LOCAL.__contains__, map(itemgetter(0), own)))
    local_at, local = np.array(list(compress(own_at, local)), dtype=np.intp), list(compress(own, local))
    look, look_start, look_end = zip(*looks) if looks else ((), (), ())
    look_start = np.array(look_start, dtype=np.intp)
    look_sizes = (np.array(look_end, dtype=np.intp) - look_start).clip(0)  # each range's places, one after another
    look_places = np.repeat(look_start - np.cumsum(look_sizes) + look_sizes, look_sizes) + np.arange(look_sizes.sum())
    tokened = [(j, p, w) for j, p, w in zip(range(len(low)), tok_pos, tok_of) if p] if tok_pos else []
    named = [(j, w) for j, _, w in tokened if w]
    first_at = [i for i, m in zip(firsts, lengths) if m]
    last_at = [i + m - 1 for i, m in zip(firsts, lengths) if m]
    return [
        Column("", Coded(("b",), np.zeros(n, dtype=np.intp))),  # bias
        Column("c=", grams(0)),  # the character, the one before, the one after
        Column("l=", grams(-1)),
        Column("r=", grams(1)),
        Column("lc=", grams(-1, 0)),  # the pairs and the triple around it
        Column("cr=", grams(0, 1)),
        Column("lcr=", grams(-1, 0, 1)),
        Column("ll=", grams(-2, -1)),
        Column("rr=", grams(1, 2)),
        Column("k=", Coded(_CHAR_CLASS_NAMES, classes)),  # its class
        Column("cl=", Coded(_CLAUSES, clauses)),  # its clause: 0, 1, 2, 3 or later
        _placed("tp=", [j for j, _, _ in tokened], [p for _, p, _ in tokened], char_of),  # its place in its
        _placed("t=", [j for j, _ in named], [w for _, w in named], char_of),  # jieba token, and that token
        _placed("", own_at, own, char_of),  # its lexicon and number-shape marks
        _placed("", look_places,  # the markers ahead of it, behind it
                Coded(look, np.repeat(np.arange(len(look)), look_sizes)), char_of),
        _placed("-1", local_at + 1, local, char_of),  # the local marks of the character before it
        _placed("+1", local_at - 1, local, char_of),  # and after it
        Column("", ["BOS"] * len(first_at) + ["EOS"] * len(last_at), np.array(first_at + last_at, dtype=np.intp)),
    ]


def attribute_rows(columns: list[Column], n: int, known: CRFModel | None = None) -> list[list]:
    """Per character of ``n`` characters, its attributes in the order of ``columns``: their names
    (``prefix + value``), what crfsuite is trained on; with ``known`` (a trained CRF), only the attributes it
    has a weight for, as crfsuite reads them (UTF-8 bytes): crfsuite drops the others before scoring, so the
    same weights are added in the same order, for less work."""
    rows = [[] for _ in range(n)]
    for prefix, values, at in columns:
        places = range(n) if at is None else at.tolist()
        if known is None:
            for i, value in zip(places, values):
                rows[i].append(prefix + value)
        else:
            ids, names = known.attribute_ids(prefix).get, known.encoded
            for i, value in zip(places, values):
                k = ids(value)
                if k is not None:
                    rows[i].append(names[k])
    return rows


def attribute_ids(columns: list[Column], n: int, crf: CRFModel) -> tuple[np.ndarray, np.ndarray]:
    """The attributes of ``n`` characters (``char_attributes`` of a batch) as ``crf``'s attribute ids: ``ids[k]``
    (``-1``: unknown to the CRF) belongs to the character ``where[k]``. A column at a time, so each character's
    ids come in the order of its columns, the order crfsuite adds them in. No n-gram is made as a string: the
    n-grams of one width are read as numbers at every place of the batch once (``gram_keys``) and found once
    among the CRF's n-grams of that width (``crf.attribute_keys`` of their columns' prefixes); each column
    then takes its row at its characters' places. The other values are found in ``crf.attribute_ids``."""
    everyone = np.arange(n)
    ids, where = [np.empty(0, dtype=np.intp)], [np.empty(0, dtype=np.intp)]
    grams = [c for c in columns if isinstance(c.values, Grams)]
    found = {}  # width -> the prefixes of that width, their ids (a column each), the row of each place's n-gram
    for width in {len(c.values.offsets) for c in grams}:
        prefixes = tuple(c.prefix for c in grams if len(c.values.offsets) == width)
        keys, table = crf.attribute_keys(prefixes, width)
        found[width] = prefixes, table.T, find_keys(gram_keys(grams[0].values.padded.text, width), keys)
    for prefix, values, at in columns:
        if isinstance(values, Grams):
            prefixes, table, rows = found[len(values.offsets)]
            ids.append(table[prefixes.index(prefix)].take(rows.take(values.places())))
        elif isinstance(values, Coded):
            lookup = crf.attribute_ids(prefix).get
            ids.append(np.array([lookup(name, -1) for name in values.names], dtype=np.intp).take(values.codes))
        else:
            lookup = crf.attribute_ids(prefix).get
            ids.append(np.fromiter(map(lookup, values, repeat(-1)), dtype=np.intp, count=len(values)))
        where.append(everyone if at is None else at)
    return np.concatenate(ids), np.concatenate(where)


class AutomationTagger(BaseEstimator):
    """Character BIO tagger of condition / action / duration / once / scope-end spans (a CRF).

    ``fit(texts, tag_sequences)``; ``predict(texts)`` → tag sequences. The trained CRF is ``crf_``
    (``CRFModel``: crfsuite's model file, pickled as that file)."""

    #: a batch of at least this many texts is decoded with numpy (``CRFModel.decode``), a smaller one text by
    #: text by crfsuite (``CRFModel.tag``): see ``CRFModel`` for the figures of ``benchmarks/bench_automation.py``
    NUMPY_BATCH = 32

    def __init__(self, c1=0.05, c2=0.01, max_iterations=150, use_tokens=False, lexicon_dir=None):
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.use_tokens = use_tokens
        self.lexicon_dir = lexicon_dir

    def tokens(self, text: str):
        if not self.use_tokens or not text:
            return None
        return tuple(domain_cut(self.words_).lcut(text))

    def attributes(self, texts: list[str], tokens=None) -> list[Column]:
        """``char_attributes`` of ``texts`` (with their jieba tokens when ``use_tokens``; ``tokens``: per text
        its tokens, or None to cut them here)."""
        if tokens is None:
            tokens = [None] * len(texts)
        return char_attributes(texts, self.table_, [tok if tok is not None else self.tokens(text)
                                                    for text, tok in zip(texts, tokens)])

    def item_sequence(self, text: str, tokens=None) -> pycrfsuite.ItemSequence:
        """The attribute names of every character of ``text``: what the CRF is trained on."""
        return pycrfsuite.ItemSequence(attribute_rows(self.attributes([text], [tokens]), len(text)))

    def fit(self, X, y):
        self.lexicons_ = load_automation_lexicons(self.lexicon_dir)
        self.table_ = FeatureTable(self.lexicons_)
        words = set()
        for name in ("device_kinds", "positions", "time_words", "super_task", "memo", "once"):
            words.update(t for t in getattr(self.lexicons_, name).category if len(t) > 1)
        self.words_ = tuple((w, None) for w in sorted(words))
        trainer = pycrfsuite.Trainer(verbose=False)
        for text, tags in zip(X, y):
            if text:
                trainer.append(self.item_sequence(text), list(tags))
        trainer.set_params({"c1": self.c1, "c2": self.c2, "max_iterations": self.max_iterations,
                            "feature.possible_transitions": True})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tagger.crfsuite")
            trainer.train(path)
            with open(path, "rb") as f:
                self.crf_ = CRFModel.from_bytes(f.read())
        self.labels_ = tuple(sorted({t for tags in y for t in tags}))
        return self

    def predict(self, X, tokens=None):
        """The tag sequence of every text: crfsuite's Viterbi tags (``Tagger.tag`` of ``item_sequence``)."""
        return self._decode(X, tokens, marginals=False)[0]

    def predict_spans(self, X) -> list[list[Span]]:
        return [tags_to_spans(text, tags) for text, tags in zip(X, self.predict(X))]

    def predict_marginals(self, X, tokens=None) -> tuple[list[list[str]], list[list[float]]]:
        """Tag sequences and, per character, the CRF's marginal probability of the tag it chose (crfsuite's
        ``Tagger.marginal``, equal within rounding)."""
        return self._decode(X, tokens, marginals=True)

    def _decode(self, X, tokens, marginals: bool):
        require_fitted(self, "crf_")
        if tokens is None:
            tokens = [None] * len(X)
        texts = [text for text in X if text]
        given = [tok for text, tok in zip(X, tokens) if text]
        crf = self.crf_
        if len(texts) >= self.NUMPY_BATCH:
            lengths = [len(text) for text in texts]
            ids, where = attribute_ids(self.attributes(texts, given), sum(lengths), crf)
            label_ids, probs = crf.decode(crf.state_scores(ids, where, sum(lengths)), lengths, marginals)
            tags = [[crf.labels[k] for k in path] for path in label_ids]
        else:
            tags, probs = [], []
            for text, tok in zip(texts, given):
                path, p = crf.tag(attribute_rows(self.attributes([text], [tok]), len(text), known=crf), marginals)
                tags.append(path)
                probs.append(p)
        decoded = iter(zip(tags, probs))
        out = [next(decoded) if text else ([], [] if marginals else None) for text in X]
        return [t for t, _ in out], [p for _, p in out]


def without_leading_chunks(query: str) -> str:
    """``query`` without the space-separated words at its start that the spoken layer strips when a space is read
    as the pause it stands for (小舟 扫地机开始扫地, 小乐小乐 嗯 那个 胎压低了就…: an assistant's name no list knows is
    stripped only before a pause, and ``clean`` deletes a space between Chinese characters)."""
    chunks = query.split()
    if len(chunks) < 2:
        return query
    paused = strip_disfluencies(normalise(query))
    for k in range(len(chunks) - 1, 0, -1):
        rest = " ".join(chunks[k:])
        if strip_disfluencies(normalise(rest)) == paused:
            return rest
    return query


def surface_of(query, lex=None) -> str:
    """The text the parser reads: ``automation_text`` of a raw query, without what is said around the request
    (the spoken layer's ``strip_disfluencies``: a leading wake word or hesitation, a polite tail, a hesitation
    between two pauses; and a false start, ``without_false_starts``), so that 小爱同学, 谢谢 or 呃 never ends up in a
    condition or a subquery. A space between Chinese characters is the pause it stands for (``spaces_as_pauses``),
    as the router reads it: 打开座椅通风 放点轻音乐 is two requests, 打开后排空调 后排没人的时候… a request before a
    condition; but a pause before 就 is none (the spec: what comes before 就 is the condition), nor one before
    a memo's content (新建一个便签 写上买牛奶). With the parser's lexicons ``lex``, also without
    a leading hesitation the spoken layer keeps for the router (额, 诶: ``leading_hesitation``), and what
    the spoken layer strips after it (额你好小鹏…), and without every command the user takes back (打开空调不对|
    打开座椅加热: ``retracted``)."""
    if not isinstance(query, str):
        return ""
    query = without_false_starts(without_leading_chunks(query))
    # stripped before its half-width marks become Chinese ones (``automation_text``): the stripper reads , and ，
    # alike and keeps every mark it leaves beside the characters it had, so the order makes no difference, and a
    # query's clean text is (but for letter case) the router's, whose strip the stripper's memo then gives back
    paused = spaces_as_pauses(query) if _SPACE.search(query) else query
    text = _PAUSE_THAT_PARTS_NOTHING.sub("", chinese_punctuation(strip_disfluencies(clean(paused))))
    if not text:
        return text
    if lex is not None:
        cut = leading_hesitation(text, lex)
        if cut:
            text = strip_disfluencies(text[cut:])
        done = done_tail(text, lex)  # 副驾座椅通风开五分钟就行: "that will do", no 就 of a condition
        if done:
            text = text[:-done]
        taken = retracted(text, lex)  # 打开空调不对|打开座椅加热: each command taken back goes, with its correction
        if taken:
            bounds = [0, *(i for span in taken for i in span), len(text)]
            text = "".join(text[bounds[k]:bounds[k + 1]] for k in range(0, len(bounds), 2))
    return text


#: a pause inside a condition or a subquery; a pause that parts nothing, before the (你)就 of a condition or the
#: content of a memo (新建一个便签 写上… , ``surface_of``)
_PAUSE = re.compile(r"[，,]")
_SPACE = re.compile(r"\s")
#: … and one after a memo's verb or item, before what it holds (帮我加个待办 给车买保险, 记一下 车停在B2 036,
#: 备忘录里加一条 给车做保养)
_PAUSE_THAT_PARTS_NOTHING = re.compile(r"[，,]+(?=你?就|写上|写着|内容是)|(?:" + "|".join(
    f"(?<={said})" for said in ("记一下", "记下", "记下来", "记个事儿", "记个事", "待办", "备忘", "备忘录", "便签",
                                "加一条", "添一条", "记一条", "新建一条")) + r")[，,]+")


def without_spoken_pauses(groups: list[dict], query) -> list[dict]:
    """``groups`` (fresh dicts, changed in place) without the pauses ``surface_of`` read from the spaces of a
    query that has no punctuation of its own: a condition or a subquery is the user's words, and a space was no
    word (新建一个便签 写上买牛奶 → 新建一个便签写上买牛奶). A query typed with its commas keeps them."""
    texts = [g["condition"] or "" for g in groups] + [q["subquery"] for g in groups for q in g["querys"]]
    if not any(_PAUSE.search(text) for text in texts) or not isinstance(query, str) or _PAUSE.search(clean(query)):
        return groups
    for group in groups:
        if group["condition"] not in (None, DEFAULT):
            group["condition"] = _PAUSE.sub("", group["condition"])
        for q in group["querys"]:
            q["subquery"] = _PAUSE.sub("", q["subquery"])
    return groups


def as_said(groups: list[dict], query) -> list[dict]:
    """``groups`` (fresh dicts, changed in place) with each misrecognised term the spoken layer put back for the
    parser (做椅 → 座椅, 蓝雅 → 蓝牙) said again as in ``query``: the tagger and the intent classifier read the
    term, but a condition or a subquery is the user's words (spec 改写规则 names every rewrite, and a
    correction is none of them). Only a span that is not already a piece of the query is looked at."""
    if not isinstance(query, str):
        return groups
    said = clean(query)
    texts = [g["condition"] for g in groups if g["condition"] not in (None, DEFAULT)]
    texts += [q["subquery"] for g in groups for q in g["querys"]]
    if all(t in said for t in texts):
        return groups
    found = slips(said)
    if not found:
        return groups

    def back(text: str) -> str:
        for windows in found:
            for fixed, heard in windows:
                if fixed in text:
                    text = text.replace(fixed, heard)
                    break
        return text

    for g in groups:
        if g["condition"] not in (None, DEFAULT):
            g["condition"] = back(g["condition"])
        for q in g["querys"]:
            q["subquery"] = back(q["subquery"])
    return groups


#: distinct surfaces whose parse a process keeps per parser (``AutomationParser._parse``)
PARSE_MEMO = 65536
_PARSES: "weakref.WeakKeyDictionary[AutomationParser, TextMemo]" = weakref.WeakKeyDictionary()


class AutomationParser(BaseEstimator):
    """Query → the spec's automation groups: tagger, then the rules, then one intent per subquery.

    ``fit(queries, rows)`` takes annotated rows (``fastslow.models.automation.data``): their gold spans train
    the tagger and their gold (subquery, intent) pairs the intent classifier."""

    def __init__(self, c1=0.05, c2=0.01, max_iterations=150, use_tokens=False, intent_C=8.0, lexicon_dir=None):
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.use_tokens = use_tokens
        self.intent_C = intent_C
        self.lexicon_dir = lexicon_dir

    def fit(self, X, y):
        """``X``: queries; ``y``: their annotated rows (``spans`` and ``expected``)."""
        texts = [automation_text(q) for q in X]
        tags = [spans_to_tags(t, row["spans"] or []) for t, row in zip(texts, y)]
        self.tagger_ = AutomationTagger(c1=self.c1, c2=self.c2, max_iterations=self.max_iterations,
                                        use_tokens=self.use_tokens, lexicon_dir=self.lexicon_dir).fit(texts, tags)
        self.lexicons_ = self.tagger_.lexicons_
        pairs = [(q["subquery"], q["intent"]) for row in y for g in (row.get("expected") or [])
                 for q in g["querys"] if q.get("intent")]
        self.intents_ = IntentClassifier(C=self.intent_C, lexicon_dir=self.lexicon_dir).fit(
            [s for s, _ in pairs], [i for _, i in pairs])
        return self

    def warm_up(self) -> "AutomationParser":
        self.parse_many(["上车时打开空调"])
        return self

    def parse_many(self, queries) -> list[list[dict]]:
        """The groups of every query (a string: see ``surface_of``), in order. Never raises on text input: empty, punctuation-only or
        very long strings get ``[]`` or whatever groups their words hold.

        A query without any signal word (trigger, time, duration, once, reminder, super task, memo:
        ``AutomationLexicons.signal``) cannot hold a condition or a ``default``: it skips the tagger
        and is split into its unconditional actions by ``plain_groups``. This keeps the tagger from
        reading a feeling (无聊死了，放首歌) as a condition, and is most of the parser's speed."""
        return self._parse(queries, with_confidence=False)[0]

    def parse_many_with_confidence(self, queries) -> tuple[list[list[dict]], list[list[float | None]]]:
        """``parse_many`` plus, per group, the tagger's confidence in it: the lowest CRF marginal
        probability of the chosen tag over the characters from the group's first span to its last
        (so a doubt elsewhere in the query does not lower it). ``None`` for the groups of a query
        without any signal word (no tagger ran: they are plain ``null`` groups)."""
        return self._parse(queries, with_confidence=True)

    def _parse(self, queries, with_confidence: bool):
        """The groups (and, ``with_confidence``, their confidences) of every query. A pure function of the
        query's surface, and a log says its head queries again and again: the last ``PARSE_MEMO`` distinct
        surfaces' answers are kept for this process (``_PARSES``, outside the model, never pickled), and each
        record gets groups of its own (a copy), so no two records share a dict."""
        require_fitted(self, "tagger_")
        lex = self.lexicons_
        keys = [(with_confidence, surface_of(q, lex)) for q in queries]
        memo = _PARSES.get(self)
        if memo is None:
            memo = _PARSES[self] = TextMemo(PARSE_MEMO)
        found = {key: memo.get(key) for key in keys}
        missing = [key for key, answer in found.items() if answer is None]
        if missing:
            fresh = dict(zip(missing, zip(*self._parse_texts([text for _, text in missing], with_confidence))))
            found.update(fresh)
            memo.keep(fresh)
        answers = [found[key] for key in keys]
        return ([as_said(without_spoken_pauses([{**g, "querys": [dict(q) for q in g["querys"]]} for g in groups], query),
                         query)
                 for query, (groups, _) in zip(queries, answers)],
                [list(confidences) for _, confidences in answers])

    def _parse_texts(self, texts: list[str], with_confidence: bool):
        """``_parse`` of the parser's texts (``surface_of``), none of them asked before."""
        lex = self.lexicons_
        memo = [management_group(t, lex) if t else None for t in texts]  # a rule, not the tagger's call
        analyses = [analyse(t, lex) for t in texts]
        signal = [bool(t) and m is None and a.signalled for t, m, a in zip(texts, memo, analyses)]
        signalled = [t for t, s in zip(texts, signal) if s]
        if not signalled:  # most single queries: no tagger call at all
            tag_lists, marginal_lists = [], []
        elif with_confidence:
            tag_lists, marginal_lists = self.tagger_.predict_marginals(signalled)
        else:
            tag_lists, marginal_lists = self.tagger_.predict(signalled), [None] * len(signalled)
        tagged = iter(zip(tag_lists, marginal_lists))
        plans, confidences = [], []
        for text, analysis, s, memo_group in zip(texts, analyses, signal, memo):
            if not s:
                groups = [memo_group] if memo_group is not None else plain_groups(text, lex)
                plans.append(groups)
                confidences.append([None] * len(groups))
                continue
            tags, marginals = next(tagged)
            groups = plan_groups(analysis, repair_spans(analysis, tags_to_spans(text, tags)))
            plans.append(groups)
            confidences.append([round(float(min(marginals[g.bounds[0]:g.bounds[1]], default=1.0)), 4)
                                if with_confidence else None for g in groups])
        subs = [s for groups in plans for g in groups for s in g.subqueries]
        intents = iter(self.intents_.predict(subs) if subs else [])
        out = [follow_named_device([group_dict(g, [next(intents) for _ in g.subqueries]) for g in groups], self.lexicons_)
               for groups in plans]
        return out, confidences

    def parse(self, query) -> list[dict]:
        return self.parse_many([query])[0]

    def explain_spans(self, query: str) -> dict:
        """What the groups of ``query`` were made from: the tagger's spans, each with its kind, text,
        place in the parser's text and confidence (the lowest CRF marginal of the tag chosen over its
        characters), or, when the tagger did not run, which rule made the groups instead (``decided_by``:
        ``tagger``, ``management`` for a memo edit or a described automation's change, ``no_signal`` for a query
        without any signal word)."""
        require_fitted(self, "tagger_")
        text = surface_of(query, self.lexicons_)
        if not text:
            return {"text": text, "decided_by": "no_signal", "spans": []}
        if management_group(text, self.lexicons_) is not None:
            return {"text": text, "decided_by": "management", "spans": []}
        analysis = analyse(text, self.lexicons_)
        if not analysis.signalled:
            return {"text": text, "decided_by": "no_signal", "spans": []}
        (tags,), (marginals,) = self.tagger_.predict_marginals([text])
        spans = repair_spans(analysis, tags_to_spans(text, tags))
        return {"text": text, "decided_by": "tagger", "spans": [
            {"kind": SPAN_NAMES.get(sp.kind, sp.kind), "text": sp.text, "start": sp.start, "end": sp.end,
             "confidence": round(float(min(marginals[sp.start:sp.end], default=1.0)), 4)} for sp in spans]}

    def predict(self, X):
        return self.parse_many(X)

    def predict_spans(self, queries) -> list[list[Span]]:
        """The tagger's spans (for span metrics; ``parse_many`` skips it for queries without a signal)."""
        return self.tagger_.predict_spans([automation_text(q) for q in queries])
