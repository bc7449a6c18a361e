"""Lexicon files: load them and match them against a segmented utterance.

A lexicon is a text file of ``term`` or ``term<TAB>category`` lines (see lexicons/README.md).
Matching is built for speed on short queries: multi-character terms are looked up among the jieba
tokens (every such term is in the segmenter's user dictionary, so it comes out as one token),
single characters against the query's character set, and only the few gap patterns (当…时) run a
regular expression.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

LEXICON_DIR = Path(__file__).resolve().parent / "lexicons"
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
    from features.text import normalise

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
    return Lexicon(
        name=path.stem,
        categories=categories,
        words={t: tuple(c) for t, c in words.items()},
        chars={t: tuple(c) for t, c in chars.items()},
        gaps=tuple(gaps),
        char_set=frozenset(chars),
    )


def all_lexicon_files(lexicon_dir: Path = LEXICON_DIR) -> list[Path]:
    return sorted(p for p in lexicon_dir.glob("*.txt") if p.name != "user_dict.txt")
