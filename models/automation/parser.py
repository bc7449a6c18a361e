"""The automation parser: a CRF span tagger over characters, an intent classifier, and the rules.

    parser = AutomationParser().fit(queries, annotations)   # annotations: rows of fastslow.models.automation.data
    parser.parse("上车时打开空调")
    # [{"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}]

``AutomationTagger`` labels every character of the query with a BIO tag of the five span kinds of
``models/automation/rules.py`` (condition, action, duration, once, scope end). It is a linear-chain
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
from itertools import chain, repeat
from operator import add
import tempfile
import threading

import numpy as np
import pycrfsuite
from sklearn.base import BaseEstimator

from fastslow.features.automation_lexicons import AutomationLexicons, load_automation_lexicons
from fastslow.features.extractors import require_fitted
from fastslow.features.lexicon import Scanner
from fastslow.features.spoken import strip_disfluencies
from fastslow.features.text import Utterance, domain_cut
from fastslow.models.automation.rules import (
    Span, automation_text, bind_scopes, done_tail, group_dict, has_condition_signal, leading_hesitation, lowered,
    memo_edit_group,
    missing_super_task_clauses, plain_groups,
    plan_groups, repair_spans, rewrite_group, spans_to_tags, tags_to_spans,
)
from fastslow.models.automation.crf import CRFModel
from fastslow.models.automation.intents import IntentClassifier

#: readable names of the span kinds of ``models.automation.rules`` (in explanations)
SPAN_NAMES = {"C": "condition", "A": "action", "D": "duration", "N": "once", "E": "scope_end"}

_NUM = re.compile(r"\d+(?:\.\d+)?|[零一二两三四五六七八九十百千万半几]+")
_CLOCK = re.compile(r"(?:\d{1,2}|[零一二两三四五六七八九十]+)(?:点钟|点半|点|:\d\d)(?:\d{1,2}分|[一二三四五六七八九十]+分)?")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百半几]+)(?:个)?(?:分钟|小时|钟头|秒钟|秒|刻钟|天)|半小时|半个小时")
_PERCENT = re.compile(r"\d+(?:\.\d+)?%|百分之[零一二两三四五六七八九十百]+")
_CLAUSE_FEATURE = ("cl=0", "cl=1", "cl=2", "cl=3")
_LOCAL = frozenset("BIwd")  # marks copied to the neighbours: lexicon B/I, trigger words, delay (not ahead/behind)
_CLAUSE_END = ",，;；。!！?？\n"
_CLAUSE_BREAK = re.compile(f"[{re.escape(_CLAUSE_END)}]")
_SHAPES = ((_CLOCK, "clock"), (_DURATION, "dur"), (_PERCENT, "pct"), (_NUM, "num"))  # marked in this order
_NUMERAL = re.compile(r"[\d零一二两三四五六七八九十百千万半几]")  # every shape starts with one of these
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
        self.scanner = Scanner(matchers)  # every word list in one Aho-Corasick pass over the text


#: the character n-gram features, by prefix: the ones a pruned feature list builds only when the CRF knows them
GRAM_FEATURES = ("c=", "l=", "r=", "lc=", "cr=", "lcr=", "ll=", "rr=")
_GRAM_SIZES = (1, 1, 1, 2, 2, 3, 2, 2)  # characters in a gram of each family


class KnownAttributes:
    """The attribute names of a trained CRF by what ``tagging_features`` looks up: per character n-gram family
    (``GRAM_FEATURES``) its grams to their attribute, and the marks whose copy on the character after (``-1``
    and the mark) or before (``+1``) is an attribute, to that attribute; one lookup gives the string or
    ``None`` when the CRF does not know it."""

    def __init__(self, attributes):
        self.grams = tuple({a[len(prefix):]: a for a in attributes if a.startswith(prefix)} for prefix in GRAM_FEATURES)
        self.before = {a[2:]: a for a in attributes if a.startswith("-1")}
        self.after = {a[2:]: a for a in attributes if a.startswith("+1")}
        self.kind = _ByCharClass({k: "k=" + k for k in "dcasp"})


def _char_layout(text: str, table: FeatureTable, tokens: tuple[str, ...] | None):
    """What the features of ``text``'s characters are made of: the lowered text, the lexicon and shape marks
    of every character (in order), its clause, the clause-structure marks as ranges ``(mark, start, end)``
    (each character of ``start:end`` gets ``mark`` after its own marks, range by range: ``with_looks``),
    and its jieba token's position code and text."""
    n = len(text)
    low = lowered(text)
    marks: list[list[str]] = [[] for _ in range(n)]
    look_points: dict[str, list[int]] = {}
    for by_term, found in zip(table.lists, table.scanner.scan(low)):
        for a, b, term in found:
            first, inner, look = by_term[term]
            marks[a].extend(first)
            for i in range(a + 1, b):
                marks[i].append(inner)
            if look is not None:
                look_points.setdefault(look, []).append(a)
    shapes = _SHAPES if _NUMERAL.search(low) is not None else ()
    for pattern, tag in shapes:
        for m in pattern.finditer(low):
            a, b = m.span()
            marks[a].append("B:" + tag)
            for i in range(a + 1, b):
                marks[i].append("I:" + tag)
            if tag == "dur" and low.startswith(("后", "以后", "之后"), b):
                for i in range(a, b):
                    marks[i].append("delay")
    # clause structure: which markers lie ahead of / behind each character within its clause
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]  # a clause's end mark opens the next clause
    clause_of = [0] * (breaks[0] if breaks else n)
    for k, (a, b) in enumerate(zip(breaks, breaks[1:] + [n]), 1):
        clause_of += [k] * (b - a)
    starts = [0] + [b + 1 for b in breaks]
    ends = starts[1:] + [n]
    looks = []
    for key, points in look_points.items():
        ahead, behind = "ahead:" + key, "behind:" + key
        if not breaks:  # one clause (most texts): the same ranges as the loop below finds
            looks += [(ahead, 0, max(points)), (behind, min(points) + 1, n)]
            continue
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for pt in points:
            cl = clause_of[pt]
            if cl not in first or pt < first[cl]:
                first[cl] = pt
            if cl not in last or pt > last[cl]:
                last[cl] = pt
        looks += [(ahead, starts[cl], pt) for cl, pt in last.items()]
        looks += [(behind, pt + 1, ends[cl]) for cl, pt in first.items()]
    # jieba tokens: where each character sits in its token, and the token itself
    tok_pos = [""] * n
    tok_of = [""] * n
    if tokens is not None:
        i = 0
        for tok in tokens:
            length = len(tok)
            if low[i:i + length] != tok.lower():
                break
            for k in range(length):
                tok_pos[i + k] = "S" if length == 1 else ("B" if k == 0 else ("E" if k == length - 1 else "M"))
                tok_of[i + k] = tok if length <= 4 else ""
            i += length
    return low, marks, clause_of, looks, tok_pos, tok_of


