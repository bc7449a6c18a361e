"""Lexicon files: one file per word class, loaded by name, matched against an utterance.

A lexicon is a text file of ``term`` or ``term<TAB>category`` lines (see lexicons/README.md). A word
class that two components read with different categories (devices: the router's car_device/media/...
and the automation parser's car/shared/home kinds) keeps one file with one column per view, named by a
``#:`` header line; ``load_lexicon(name)`` reads the first column, ``load_lexicon(name, column)``
another, and ``-`` in a cell leaves the term out of that view.

Matching is built for speed on short queries: multi-character terms are looked up among the jieba
tokens (every such term of the router's lexicons is in the segmenter's user dictionary, so it comes
out as one token), single characters against the query's character set, and only the few gap
patterns (当…时) run a regular expression. ``Matcher`` finds terms in running text instead
(leftmost, longest, not overlapping), as the automation parser needs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import NamedTuple

import ahocorasick
from fastslow.features.normalise import normalise

LEXICON_DIR = Path(str(files("fastslow.features"))) / "lexicons"  # package data (importlib.resources)
GAP = "…"
MAX_GAP_CHARS = 20
NO_HITS: dict[int, int] = {}  # the hits of a lexicon that nothing hit, shared by every utterance: never changed


@dataclass(frozen=True)
class Lexicon:
    """A parsed lexicon: categories in a fixed order and the terms that point at them."""

    name: str
    categories: tuple[str, ...]
    words: dict[str, tuple[int, ...]]  # multi-character term -> category columns
    chars: dict[str, tuple[int, ...]]  # single-character term -> category columns
    gaps: tuple[tuple[re.Pattern, int], ...]  # gap pattern -> category column
    char_set: frozenset = frozenset()  # the keys of ``chars``, for a C-level intersection
    digest: str = ""  # fingerprint of the entries: an utterance's precomputed hits are used only if it matches

    def match(self, tokens, text) -> dict[int, int]:
        """Count hits per category column for one utterance: whole-token terms, single-character
        terms outside the tokens that are a longer term of this lexicon (``free_chars``), gaps."""
        hits: dict[int, int] = {}
        words = self.words
        for token in tokens:
            cols = words.get(token)
            if cols:
                for col in cols:
                    hits[col] = hits.get(col, 0) + 1
        if self.chars:
            for ch in sorted(self.counted_chars(tokens) & self.char_set):  # a set's order follows the hash seed
                for col in self.chars[ch]:
                    hits[col] = hits.get(col, 0) + 1
        for pattern, col in self.gaps:
            if pattern.search(text):
                hits[col] = hits.get(col, 0) + 1
        return hits

    def counted_chars(self, tokens) -> frozenset:
        """The characters where a single-character term counts (``free_chars``)."""
        return free_chars(tokens, self.words)

    def hits(self, u) -> dict[int, int]:
        """This lexicon's hits in utterance ``u``: precomputed by the segmenter's ``LexiconBank``
        when it holds this very lexicon, else matched now."""
        found = u.hits.get(self.digest)
        return found if found is not None else self.match(u.tokens, u.text)

    def terms(self) -> list[str]:
        """Every plain (non-gap) term, multi-character ones first."""
        return sorted(self.words) + sorted(self.chars)


def resolve_lexicon(lexicon: str | Path, lexicon_dir: Path | None = None) -> Path:
    """A bare name such as ``"triggers"`` means ``lexicons/triggers.txt`` (bundled, or of ``lexicon_dir``)."""
    path = Path(lexicon)
    if path.suffix == "" and not path.exists():
        path = (lexicon_dir or LEXICON_DIR) / f"{lexicon}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"lexicon file not found: {path}")
    return path


COLUMNS_HEADER = "#:"
ABSENT = "-"


def read_user_dict(path: Path) -> list[tuple[str, int | None]]:
    """(word, frequency or None) of each line of a jieba user dictionary (``user_dict.txt``), normalised as every
    lexicon term is; ``#`` starts a comment."""
    words = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        parts = raw.split("#", 1)[0].split()
        if parts:
            freq = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
            words.append((normalise(parts[0]), freq))
    return words


