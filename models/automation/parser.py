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
from itertools import repeat
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
from fastslow.features.text import domain_cut
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
        self.scanner = Scanner(matchers)  # every word list in one Aho-Corasick pass over the text


#: the character n-gram features, by prefix: the ones a pruned feature list builds only when the CRF knows them
GRAM_FEATURES = ("c=", "l=", "r=", "lc=", "cr=", "lcr=", "ll=", "rr=")
_GRAM_SIZES = (1, 1, 1, 2, 2, 3, 2, 2)  # characters in a gram of each family
_PAIR_FAMILIES = (3, 4, 6, 7)  # the families of two characters: lc, cr, ll, rr


class KnownAttributes:
    """The attribute names of a trained CRF as crfsuite reads them (UTF-8 bytes: pycrfsuite passes bytes on as
    they are, a str it encodes first), by what ``tagging_features`` looks up: ``name`` (an attribute's str name
    to its bytes), per character n-gram family (``GRAM_FEATURES``) its grams to their attribute, per character
    its ``k=`` attribute, per clause number its ``cl=`` attribute, and the marks whose copy on the character
    after (``-1`` and the mark) or before (``+1``) is an attribute, to that attribute; one lookup gives the
    bytes or ``None`` when the CRF does not know the attribute."""

    def __init__(self, attributes):
        self.name = {a: a.encode("utf-8") for a in attributes}
        self.grams = tuple({a[len(prefix):]: b for a, b in self.name.items() if a.startswith(prefix)}
                           for prefix in GRAM_FEATURES)
        self.before = {a[2:]: b for a, b in self.name.items() if a.startswith("-1")}
        self.after = {a[2:]: b for a, b in self.name.items() if a.startswith("+1")}
        self.kind = _ByCharClass({k: self.name.get("k=" + k) for k in "dcasp"})
        self.clause = tuple(map(self.name.get, _CLAUSE_FEATURE))


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
        if tag in _SHAPE_CUES and _SHAPE_CUES[tag].search(low) is None:
            continue
        for m in pattern.finditer(low):
            a, b = m.span()
            marks[a].append("B:" + tag)
            for i in range(a + 1, b):
                marks[i].append("I:" + tag)
            if tag == "dur" and low.startswith(("后", "以后", "之后"), b):
                for i in range(a, b):
                    marks[i].append("delay")
    clause_of, looks = _clause_layout(text, look_points)
    tok_pos, tok_of = _token_layout(low, tokens)
    return low, marks, clause_of, looks, tok_pos, tok_of


def _clause_layout(text: str, look_points: dict[str, list[int]]) -> tuple[list[int], list[tuple[str, int, int]]]:
    """The clause structure of ``_char_layout``: every character's clause (a clause's end mark opens the next
    one) and which markers lie ahead of / behind each character within its clause, as ranges: per look key
    and clause holding its points, ``ahead:`` up to its last point there, ``behind:`` after its first."""
    n = len(text)
    if _CLAUSE_BREAK.search(text) is None:  # one clause (most texts): the same ranges as the loop below finds
        looks = []
        for key, points in look_points.items():
            looks += [("ahead:" + key, 0, max(points)), ("behind:" + key, min(points) + 1, n)]
        return [0] * n, looks
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
    clause_of = [0] * breaks[0]
    for k, (a, b) in enumerate(zip(breaks, breaks[1:] + [n]), 1):
        clause_of += [k] * (b - a)
    starts = [0] + [b + 1 for b in breaks]
    ends = starts[1:] + [n]
    looks = []
    for key, points in look_points.items():
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for pt in points:
            cl = clause_of[pt]
            if cl not in first or pt < first[cl]:
                first[cl] = pt
            if cl not in last or pt > last[cl]:
                last[cl] = pt
        looks += [("ahead:" + key, starts[cl], pt) for cl, pt in last.items()]
        looks += [("behind:" + key, pt + 1, ends[cl]) for cl, pt in first.items()]
    return clause_of, looks