def with_looks(marks: list[list[str]], looks) -> list[list[str]]:
    """``marks`` with the clause-structure marks of ``_char_layout``'s ranges appended."""
    for mark, start, end in looks:
        for i in range(start, end):
            marks[i].append(mark)
    return marks


def char_features(text: str, table: FeatureTable, tokens: tuple[str, ...] | None = None) -> list[list[str]]:
    """Feature strings of every character of ``text`` (see the module doc): what the CRF is trained on, and
    the definition of ``tagging_features`` and ``AttributeIndex.ids``."""
    n = len(text)
    if n == 0:
        return []
    low, marks, clause_of, looks, tok_pos, tok_of = _char_layout(text, table, tokens)
    marks = with_looks(marks, looks)
    classes = [_char_class(ch) for ch in low]
    padded = "\x02\x02" + low + "\x03\x03"
    feats = []
    prev_marks: list[str] = []
    for i in range(n):
        j = i + 2
        c0, cm1, cp1 = padded[j], padded[j - 1], padded[j + 1]
        f = ["b", "c=" + c0, "l=" + cm1, "r=" + cp1, "lc=" + cm1 + c0, "cr=" + c0 + cp1, "lcr=" + cm1 + c0 + cp1,
             "ll=" + padded[j - 2] + cm1, "rr=" + cp1 + padded[j + 2], "k=" + classes[i],
             _CLAUSE_FEATURE[min(clause_of[i], 3)]]
        if tok_pos[i]:
            f.append("tp=" + tok_pos[i])
            if tok_of[i]:
                f.append("t=" + tok_of[i])
        here = marks[i]
        f += here
        f += prev_marks
        if i < n - 1:
            f += ["+1" + m for m in marks[i + 1] if m[0] in _LOCAL]
        prev_marks = ["-1" + m for m in here if m[0] in _LOCAL]
        feats.append(f)
    feats[0].append("BOS")
    feats[-1].append("EOS")
    return feats