def read_entries(path: Path, column: str | None = None) -> list[tuple[str, str]]:
    """(term, category) pairs of one column of a lexicon file (default: the first), in file order,
    comments, blanks and ``-`` cells dropped. In the first column an empty cell is the file's name."""
    names: list[str] | None = None
    entries = []
    for line_no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if raw.startswith(COLUMNS_HEADER):
            names = raw[len(COLUMNS_HEADER):].split()
            continue
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        index = 0
        if column is not None:
            if names is None or column not in names:
                raise ValueError(f"{path}: no column {column!r} (a `#:` line names the columns: {names})")
            index = names.index(column)
        term, *cells = line.split("\t")
        cell = cells[index].strip() if index < len(cells) else ""
        if cell == ABSENT or (index and not cell):
            continue
        term = normalise(term.strip()) if GAP not in term else term.strip().lower()
        if not term:
            raise ValueError(f"{path}:{line_no}: empty term")
        entries.append((term, cell or path.stem))
    return entries


def load_lexicon(lexicon: str | Path, column: str | None = None, lexicon_dir: Path | None = None) -> Lexicon:
    """The lexicon of one word class by name (``"devices"``) or path; ``column`` picks a view."""
    path = resolve_lexicon(lexicon, lexicon_dir)
    name = path.stem if column is None else f"{path.stem}:{column}"
    entries = read_entries(path, column)
    categories = tuple(dict.fromkeys(category for _, category in entries))
    column = {category: i for i, category in enumerate(categories)}
    words: dict[str, list[int]] = {}
    chars: dict[str, list[int]] = {}
    gaps = []
    for term, category in entries:
        col = column[category]
        if GAP in term:
            head, tail = term.split(GAP, 1)
            regex = re.escape(head) + f".{{0,{MAX_GAP_CHARS}}}?" + re.escape(tail)
            gaps.append((re.compile(regex), col))
            continue
        table = chars if len(term) == 1 else words
        cols = table.setdefault(term, [])
        if col not in cols:
            cols.append(col)
    digest = hashlib.sha1(repr(entries).encode("utf-8")).hexdigest()
    return Lexicon(
        name=name,
        categories=categories,
        words={t: tuple(c) for t, c in words.items()},
        chars={t: tuple(c) for t, c in chars.items()},
        gaps=tuple(gaps),
        char_set=frozenset(chars),
        digest=digest,
    )


_ESCAPED = re.compile(r"\\(.)")


def free_chars(tokens, words) -> frozenset:
    """Characters of the tokens that are not themselves a multi-character term of ``words``: where a
    single-character term may count. The longer term wins, as in ``Matcher``: 打开 is one action, not
    打开 and 开; 空调 is a device, not a device and the verb 调."""
    return frozenset("".join([t for t in tokens if t not in words]))


def gap_chars(pattern: re.Pattern) -> frozenset:
    """The first and last characters a gap pattern (``head…tail``) needs in the text."""
    head, _, tail = pattern.pattern.partition(f".{{0,{MAX_GAP_CHARS}}}?")
    head, tail = _ESCAPED.sub(r"\1", head), _ESCAPED.sub(r"\1", tail)
    return frozenset(c for c in (head[:1], tail[-1:]) if c)