def _token_layout(low: str, tokens: tuple[str, ...] | None) -> tuple[list[str], list[str]]:
    """Per character of ``low``, where it sits in its jieba token (``S``, ``B``, ``M``, ``E``; ``""`` past the
    first token that does not match the text, or without tokens) and that token (``""`` if longer than 4)."""
    tok_pos = [""] * len(low)
    tok_of = [""] * len(low)
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
    return tok_pos, tok_of


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
                     known: KnownAttributes) -> list[list[bytes]]:
    """The attributes of ``char_features`` that the CRF knows, in their order, as crfsuite reads them (``known``:
    UTF-8 bytes): crfsuite drops an attribute it does not know before scoring, so it sums the same weights in
    the same order for the same tags and marginals, with less work here and in crfsuite.

    Built a column at a time (each character's n-grams, class and clause by lookups over the whole text),
    then the marks a pass each, so each character's come in ``char_features``' order: its own marks, its
    clause-structure marks, the copies of the marks of the character before it, of the character after it."""
    n = len(text)
    if n == 0:
        return []
    low, marks, clause_of, looks, tok_pos, tok_of = _char_layout(text, table, tokens)
    name = known.name.get
    c, l, r, lc, cr, lcr, ll, rr = known.grams
    chars = ["\x02", "\x02", *low, "\x03", "\x03"]  # each character one str, hashed once for all its lookups
    pairs = list(map(add, chars, chars[1:]))  # pairs[k]: chars[k:k + 2]; the ll, lc, cr, rr of character i
    right, lefts = chars[3:], pairs[1:]  # are pairs i to i + 3 (zip stops at the n characters of low)
    columns = [repeat(name("b")), map(c.get, chars[2:]), map(l.get, chars[1:]), map(r.get, right), map(lc.get, lefts),
               map(cr.get, pairs[2:]), map(lcr.get, map(add, lefts, right)), map(ll.get, pairs), map(rr.get, pairs[3:]),
               map(known.kind.__getitem__, chars[2:]),
               map(known.clause.__getitem__, map(min, clause_of, repeat(3))) if clause_of[-1]
               else repeat(known.clause[0])]  # clause_of never decreases: all 0
    if tokens is not None:
        columns.append([name("tp=" + p) if p else None for p in tok_pos])
        columns.append([name("t=" + w) if w else None for w in tok_of])
    feats = [[*filter(None, row)] for row in zip(*columns)]
    marked = [(i, here) for i, here in enumerate(marks) if here]
    for i, here in marked:
        feats[i] += filter(None, map(name, here))
    for mark, start, end in looks:  # as with_looks, but no clause-structure mark is then looked up as a copy
        mark = name(mark)
        if mark is not None:
            for f in feats[start:end]:
                f.append(mark)
    before, after = known.before.get, known.after.get
    for i, here in marked:  # left to right, so a character gets the copies from before it ahead of those from after
        if i + 1 < n:
            feats[i + 1] += filter(None, map(before, here))
        if i:
            feats[i - 1] += filter(None, map(after, here))
    for i, mark in ((0, name("BOS")), (-1, name("EOS"))):
        if mark is not None:
            feats[i].append(mark)
    return feats