def tagging_features(text: str, table: FeatureTable, tokens: tuple[str, ...] | None,
                     known: KnownAttributes) -> list[list[str]]:
    """``char_features`` without the character n-grams and mark copies the CRF has no attribute for (crfsuite
    drops an attribute it does not know before scoring): the rest in the same order, so crfsuite sums the
    same weights in the same order for the same tags and marginals, with less work here and in crfsuite.

    Built a column at a time (each character's n-grams, class and clause by lookups over the whole text),
    then the marks a pass each, so each character's come in ``char_features``' order: its own marks, its
    clause-structure marks, the copies of the marks of the character before it, of the character after it."""
    n = len(text)
    if n == 0:
        return []
    low, marks, clause_of, looks, tok_pos, tok_of = _char_layout(text, table, tokens)
    c, l, r, lc, cr, lcr, ll, rr = known.grams
    padded = "\x02\x02" + low + "\x03\x03"
    pairs = list(map(add, padded, padded[1:]))  # pairs[k]: padded[k:k + 2]; the ll, lc, cr, rr of character i
    right, lefts = padded[3:], pairs[1:]  # are pairs i to i + 3 (zip stops at the n characters of low)
    columns = [map(c.get, low), map(l.get, padded[1:]), map(r.get, right), map(lc.get, lefts),
               map(cr.get, pairs[2:]), map(lcr.get, map(add, lefts, right)), map(ll.get, pairs), map(rr.get, pairs[3:]),
               map(known.kind.__getitem__, low),
               map(_CLAUSE_FEATURE.__getitem__, map(min, clause_of, repeat(3))) if clause_of[-1]
               else repeat(_CLAUSE_FEATURE[0])]  # clause_of never decreases: all 0
    if tokens is not None:
        columns.append(["tp=" + p if p else None for p in tok_pos])
        columns.append(["t=" + w if w else None for w in tok_of])
    feats = [["b", *filter(None, row)] for row in zip(*columns)]
    marked = [(i, here) for i, here in enumerate(marks) if here]
    for i, here in marked:
        feats[i] += here
    for mark, start, end in looks:  # as with_looks, but no clause-structure mark is then looked up as a copy
        for f in feats[start:end]:
            f.append(mark)
    before, after = known.before.get, known.after.get
    for i, here in marked:
        if i + 1 < n:
            feats[i + 1] += filter(None, map(before, here))
    for i, here in marked:
        if i:
            feats[i - 1] += filter(None, map(after, here))
    feats[0].append("BOS")
    feats[-1].append("EOS")
    return feats