def lexicons_digest(lexicon_dir: Path = LEXICON_DIR) -> str:
    """SHA-256 of every lexicon file below ``lexicon_dir`` (names and bytes): lexicons are training
    data too, so an edited lexicon makes another model version."""
    digest = hashlib.sha256()
    for path in sorted(lexicon_dir.rglob("*.txt")):
        digest.update(path.relative_to(lexicon_dir).as_posix().encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


#: the router's word classes: their terms are the segmenter's domain dictionary and its lexicon
#: features. A new word class for the router is added here (and as an extractor); the other files of
#: ``lexicons/`` are read by name by the component that needs them.
ROUTER_LEXICONS = ("actions", "builtin_functions", "chains", "connectors", "demonstratives", "device_descriptions",
                   "devices", "generic_targets", "hubs", "questions", "scenes", "selectors", "sensations",
                   "triggers", "units")


@dataclass(frozen=True)
class LexiconBank:
    """Several lexicons matched in one pass over an utterance.

    Eleven extractors read lexicons; matching each separately cost more than segmentation itself.
    The segmenter matches all of them once, and each extractor picks its own hits by digest.
    """

    digests: tuple[str, ...]
    words: dict[str, tuple[tuple[int, int], ...]] = field(repr=False)  # term -> ((lexicon, column), ...)
    chars: dict[str, tuple[tuple[int, int], ...]] = field(repr=False)
    char_set: frozenset = field(repr=False)
    gaps: tuple[tuple[re.Pattern, int, int], ...] = field(repr=False)
    gap_chars: tuple[frozenset, ...] = field(repr=False)  # the characters each gap needs
    index: "_BankIndex" = field(init=False, repr=False, compare=False)  # ``match``'s lookup tables

    def __post_init__(self):
        object.__setattr__(self, "index", _BankIndex.of(self))

    @classmethod
    def of(cls, lexicons: list[Lexicon]) -> "LexiconBank":
        words: dict[str, list] = {}
        chars: dict[str, list] = {}
        gaps = []
        for index, lexicon in enumerate(lexicons):
            for table, source in ((words, lexicon.words), (chars, lexicon.chars)):
                for term, cols in source.items():
                    table.setdefault(term, []).extend((index, col) for col in cols)
            gaps.extend((pattern, index, col) for pattern, col in lexicon.gaps)
        return cls(digests=tuple(lexicon.digest for lexicon in lexicons),
                   words={t: tuple(v) for t, v in words.items()}, chars={t: tuple(v) for t, v in chars.items()},
                   char_set=frozenset(chars), gaps=tuple(gaps), gap_chars=tuple(gap_chars(p) for p, _, _ in gaps))

    def counted_chars(self, tokens) -> frozenset:
        """As ``Lexicon.counted_chars``, with the longer terms of every lexicon of the bank."""
        return free_chars(tokens, self.words)

    def match(self, tokens, text) -> dict[str, dict[int, int]]:
        """Hits per lexicon (keyed by digest), each as in ``Lexicon.match`` except that a
        single-character term counts only outside the tokens that are a longer term of ANY lexicon
        of the bank (``free_chars``): 调 is no second verb in 空调 (a device) nor in 调到. ``text`` is the
        normalised text whose pieces the tokens are (``Segmenter.annotate``).

        The (digest, column) pairs of the tokens, the characters and the gaps are gathered first and
        counted in one loop; a query hits few of the bank's lexicons, and the others share ``NO_HITS``
        (read only). The characters that matter are found by one pattern each (the bank's single
        characters in the free tokens, the gaps' characters in the text), not by a set of every
        character of the text (each a new string object)."""
        index = self.index
        words = index.words
        pairs: list[tuple[str, int]] = []
        free = []  # the tokens that are no multi-character term (``free_chars``)
        for token in tokens:
            found = words.get(token)
            if found is None:
                free.append(token)
            else:
                pairs += found
        if index.char_pattern is not None:
            singles = index.char_pattern.findall("".join(free))
            if singles:
                chars = index.chars
                # sorted: a set's order follows the process's hash seed, and the hits' order is the order their
                # features are added in, so unsorted the same query could score differently in the last bits
                for ch in sorted(set(singles)):
                    pairs += chars[ch]
        gaps = list(index.gaps_always)
        if index.head_pattern is not None:
            heads = index.head_pattern.findall(text)
            for c in set(heads) if len(heads) > 1 else heads:
                for k, other in index.gaps_by_char[c]:
                    if other in text:  # "" when the gap needs no other character
                        gaps.append(k)
        if gaps:
            gaps.sort()  # the bank's order
            pairs += [index.gap_pairs[k][0] for k in gaps if self.gaps[k][0].search(text)]
        out = index.no_hits.copy()
        for digest, col in pairs:
            found = out[digest]
            if not found:  # the shared empty hits (``NO_HITS``, or its copy in a pickled index): never changed
                out[digest] = {col: 1}
            else:
                found[col] = found.get(col, 0) + 1
        return out



def char_class(chars) -> re.Pattern | None:
    """One pattern matching any one of ``chars`` (None without any)."""
    return re.compile("[" + "".join(map(re.escape, sorted(chars))) + "]") if chars else None


class _BankIndex(NamedTuple):
    """What ``LexiconBank.match`` looks up besides the bank's tables: the bank's (lexicon, column) pairs as
    (digest, column), without the pairs of a lexicon whose digest a later one repeats (the same entries, so
    the same hits: ``dict(zip(digests, ...))`` keeps the later one's)."""

    words: dict[str, tuple[tuple[str, int], ...]]  # as ``LexiconBank.words``
    chars: dict[str, tuple[tuple[str, int], ...]]  # as ``LexiconBank.chars``
    char_pattern: re.Pattern | None  # any one of the keys of ``chars``
    gap_pairs: tuple[tuple[tuple[str, int], ...], ...]  # per gap, as ``LexiconBank.gaps`` (the gaps of such a lexicon: ())
    #: the numbers of the gaps that count, each with the other character it needs ("" for none) by the first one
    #: it needs (its smallest; a gap needs at most two, ``gap_chars``): a gap is tried only when both are in the text
    gaps_by_char: dict[str, tuple[tuple[int, str], ...]]
    head_pattern: re.Pattern | None  # any one of the keys of ``gaps_by_char``
    gaps_always: tuple[int, ...]  # gaps that need no character
    no_hits: dict[str, dict]  # ``dict.fromkeys(digests, NO_HITS)``, which ``match`` copies (a copy is cheaper)

    @classmethod
    def of(cls, bank: LexiconBank) -> "_BankIndex":
        last = {digest: i for i, digest in enumerate(bank.digests)}

        def counted(pairs):
            return tuple((bank.digests[i], col) for i, col in pairs if last[bank.digests[i]] == i)

        gap_pairs = tuple(counted([(i, col)]) for _, i, col in bank.gaps)  # () for a gap that never counts
        grouped: dict[str, list[tuple[int, str]]] = {}
        for k, needed in enumerate(bank.gap_chars):
            if gap_pairs[k]:
                first, *other = sorted(needed) or [""]  # at most two: a head's first, a tail's last (``gap_chars``)
                grouped.setdefault(first, []).append((k, "".join(other)))
        always = tuple(k for k, _ in grouped.pop("", ()))
        return cls(words={t: counted(v) for t, v in bank.words.items()},
                   chars={t: counted(v) for t, v in bank.chars.items()}, char_pattern=char_class(bank.chars),
                   gap_pairs=gap_pairs, gaps_by_char={c: tuple(ks) for c, ks in grouped.items()},
                   head_pattern=char_class(grouped), gaps_always=always, no_hits=dict.fromkeys(bank.digests, NO_HITS))


def term_pattern(terms) -> re.Pattern | None:
    """One regular expression of ``terms`` (non-empty literals) that matches as their alternation longest first
    (``"|".join(sorted(terms, key=lambda t: (-len(t), t)))``) does: at the leftmost place where a term begins, the
    longest term there. Written as a trie, ``打(?:开(?:空调)?|电话)``, it compares a character per level where the
    alternation tries term after term (searches 1.2-2.5x faster on the automation lexicons). None without terms."""
    trie: dict = {}
    for term in terms:
        node = trie
        for ch in term:
            node = node.setdefault(ch, {})
        node[""] = None  # a term ends here
    return re.compile(_trie_regex(trie)) if trie else None


def _trie_regex(node: dict) -> str:
    """The regex of a trie node: its branches, each a character and the regex below it; where a term also ends
    here, the branches are optional (greedy: the longer term is tried first)."""
    branches = [re.escape(ch) + _trie_regex(child) for ch, child in sorted(node.items()) if ch]
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"(?:{body})?" if "" in node else body


@dataclass(frozen=True)
class Matcher:
    """Longest-first, non-overlapping matching of one lexicon in running text (not tokens): one
    regular expression of its terms, longest first (``term_pattern``), on lower-cased text, so ``座椅加热`` wins
    over ``座椅``. ``category`` maps term → category (the first one given)."""

    name: str
    pattern: re.Pattern | None
    category: dict

    @classmethod
    def build(cls, name: str, entries: list[tuple[str, str]]) -> "Matcher":
        category: dict[str, str] = {}
        for term, cat in entries:
            category.setdefault(term, cat)
        if "" in category:  # it would match between any two characters (``read_entries`` refuses it too)
            raise ValueError(f"{name}: empty term")
        return cls(name, term_pattern(category), category)

    def __setstate__(self, state):  # a matcher pickled with the plain alternation gets the trie (the same matches)
        self.__dict__.update(state, pattern=term_pattern(state["category"]))

    @classmethod
    def load(cls, lexicon: str, column: str | None = None, lexicon_dir: Path | None = None) -> "Matcher":
        """The matcher of a lexicon file by name, as ``load_lexicon``."""
        return cls.build(lexicon, read_entries(resolve_lexicon(lexicon, lexicon_dir), column))

    def find(self, lowered: str) -> list[tuple[int, int, str, str]]:
        """(start, end, term, category) of every match in ``lowered`` (already lower-cased), as
        ``pattern.finditer`` gives them; a new list each time (a caller may change it).

        The terms come from one ``findall`` (two of three texts the automation rules ask about hold
        none), and each match starts where its term first occurs after the previous match: an earlier
        occurrence would have been the leftmost match (terms are non-empty literals)."""
        terms = self.pattern.findall(lowered) if self.pattern is not None else None
        if not terms:
            return []
        category, at, found = self.category, lowered.find, []
        end = 0
        for term in terms:
            start = at(term, end)
            end = start + len(term)
            found.append((start, end, term, category[term]))
        return found

    def categories(self, lowered: str) -> set:
        """The categories of ``find``'s matches, without their places (its ``findall`` alone)."""
        terms = self.pattern.findall(lowered) if self.pattern is not None else None
        return set(map(self.category.__getitem__, terms)) if terms else set()

    def search(self, lowered: str):
        return self.pattern.search(lowered) if self.pattern is not None else None

    def prefix(self, lowered: str) -> str | None:
        """The longest term that ``lowered`` starts with, or None."""
        if self.pattern is None:
            return None
        m = self.pattern.match(lowered)
        return m.group() if m else None

    def terms(self, *categories: str) -> frozenset:
        return self._terms_by.get(categories) or self._terms_by.setdefault(
            categories, frozenset(t for t, c in self.category.items() if not categories or c in categories))

    @cached_property
    def _terms_by(self) -> dict:
        return {}

    @cached_property
    def max_len(self) -> int:
        return max((len(t) for t in self.category), default=0)


class Scanner:
    """Several matchers in one Aho-Corasick pass (pyahocorasick): ``scan(text)`` gives, per matcher,
    exactly what its ``find`` gives (leftmost, longest, not overlapping), from one walk of the text."""

    def __init__(self, matchers: list[Matcher]):
        self.names = tuple(m.name for m in matchers)
        members: dict[str, list[int]] = {}
        for index, matcher in enumerate(matchers):
            for term in matcher.category:
                members.setdefault(term, []).append(index)
        self.automaton = ahocorasick.Automaton()
        for term, indices in members.items():
            self.automaton.add_word(term, (len(term), term, tuple(indices)))
        if members:
            self.automaton.make_automaton()
        self.empty = not members

    def scan(self, lowered: str) -> list[list[tuple[int, int, str]]]:
        """Per matcher (in order), its (start, end, term) matches in ``lowered``: the longest term at
        each start, then the starts left to right that the previous match does not cover. Only the
        matchers with a term in the text are sorted out."""
        out: list[list[tuple[int, int, str]]] = [[] for _ in self.names]
        if self.empty:
            return out
        longest: dict[int, dict[int, tuple[int, str]]] = {}  # matcher -> start -> (size, term)
        for end, (size, term, indices) in self.automaton.iter(lowered):
            start = end - size + 1
            for index in indices:
                by_start = longest.get(index)
                if by_start is None:
                    longest[index] = {start: (size, term)}
                else:
                    best = by_start.get(start)
                    if best is None or best[0] < size:
                        by_start[start] = (size, term)
        for index, by_start in longest.items():
            found, pos = out[index], 0
            for start in sorted(by_start):
                if start >= pos:
                    size, term = by_start[start]
                    pos = start + size
                    found.append((start, pos, term))
        return out