class AttributeIndex:
    """The attribute ids of a trained CRF keyed the way ``char_features`` makes its strings, so that ``ids``
    finds the attributes of many texts at once and builds no string: the character n-grams by their
    characters' ids in a vocabulary of the characters the n-grams hold (``_gram_tables``), the marks (a mark
    is its attribute's name, or ``-1``/``+1`` and the mark of the character before/after) as codes, per term
    of ``table``'s word lists and per number shape (``_term_codes``)."""

    def __init__(self, attributes, table: FeatureTable):
        ids = {a: i for i, a in enumerate(attributes)}
        grams = []  # (family, gram, id) of every n-gram attribute
        for family, prefix in enumerate(GRAM_FEATURES):
            size = _GRAM_SIZES[family]
            grams += [(family, a[len(prefix):], i) for a, i in ids.items()
                      if a.startswith(prefix) and len(a) == len(prefix) + size]
        self.chars = {ch: k for k, ch in enumerate(sorted({ch for _, g, _ in grams for ch in g}), 1)}  # 0: unknown
        self.base = len(self.chars) + 1
        if self.base ** 3 >= 2 ** 63:
            raise ValueError(f"{len(self.chars)} characters in the CRF's n-grams: too many for int64 gram keys")
        self._gram_tables(grams)
        self.bias = ids.get("b", -1)
        self.kind_of = _ByCharClass({k: ids.get("k=" + k, -1) for k in "dcasp"})
        self.clause = np.array([ids.get(f, -1) for f in _CLAUSE_FEATURE], dtype=np.intp)
        self.token_pos = {p: ids.get("tp=" + p, -1) for p in "SBME"}
        self.token = {a[2:]: i for a, i in ids.items() if a.startswith("t=")}
        self._mark_codes(ids, before={a[2:]: i for a, i in ids.items() if a.startswith("-1") and a[2:3] in _LOCAL},
                         after={a[2:]: i for a, i in ids.items() if a.startswith("+1") and a[2:3] in _LOCAL})
        self._term_codes(ids, table)
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

    def _term_codes(self, ids: dict, table: FeatureTable):
        """The marks of ``table``'s terms and of the number shapes as codes. Every term of every word list is an
        entry (``entry``: per word list, term -> entry number) with its word list, the codes of its first
        character's marks (``B:`` and, if it has one, ``w:``), of its inner characters' mark, and its look
        key's number (``-1``: none); per look key (by number) its word list and the attributes of being
        ahead of / behind it; per shape its pattern, ``B:`` and ``I:`` codes and whether it is a duration."""
        if any(pad in term for by_term in table.lists for term in by_term for pad in "\x02\x03"):
            raise ValueError("a word list term holds the n-gram pads \\x02/\\x03 that AttributeIndex.ids reads "
                             "between texts")
        self.scanner = table.scanner
        code = self.mark_code.get
        looks: dict[str, int] = {}  # look key -> its number
        look_list, self.entry, rows = [], [], []
        for k, by_term in enumerate(table.lists):
            self.entry.append({term: len(rows) + n for n, term in enumerate(by_term)})
            for first, inner, look in by_term.values():
                if look is not None and look not in looks:
                    looks[look] = len(looks)
                    look_list.append(k)
                word = code(first[1], -1) if len(first) > 1 else None
                rows.append((k, code(first[0], -1), -1 if word is None else word, word is not None, code(inner, -1),
                             looks[look] if look is not None else -1))
        columns = np.array(rows, dtype=np.intp).reshape(-1, 6).T
        self.entry_list, self.entry_first, self.entry_word, self.entry_has_word, self.entry_inner, self.entry_look = \
            columns
        self.shape = tuple((pattern, code("B:" + tag, -1), code("I:" + tag, -1), tag == "dur")
                           for pattern, tag in _SHAPES)
        self.delay = code("delay", -1)
        self.look_list = np.array(look_list, dtype=np.intp)
        self.ahead = np.array([ids.get("ahead:" + key, -1) for key in looks], dtype=np.intp)
        self.behind = np.array([ids.get("behind:" + key, -1) for key in looks], dtype=np.intp)

    def _gram_tables(self, grams):
        """The n-gram attributes by their characters' ids (``chars``): ``unigram[family, char]`` for the families
        of one character (c, l, r; a row of ``base`` per family); for the grams of two and three characters,
        their keys (the characters' ids as digits of base ``base``) sorted, each with its attribute per family
        of that size (``pair_ids``: lc, cr, ll, rr; ``triple_ids``: lcr), then a key above every key with no
        attribute (-1), so that a ``searchsorted`` always lands on a row. Only the grams the CRF has are
        rows: the tables grow with the attributes, not with the square of the characters."""
        self.unigram = np.full((3, self.base), -1, dtype=np.intp)
        pairs, triples = {}, {}
        for family, gram, i in grams:
            digits = [self.chars[ch] for ch in gram]
            if len(digits) == 1:
                self.unigram[family, digits[0]] = i
            elif len(digits) == 2:
                pairs.setdefault(digits[0] * self.base + digits[1], [-1] * len(_PAIR_FAMILIES))[
                    _PAIR_FAMILIES.index(family)] = i
            else:
                triples[(digits[0] * self.base + digits[1]) * self.base + digits[2]] = i
        past = np.iinfo(np.int64).max
        self.pair_keys = np.array(sorted(pairs) + [past], dtype=np.int64)
        self.pair_ids = np.array([pairs[k] for k in sorted(pairs)] + [[-1] * len(_PAIR_FAMILIES)],
                                 dtype=np.intp).reshape(-1, len(_PAIR_FAMILIES))
        self.triple_keys = np.array(sorted(triples) + [past], dtype=np.int64)
        self.triple_ids = np.array([triples[k] for k in sorted(triples)] + [-1], dtype=np.intp)

    def ids(self, texts, tokens) -> tuple[np.ndarray, np.ndarray]:
        """The attributes of every character of ``texts`` (none empty; ``tokens`` one entry per text, or
        ``None``) as two arrays: ``ids[k]`` (``-1``: unknown to the CRF) belongs to the character at
        ``where[k]`` (the characters of all texts numbered one after another). Per character its ids come
        in the order of ``char_features(text, table, tokens)``, what crfsuite sums; the characters
        interleave (a family, a word list, a shape at a time).

        The texts are read as one string, each between the n-grams' pads (two ``\\x02``, two ``\\x03``:
        in no term and no shape, so no match crosses from one text to the next): one lexicon scan and one
        search per shape for the whole batch, the rest numpy."""
        lows = [lowered(text) for text in texts]
        lengths = np.fromiter(map(len, lows), dtype=np.intp, count=len(lows))
        total = int(lengths.sum())
        starts = np.cumsum(lengths) - lengths
        text_of = np.repeat(np.arange(len(lows)), lengths)
        joined = "".join(["\x02\x02" + low + "\x03\x03" for low in lows])
        at = np.arange(total) + 2 + 4 * text_of  # each character's place in joined
        char_at = np.full(len(joined), -1, dtype=np.intp)  # the character at each place of joined
        char_at[at] = np.arange(total)
        everyone = np.arange(total)
        # each distinct character of joined is looked up once: its n-gram id (chars) and its k= attribute
        code = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        distinct, which = np.unique(code, return_inverse=True)
        distinct = list(map(chr, distinct.tolist()))
        chars = np.fromiter(map(self.chars.get, distinct, repeat(0)), dtype=np.int64, count=len(distinct))[which]
        kinds = np.fromiter(map(self.kind_of.__getitem__, distinct), dtype=np.intp, count=len(distinct))
        ids = [np.full(total, self.bias, dtype=np.intp), self._grams(chars, at), kinds[which[at]]]
        where = [everyone, np.tile(everyone, len(GRAM_FEATURES)), everyone]
        clause, clause_start, in_text = self._clauses(joined, char_at, text_of, starts, total)
        ids.append(self.clause[np.minimum(in_text, 3)])
        where.append(everyone)
        if any(tok is not None for tok in tokens):
            self._tokens(lows, tokens, starts, ids, where)
        # each character's marks, its clause-structure marks, the marks of the character before it ("-1") and
        # after it ("+1"): clause-structure marks are never copied to the neighbours (``_LOCAL``)
        codes, owner, look_at, look_key = self._marks(joined, char_at)
        ids.append(self.own[codes])
        where.append(owner)
        if len(look_at):
            self._looks(look_at, look_key, clause, clause_start, text_of, ids, where)
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

    def _grams(self, chars: np.ndarray, at: np.ndarray) -> np.ndarray:
        """The attribute ids of the character n-grams around the characters at places ``at`` of ``joined``
        (``chars``: the id of each of its characters), a family (``GRAM_FEATURES``) after the other. Every pair of neighbours in ``joined`` is looked up
        once for its four families (lc and cr of a character are the pairs before and at it, ll and rr the
        pairs two before and one after)."""
        pairs = chars[:-1] * self.base + chars[1:]  # pairs[k]: joined[k:k + 2]
        row = self.pair_keys.searchsorted(pairs)
        row = np.where(self.pair_keys[row] == pairs, row, len(self.pair_keys) - 1)
        lc, cr, ll, rr = (self.pair_ids[row[at + shift], k] for k, shift in enumerate((-1, 0, -2, 1)))
        triples = pairs[at - 1] * self.base + chars[at + 1]
        found = self.triple_keys.searchsorted(triples)
        lcr = np.where(self.triple_keys[found] == triples, self.triple_ids[found], -1)
        c, l, r = self.unigram
        return np.concatenate([c[chars[at]], l[chars[at - 1]], r[chars[at + 1]], lc, cr, lcr, ll, rr])

    @staticmethod
    def _clauses(joined: str, char_at, text_of, starts, total: int):
        """Every character's clause numbered over all texts, where each clause's clause-structure ranges start
        (after the end mark that opens it; one entry past the last clause, ``total``: a clause's ranges end
        where the next one's start), and every character's clause in its text (``_char_layout``'s)."""
        end_marks = char_at[[m.start() for m in _CLAUSE_BREAK.finditer(joined)]]  # each opens the next clause
        opened = np.zeros(total, dtype=np.intp)
        opened[end_marks] = 1
        clause = np.cumsum(opened) + text_of  # a text opens a clause too
        clause_start = np.empty(int(clause[-1]) + 2, dtype=np.intp)
        clause_start[clause[starts] - opened[starts]] = starts
        clause_start[clause[end_marks]] = end_marks + 1
        clause_start[-1] = total
        return clause, clause_start, clause - (clause[starts] - opened[starts])[text_of]

    def _marks(self, joined: str, char_at):
        """The lexicon and shape marks of every character as ``codes`` of characters ``owner``, each
        character's in the order ``_char_layout`` gives them (by word list, then by shape; a term's ``B:``
        before its ``w:``, a duration's ``delay`` after it), and the look points of the word lists (the first
        character of a term with a look key, and that key's number). A mark is given to a run of characters
        (start, size, code); the runs are put in that order, then unrolled."""
        at, end, entry = [], [], []
        for terms, found in zip(self.entry, self.scanner.scan(joined)):
            if found:
                a, b, t = zip(*found)
                at += a
                end += b
                entry += map(terms.__getitem__, t)
        a, b, e = (np.array(x, dtype=np.intp) for x in (at, end, entry))
        rank = self.entry_list[e] * 3
        runs = [(a, np.ones_like(a), self.entry_first[e], rank),
                (a, self.entry_has_word[e], self.entry_word[e], rank + 1),
                (a + 1, b - a - 1, self.entry_inner[e], rank + 2)]
        if _NUMERAL.search(joined) is not None:
            after = 3 * len(self.entry)  # the shapes come after every word list
            for k, (pattern, begin, inside, is_duration) in enumerate(self.shape):
                spans = [m.span() for m in pattern.finditer(joined)]
                if not spans:
                    continue
                sa, sb = np.array(spans, dtype=np.intp).T
                ones = np.ones_like(sa)
                rank = ones * (after + 3 * k)
                runs += [(sa, ones, ones * begin, rank), (sa + 1, sb - sa - 1, ones * inside, rank + 1)]
                if is_duration:
                    delayed = [joined.startswith(("后", "以后", "之后"), stop) for stop in sb.tolist()]
                    runs.append((sa, (sb - sa) * np.array(delayed), ones * self.delay, rank + 2))
        starts, sizes, codes, ranks = (np.concatenate(column) for column in zip(*runs))
        order = np.argsort(ranks, kind="stable")
        sizes = sizes[order]
        owner = char_at[_ranges(starts[order], sizes)]
        looked = self.entry_look[e] >= 0
        return np.repeat(codes[order], sizes), owner, char_at[a[looked]], self.entry_look[e][looked]

    def _looks(self, look_at, look_key, clause, clause_start, text_of, ids: list, where: list):
        """The clause-structure marks (``_char_layout``'s ``looks``): per look key and clause holding its
        points, ``ahead`` from the clause's start to its last point there, ``behind`` from after its first
        point there to the clause's end. A character gets them by word list, a list's keys by where each is
        first seen in the text, ``ahead`` before ``behind``: the order of ``_char_layout``'s ranges."""
        groups = look_key * len(clause_start) + clause[look_at]  # (key, clause)
        order = np.lexsort((look_at, groups))
        groups, points, keys = groups[order], look_at[order], look_key[order]
        opens = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
        lowest, highest = points[opens], points[np.r_[opens[1:], len(points)] - 1]
        key, cl = keys[opens], clause[lowest]
        in_text = np.unique(text_of[look_at] * len(self.ahead) + look_key, return_inverse=True)[1]
        seen = np.full(in_text.max() + 1, len(clause), dtype=np.intp)
        np.minimum.at(seen, in_text, look_at)  # where each key is first seen in its text
        seen = seen[in_text[order][opens]]
        begin = np.concatenate([clause_start[cl], lowest + 1])
        size = np.concatenate([highest, clause_start[cl + 1]]) - begin
        rank = np.lexsort((np.repeat([0, 1], len(key)), np.tile(seen, 2), np.tile(self.look_list[key], 2)))
        size = size[rank]
        ids.append(np.repeat(np.concatenate([self.ahead[key], self.behind[key]])[rank], size))
        where.append(_ranges(begin[rank], size))

    def _tokens(self, lows, tokens, starts, ids: list, where: list):
        """The jieba token features (``tp=``, ``t=``) of the texts that have tokens."""
        token_at, token_ids, named_at, named_ids = [], [], [], []
        for low, tok, offset in zip(lows, tokens, starts.tolist()):
            if tok is None:
                continue
            for i, (tp, word) in enumerate(zip(*_token_layout(low, tok))):
                if tp:
                    token_at.append(offset + i)
                    token_ids.append(self.token_pos[tp])
                    if word:
                        named_at.append(offset + i)
                        named_ids.append(self.token.get(word, -1))
        ids += [np.array(token_ids, dtype=np.intp), np.array(named_ids, dtype=np.intp)]
        where += [np.array(token_at, dtype=np.intp), np.array(named_at, dtype=np.intp)]


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The numbers of the ranges ``starts[k]:starts[k] + sizes[k]`` (sizes >= 0), one range after the other."""
    return np.arange(int(sizes.sum())) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)


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
        """``features`` without the attributes the trained CRF has no weight for, as crfsuite's UTF-8 bytes
        (``tagging_features``): the same tags and marginals, for less work here and in crfsuite."""
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
            crf = self.__dict__["_crf_arrays"] = (model, AttributeIndex(model.attributes, self.table_))
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
        local = self.__dict__.get("_local")
        if local is None:  # once per process (a threading.local per call would cost a microsecond or two)
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
        if len(X) == 0:  # nothing signalled (most single queries): nothing to lay out
            return [], []
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
        ids, where = index.ids(texts, tokens)
        lengths = [len(text) for text in texts]
        scores = model.state_scores(ids, where, sum(lengths))
        label_ids, probs = model.decode(scores, lengths, marginals)
        label = model.labels.__getitem__
        return [list(map(label, path)) for path in label_ids], probs

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
    """The text the parser reads: ``automation_text`` of a raw query, without what is said around the request
    (the spoken layer's ``strip_disfluencies``: a leading wake word or hesitation, a polite tail), so that 小爱同学
    or 谢谢 never ends up in a condition or a subquery. With the parser's lexicons ``lex``, also without
    a leading hesitation the spoken layer keeps for the router (额, 诶: ``leading_hesitation``), and what
    the spoken layer strips after it (额你好小鹏…)."""
    text = automation_text(query)
    if not text:
        return text
    text = strip_disfluencies(text)
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
        require_fitted(self, "tagger_")
        lex = self.lexicons_
        texts = [surface_of(q, lex) for q in queries]
        memo = [memo_edit_group(t, lex) if t else None for t in texts]  # a rule, not the tagger's call
        signal = [bool(t) and m is None and has_condition_signal(t, lex) for t, m in zip(texts, memo)]
        signalled = [t for t, s in zip(texts, signal) if s]
        if not signalled:  # most single queries: no tagger call at all
            tag_lists, marginal_lists = [], []
        elif with_confidence:
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