class AttributeIndex:
    """The attribute ids of a trained CRF keyed the way ``char_features`` makes its strings, so that ``ids``
    finds the attributes of many texts at once and builds no string: the character n-grams as integer keys
    (per family, its characters' ids in a vocabulary of the characters the n-grams hold) looked up with one
    ``searchsorted``, the marks (a mark is its attribute's name, or ``-1``/``+1`` and the mark of the
    character before/after) with dict lookups."""

    def __init__(self, attributes):
        ids = {a: i for i, a in enumerate(attributes)}
        grams = []  # (family, gram, id) of every n-gram attribute
        for family, prefix in enumerate(GRAM_FEATURES):
            size = _GRAM_SIZES[family]
            grams += [(family, a[len(prefix):], i) for a, i in ids.items()
                      if a.startswith(prefix) and len(a) == len(prefix) + size]
        self.chars = {ch: k for k, ch in enumerate(sorted({ch for _, g, _ in grams for ch in g}), 1)}  # 0: unknown
        self.base = len(self.chars) + 1
        if len(GRAM_FEATURES) * self.base ** 3 >= 2 ** 63:
            raise ValueError(f"{len(self.chars)} characters in the CRF's n-grams: too many for int64 gram keys")
        keys = np.array([self._key(f, [self.chars[ch] for ch in g]) for f, g, _ in grams], dtype=np.int64)
        order = np.argsort(keys)
        self.keys = keys[order]
        self.gram_ids = np.array([i for _, _, i in grams], dtype=np.intp)[order]
        self.bias = ids.get("b", -1)
        self.kind_of = _ByCharClass({k: ids.get("k=" + k, -1) for k in "dcasp"})
        self.clause = np.array([ids.get(f, -1) for f in _CLAUSE_FEATURE], dtype=np.intp)
        self.token_pos = {p: ids.get("tp=" + p, -1) for p in "SBME"}
        self.token = {a[2:]: i for a, i in ids.items() if a.startswith("t=")}
        self.mark = ids
        self._mark_codes(ids, before={a[2:]: i for a, i in ids.items() if a.startswith("-1") and a[2:3] in _LOCAL},
                         after={a[2:]: i for a, i in ids.items() if a.startswith("+1") and a[2:3] in _LOCAL})
        self.bos, self.eos = ids.get("BOS", -1), ids.get("EOS", -1)

    def _mark_codes(self, ids: dict, before: dict, after: dict):
        """One code per mark that names an attribute itself (``ids``) or as a copy on the character after it
        (``before``: ``-1`` and the mark) or before it (``after``: ``+1``), so that ``ids`` looks each mark up
        once: ``own``, ``before_code`` and ``after_code`` map a code to those attribute ids (``-1``: none;
        the code of a mark unknown in all three is ``-1``, the last entry)."""
        extra = [m for m in {**before, **after} if m not in ids]
        self.mark_code = {**ids, **{m: len(ids) + k for k, m in enumerate(extra)}}
        size = len(ids) + len(extra) + 1
        self.own = np.full(size, -1, dtype=np.intp)
        self.own[:len(ids)] = list(ids.values())
        self.before_code, self.after_code = np.full(size, -1, dtype=np.intp), np.full(size, -1, dtype=np.intp)
        for table, lookup in ((self.before_code, before), (self.after_code, after)):
            table[[self.mark_code[m] for m in lookup]] = list(lookup.values())

    def _key(self, family: int, chars) -> int:
        key = family
        for c in chars:
            key = key * self.base + c
        return key * self.base ** (3 - len(chars))

    def ids(self, texts, table: FeatureTable, tokens) -> tuple[np.ndarray, np.ndarray]:
        """The attributes of every character of ``texts`` (none empty; ``tokens`` one entry per text, or
        ``None``) as two arrays: ``ids[k]`` (``-1``: unknown to the CRF) belongs to the character at
        ``where[k]`` (the characters of all texts numbered one after another). Per character its ids come
        in the order of ``char_features(text, table, tokens)``; characters interleave (a whole family at
        a time, every character's)."""
        # one pass over the texts keeps flat lists of plain strings and ints (no per-character lists stay alive)
        lows, clause_of, counts, flat = [], [], [], []
        look_ids, look_starts, look_sizes = [], [], []
        token_at, token_ids, named_at, named_ids = [], [], [], []
        mark_get = self.mark.get
        offset = 0
        for text, tok in zip(texts, tokens):
            low, marks, clauses, looks, tok_pos, tok_of = _char_layout(text, table, tok)
            lows.append(low)
            clause_of += clauses
            counts += map(len, marks)
            flat += chain.from_iterable(marks)
            for mark, a, b in looks:
                if b > a:
                    look_ids.append(mark_get(mark, -1))
                    look_starts.append(offset + a)
                    look_sizes.append(b - a)
            if tok is not None:
                for i, (tp, word) in enumerate(zip(tok_pos, tok_of)):
                    if tp:
                        token_at.append(offset + i)
                        token_ids.append(self.token_pos[tp])
                        if word:
                            named_at.append(offset + i)
                            named_ids.append(self.token.get(word, -1))
            offset += len(text)
        total = offset
        lengths = np.array([len(low) for low in lows], dtype=np.intp)
        starts = np.cumsum(lengths) - lengths
        joined = "".join(["\x02\x02" + low + "\x03\x03" for low in lows])
        chars = np.fromiter(map(self.chars.get, joined, repeat(0)), dtype=np.int64, count=len(joined))
        at = np.arange(total) + 2 + 4 * np.repeat(np.arange(len(lows)), lengths)  # each character's place in joined
        base = self.base
        c0, left, right, left2, right2 = chars[at], chars[at - 1], chars[at + 1], chars[at - 2], chars[at + 2]
        keys = np.concatenate([c0 * base * base, left * base * base, right * base * base,
                               (left * base + c0) * base, (c0 * base + right) * base, (left * base + c0) * base + right,
                               (left2 * base + left) * base, (right * base + right2) * base])
        keys += np.repeat(np.arange(len(GRAM_FEATURES), dtype=np.int64) * base ** 3, total)
        found = np.searchsorted(self.keys, keys).clip(max=len(self.keys) - 1)
        grams = np.where(self.keys[found] == keys, self.gram_ids[found], -1)
        kinds = np.fromiter(map(self.kind_of.__getitem__, chain.from_iterable(lows)), dtype=np.intp, count=total)
        clauses = self.clause[np.minimum(np.array(clause_of, dtype=np.intp), 3)]
        everyone = np.arange(total)
        ids = [np.full(total, self.bias, dtype=np.intp), grams, kinds, clauses]
        where = [everyone, np.tile(everyone, len(GRAM_FEATURES)), everyone, everyone]
        if token_at:
            ids += [np.array(token_ids, dtype=np.intp), np.array(named_ids, dtype=np.intp)]
            where += [np.array(token_at, dtype=np.intp), np.array(named_at, dtype=np.intp)]
        # the marks of each character, its clause-structure marks (ranges), the marks of the character before
        # it ("-1") and after it ("+1"): clause-structure marks are never copied to the neighbours (``_LOCAL``)
        owner = np.repeat(everyone, np.array(counts, dtype=np.intp))
        codes = np.fromiter(map(self.mark_code.get, flat, repeat(-1)), dtype=np.intp, count=len(flat))
        ids.append(self.own[codes])
        where.append(owner)
        if look_ids:
            sizes = np.array(look_sizes, dtype=np.intp)
            ids.append(np.repeat(np.array(look_ids, dtype=np.intp), sizes))
            where.append(np.arange(int(sizes.sum())) + np.repeat(np.array(look_starts) - (np.cumsum(sizes) - sizes), sizes))
        last = np.zeros(total, dtype=bool)
        last[starts + lengths - 1] = True
        first = np.zeros(total, dtype=bool)
        first[starts] = True
        for lookup, shift, keep in ((self.before_code, 1, ~last[owner]), (self.after_code, -1, ~first[owner])):
            ids.append(lookup[codes[keep]])
            where.append(owner[keep] + shift)
        ids += [np.full(len(lows), self.bos, dtype=np.intp), np.full(len(lows), self.eos, dtype=np.intp)]
        where += [starts, starts + lengths - 1]
        return np.concatenate(ids), np.concatenate(where)


