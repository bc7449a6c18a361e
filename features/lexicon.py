"""Lexicon files: load them and match them against a segmented utterance.

A lexicon is a text file of ``term`` or ``term<TAB>category`` lines (see lexicons/README.md).
Matching is built for speed on short queries: multi-character terms are looked up among the jieba
tokens (every such term is in the segmenter's user dictionary, so it comes out as one token),
single characters against the query's character set, and only the few gap patterns (当…时) run a
regular expression.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

LEXICON_DIR = Path(str(files("fastslow.features"))) / "lexicons"  # package data (importlib.resources)
GAP = "…"
MAX_GAP_CHARS = 20


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

    def match(self, tokens, charset, text) -> dict[int, int]:
        """Count hits per category column for one utterance."""
        hits: dict[int, int] = {}
        words = self.words
        for token in tokens:
            cols = words.get(token)
            if cols:
                for col in cols:
                    hits[col] = hits.get(col, 0) + 1
        if self.chars:
            for ch in charset & self.char_set:
                for col in self.chars[ch]:
                    hits[col] = hits.get(col, 0) + 1
        for pattern, col in self.gaps:
            if pattern.search(text):
                hits[col] = hits.get(col, 0) + 1
        return hits

    def hits(self, u) -> dict[int, int]:
        """This lexicon's hits in utterance ``u``: precomputed by the segmenter's ``LexiconBank``
        when it holds this very lexicon, else matched now."""
        found = u.hits.get(self.digest)
        return found if found is not None else self.match(u.tokens, u.charset, u.text)

    def terms(self) -> list[str]:
        """Every plain (non-gap) term, multi-character ones first."""
        return sorted(self.words) + sorted(self.chars)


def resolve_lexicon(lexicon: str | Path) -> Path:
    """A bare name such as ``"triggers"`` means the bundled ``lexicons/triggers.txt``."""
    path = Path(lexicon)
    if path.suffix == "" and not path.exists():
        path = LEXICON_DIR / f"{lexicon}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"lexicon file not found: {path}")
    return path


def read_entries(path: Path) -> list[tuple[str, str]]:
    """(term, category) pairs of a lexicon file, in file order, comments and blanks dropped."""
    from fastslow.features.text import normalise

    entries = []
    for line_no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        term, _, category = line.partition("\t")
        term = normalise(term.strip()) if GAP not in term else term.strip().lower()
        if not term:
            raise ValueError(f"{path}:{line_no}: empty term")
        entries.append((term, category.strip() or path.stem))
    return entries


def load_lexicon(lexicon: str | Path) -> Lexicon:
    path = resolve_lexicon(lexicon)
    entries = read_entries(path)
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
        name=path.stem,
        categories=categories,
        words={t: tuple(c) for t, c in words.items()},
        chars={t: tuple(c) for t, c in chars.items()},
        gaps=tuple(gaps),
        char_set=frozenset(chars),
        digest=digest,
    )


_ESCAPED = re.compile(r"\\(.)")


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


def all_lexicon_files(lexicon_dir: Path = LEXICON_DIR) -> list[Path]:
    return sorted(p for p in lexicon_dir.glob("*.txt") if p.name != "user_dict.txt")


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
    gap_chars: tuple[frozenset, ...] = field(default=(), repr=False)  # characters each gap needs (banks pickled before: ())

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

    def match(self, tokens, charset, text) -> dict[str, dict[int, int]]:
        """Hits per lexicon (keyed by digest), each as in ``Lexicon.match``."""
        hits: list[dict[int, int]] = [{} for _ in self.digests]
        words = self.words
        for token in tokens:
            pairs = words.get(token)
            if pairs:
                for index, col in pairs:
                    found = hits[index]
                    found[col] = found.get(col, 0) + 1
        for ch in charset & self.char_set:
            for index, col in self.chars[ch]:
                found = hits[index]
                found[col] = found.get(col, 0) + 1
        for (pattern, index, col), needed in zip(self.gaps, self.gap_chars or [frozenset()] * len(self.gaps)):
            if needed <= charset and pattern.search(text):  # a set test first: most queries miss most gaps
                found = hits[index]
                found[col] = found.get(col, 0) + 1
        return dict(zip(self.digests, hits))