class _ByCharClass(dict):
    """Character -> what ``kind`` holds for its class (``_char_class``): its ``k=`` feature or that feature's
    attribute id; filled as characters come (at most one entry per Unicode character)."""

    def __init__(self, kind: dict):
        super().__init__()
        self.kind = kind

    def __missing__(self, ch: str):
        self[ch] = value = self.kind[_char_class(ch)]
        return value


class AutomationTagger(BaseEstimator):
    """Character BIO tagger of condition / action / duration / once / scope-end spans (a CRF).

    ``fit(texts, tag_sequences)``; ``predict(texts)`` → tag sequences. The trained CRF is kept as
    bytes in ``model_`` so the estimator pickles; the C tagger is opened lazily per process."""

    def __init__(self, c1=0.05, c2=0.01, max_iterations=150, use_tokens=False, lexicon_dir=None):
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.use_tokens = use_tokens
        self.lexicon_dir = lexicon_dir

    # -- features
    def tokens(self, text: str):
        if not self.use_tokens or not text:
            return None
        return tuple(domain_cut(self.words_).lcut(text))

    def features(self, text: str, tokens=None):
        """Every feature string of every character (``char_features``): what the CRF is trained on."""
        return char_features(text, self.table_, tokens if tokens is not None else self.tokens(text))

    def tagging_features(self, text: str, tokens=None):
        """``features`` without the attributes the trained CRF has no weight for (``tagging_features``): the
        same tags and marginals, for less work here and in crfsuite."""
        return tagging_features(text, self.table_, tokens if tokens is not None else self.tokens(text), self._known())

    def _known(self) -> KnownAttributes:
        known = self.__dict__.get("_known_attributes")
        if known is None:  # once per process, never pickled
            known = self.__dict__["_known_attributes"] = KnownAttributes(self._crf()[0].attributes)
        return known

    def _crf(self) -> tuple[CRFModel, AttributeIndex]:
        """The trained CRF as arrays (``CRFModel``) and its ``AttributeIndex``: read from ``model_`` once per
        process (so a model pickled before they existed works alike), never pickled."""
        crf = self.__dict__.get("_crf_arrays")
        if crf is None:
            model = CRFModel.from_bytes(self.model_)
            crf = self.__dict__["_crf_arrays"] = (model, AttributeIndex(model.attributes))
        return crf

    # -- fit / predict
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
                trainer.append(self.features(text), list(tags))
        trainer.set_params({"c1": self.c1, "c2": self.c2, "max_iterations": self.max_iterations,
                            "feature.possible_transitions": True})
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tagger.crfsuite")
            trainer.train(path)
            with open(path, "rb") as f:
                self.model_ = f.read()
        self.labels_ = tuple(sorted({t for tags in y for t in tags}))
        return self

    def _tagger(self):
        local = self.__dict__.setdefault("_local", threading.local())
        tagger = getattr(local, "tagger", None)
        if tagger is None:
            tagger = pycrfsuite.Tagger()
            tagger.open_inmemory(self.model_)
            local.tagger = tagger
        return tagger

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_local", None)
        state.pop("_known_attributes", None)
        state.pop("_crf_arrays", None)
        return state

    def predict(self, X, tokens=None):
        """The tag sequence of every text: crfsuite's Viterbi tags (``Tagger.tag`` of ``features``); a batch of
        ``NUMPY_BATCH`` texts or more is scored with numpy over attribute ids (``CRFModel``, ``AttributeIndex``)."""
        return self._decode(X, tokens, marginals=False)[0]

    def predict_spans(self, X) -> list[list[Span]]:
        return [tags_to_spans(text, tags) for text, tags in zip(X, self.predict(X))]

    def predict_marginals(self, X, tokens=None) -> tuple[list[list[str]], list[list[float]]]:
        """Tag sequences and, per character, the CRF's marginal probability of the tag it chose (crfsuite's
        ``Tagger.marginal``, equal within rounding)."""
        return self._decode(X, tokens, marginals=True)

    #: a batch of at least this many texts is scored with numpy (``CRFModel``, ``AttributeIndex``: a fixed cost
    #: of a few hundred numpy calls, then a few microseconds a text); a smaller one text by text by crfsuite's
    #: Tagger, whose C loops beat those numpy calls on a few short texts (the server's one query at a time)
    NUMPY_BATCH = 32

    def _decode(self, X, tokens, marginals: bool):
        require_fitted(self, "model_")
        if tokens is None:
            tokens = [None] * len(X)
        given = [tok if tok is not None else self.tokens(text) for text, tok in zip(X, tokens) if text]
        texts = [text for text in X if text]
        if len(texts) >= self.NUMPY_BATCH:
            tags, probs = self._decode_numpy(texts, given, marginals)
        elif texts:
            tags, probs = self._decode_crfsuite(texts, given, marginals)
        else:  # nothing to tag (most single queries): no tagger to fetch
            tags, probs = [], []
        decoded = iter(zip(tags, probs))
        tags_out, marginals_out = [], []
        for text in X:
            if not text:
                tags_out.append([])
                marginals_out.append([] if marginals else None)
                continue
            path, p = next(decoded)
            tags_out.append(path)
            marginals_out.append(p)
        return tags_out, marginals_out

    def _decode_numpy(self, texts, tokens, marginals: bool):
        model, index = self._crf()
        ids, where = index.ids(texts, self.table_, tokens)
        lengths = [len(text) for text in texts]
        scores = model.state_scores(ids, where, sum(lengths))
        label_ids, probs = model.decode(scores, lengths, marginals)
        labels = model.labels
        return [[labels[i] for i in path] for path in label_ids], probs

    def _decode_crfsuite(self, texts, tokens, marginals: bool):
        tagger = self._tagger()
        known = self._known()
        tags, probs = [], []
        for text, tok in zip(texts, tokens):
            path = tagger.tag(tagging_features(text, self.table_, tok, known))
            tags.append(path)
            probs.append(list(map(tagger.marginal, path, range(len(path)))) if marginals else None)
        return tags, probs


def surface_of(query, lex=None) -> str:
    """The text the parser reads: an ``Utterance``'s ``surface`` (normalised once, by the segmenter),
    or ``automation_text`` of a raw query, without what is said around the request (the spoken
    layer's ``strip_disfluencies``: a leading wake word or hesitation, a polite tail), so that 小爱同学
    or 谢谢 never ends up in a condition or a subquery. With the parser's lexicons ``lex``, also without
    a leading hesitation the spoken layer keeps for the router (额, 诶: ``leading_hesitation``), and what
    the spoken layer strips after it (额你好小鹏…)."""
    if isinstance(query, Utterance):
        text = query.surface if query.surface is not None else query.text
    else:
        text = automation_text(query)
    if not text:
        return text
    spoken = getattr(query, "spoken_surface", None)  # the segmenter's strip_disfluencies of this very text
    text = spoken if spoken is not None else strip_disfluencies(text)
    if lex is not None:
        cut = leading_hesitation(text, lex)
        if cut:
            text = strip_disfluencies(text[cut:])
        done = done_tail(text, lex)  # 副驾座椅通风开五分钟就行: "that will do", no 就 of a condition
        if done:
            text = text[:-done]
    return text


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
        """The groups of every query (a string, or the router's ``Utterance``: see ``surface_of``), in order. Never raises on text input: empty, punctuation-only or
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
        require_fitted(self, "tagger_")
        lex = self.lexicons_
        texts = [surface_of(q, lex) for q in queries]
        memo = [memo_edit_group(t, lex) if t else None for t in texts]  # a rule, not the tagger's call
        signal = [bool(t) and m is None and has_condition_signal(t, lex) for t, m in zip(texts, memo)]
        signalled = [t for t, s in zip(texts, signal) if s]
        if with_confidence:
            tag_lists, marginal_lists = self.tagger_.predict_marginals(signalled)
        else:
            tag_lists, marginal_lists = self.tagger_.predict(signalled), [None] * len(signalled)
        tagged = iter(zip(tag_lists, marginal_lists))
        plans, confidences = [], []
        for text, s, memo_group in zip(texts, signal, memo):
            if not s:
                groups = [memo_group] if memo_group is not None else plain_groups(text, lex)
                plans.append(groups)
                confidences.append([None] * len(groups))
                continue
            tags, marginals = next(tagged)
            spans = repair_spans(text, tags_to_spans(text, tags), self.lexicons_)
            if not with_confidence:
                plans.append(plan_groups(text, spans, lex))
                continue
            groups, scores = [], []
            spans = sorted(list(spans) + missing_super_task_clauses(text, spans, lex), key=lambda sp: sp.start)
            for raw in bind_scopes(text, spans, lex):
                members = raw.conditions + raw.actions + raw.durations + raw.once
                lo, hi = (min(sp.start for sp in members), max(sp.end for sp in members)) if members else (0, len(text))
                score = round(float(min(marginals[lo:hi], default=1.0)), 4)
                for g in rewrite_group(text, raw, lex):
                    if g.condition is not None or g.subqueries:
                        groups.append(g)
                        scores.append(score)
            plans.append(groups)
            confidences.append(scores)
        subs = [s for groups in plans for g in groups for s in g.subqueries]
        intents = iter(self.intents_.predict(subs) if subs else [])
        out = [[group_dict(g, [next(intents) for _ in g.subqueries]) for g in groups] for groups in plans]
        return out, confidences

    def parse(self, query) -> list[dict]:
        return self.parse_many([query])[0]

    def explain_spans(self, query: str) -> dict:
        """What the groups of ``query`` were made from: the tagger's spans, each with its kind, text,
        place in the parser's text and confidence (the lowest CRF marginal of the tag chosen over its
        characters), or, when the tagger did not run, which rule made the groups instead (``decided_by``:
        ``tagger``, ``memo`` for a memo edit, ``no_signal`` for a query without any signal word)."""
        require_fitted(self, "tagger_")
        text = surface_of(query, self.lexicons_)
        if not text:
            return {"text": text, "decided_by": "no_signal", "spans": []}
        if memo_edit_group(text, self.lexicons_) is not None:
            return {"text": text, "decided_by": "memo", "spans": []}
        if not has_condition_signal(text, self.lexicons_):
            return {"text": text, "decided_by": "no_signal", "spans": []}
        (tags,), (marginals,) = self.tagger_.predict_marginals([text])
        spans = repair_spans(text, tags_to_spans(text, tags), self.lexicons_)
        return {"text": text, "decided_by": "tagger", "spans": [
            {"kind": SPAN_NAMES.get(sp.kind, sp.kind), "text": sp.text, "start": sp.start, "end": sp.end,
             "confidence": round(float(min(marginals[sp.start:sp.end], default=1.0)), 4)} for sp in spans]}

    def predict(self, X):
        return self.parse_many(X)

    def predict_spans(self, queries) -> list[list[Span]]:
        """The tagger's spans (for span metrics; ``parse_many`` skips it for queries without a signal)."""
        return self.tagger_.predict_spans([automation_text(q) for q in queries])
