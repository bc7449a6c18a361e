"""Lexicon terms heard by sound: what ASR writes for a device or a function with characters of the same or a
near sound (恐调 for 空调, 到航 for 导航, 氛围等 for 氛围灯) is put back before segmentation.

A ``SoundMatcher`` is built once per lexicon (``SpokenLexicon.load``) and frozen with it, so it pickles with a
model: a table of each character's syllable and the terms' sounds as strings of syllables. A character is heard
as pypinyin's most common reading of it, without tone, with the near sounds of
``lexicons/spoken/near_sounds.txt`` folded into one: zh/z, ch/c, sh/s, n/l, in/ing, en/eng and an/ang, the ones
southern-accented Mandarin (and ASR engines trained on it) does not keep apart; a term's own character also
stands for itself (调 of 空调 is most often diao). A text costs one ``str.translate`` and one Aho-Corasick pass;
only a text where a window sounds like a term and is not that term is looked at further.

A window of the text that sounds like a term is put back unless it reads as real words (``SoundMatcher.fits``):
it is a common word of jieba's dictionary or a term of any lexicon (车床, 分量), a word of the text reaches into
it (做一个, 取暖器, 最高的), or it changes a grammatical character without keeping a rare one of the term (高的 is
no 高德). The dictionary is jieba's, read at run time as the segmenter reads it, and only for a text with a
window that sounds like a term and is not it.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

import ahocorasick
from pypinyin import Style, lazy_pinyin
from pypinyin.pinyin_dict import pinyin_dict
from pypinyin.style import convert
from pypinyin.style._constants import _INITIALS

#: a dictionary word at least this frequent (jieba's dict.txt counts) is a common word: a window that is one
#: stays (车床 58), and so does one that a common word reaches into (高的 of 最高的); 稳度 (3) and 调开 (3) are not
WORD_FREQUENCY = 50
#: a single character at least this frequent is a grammatical word (的, 了, 是, 上, 时, 个, 到, 等: about 50)
GRAMMAR_FREQUENCY = 100_000
#: ... and one at least this frequent a common one (高, 电, 量, 声: about 360); the others are rare (航, 椅, 氛)
COMMON_FREQUENCY = 10_000
#: the longest dictionary word, and lexicon term, looked for around a window
MAX_WORD = 3
MAX_TERM = 6
#: the characters ``confusions`` swaps in and out: GB2312's first level (its 3,755 常用字) that are single-character
#: words of jieba's dictionary at least this frequent, so that an ASR-like variant reads like what an engine writes
ASR_CHAR_FREQUENCY = 1_000
_HAN = (0x4E00, 0x9FFF)  # the characters ASR writes: CJK Unified Ideographs


@lru_cache(maxsize=1)
def dictionary() -> dict[str, int]:
    """The words of jieba's bundled dictionary of two to ``MAX_WORD`` characters → their frequency, read once
    per process and only when a text has a window that sounds like a term and is not it (one in twenty; the
    segmenter reads the same dictionary at run time). ~25 MiB: the price of knowing 取暖器 (5) and 洗车 (3) as words."""
    out = {}
    with (Path(str(files("jieba"))) / "dict.txt").open(encoding="utf-8") as lines:
        for line in lines:
            word, freq, _ = line.split(" ", 2)
            if 2 <= len(word) <= MAX_WORD:
                out[word] = int(freq)
    return out


@lru_cache(maxsize=1)
def _single_chars() -> dict[str, int]:
    """The single characters of jieba's bundled dictionary → their frequency, read once per process (a matcher
    asks for its common and its grammatical characters, the asr variant for its common ones)."""
    out = {}
    with (Path(str(files("jieba"))) / "dict.txt").open(encoding="utf-8") as lines:
        for line in lines:
            word, freq, _ = line.split(" ", 2)
            if len(word) == 1:
                out[word] = int(freq)
    return out


def frequent_chars(min_frequency: int) -> frozenset:
    """The single characters of jieba's dictionary at least ``min_frequency`` frequent."""
    return frozenset(c for c, freq in _single_chars().items() if freq >= min_frequency)


@dataclass(frozen=True)
class NearSounds:
    """The folds of near sounds: an initial heard as another (zh → z), a final as another (ing → in)."""

    initials: tuple[tuple[str, str], ...]  # longest first: zh before z
    finals: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, pairs) -> "NearSounds":
        initials = [(a, b) for a, b in pairs if a in _INITIALS]
        finals = [(a, b) for a, b in pairs if a not in _INITIALS]
        order = lambda p: (-len(p[0]), p[0])  # noqa: E731
        return cls(tuple(sorted(initials, key=order)), tuple(sorted(finals, key=order)))

    def fold(self, syllable: str) -> str:
        """``syllable`` (toneless pinyin) as a southern ear hears it: zhuang → zuan, ling → nin."""
        for sound, heard in self.initials:
            if syllable.startswith(sound):
                syllable = heard + syllable[len(sound):]
                break
        for sound, heard in self.finals:
            if syllable.endswith(sound):
                return syllable[: -len(sound)] + heard
        return syllable


@lru_cache(maxsize=4)
def confusions(near: NearSounds) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each toneless syllable → the common characters (``ASR_CHAR_FREQUENCY``) most often read so, in any tone
    (tiao → 条, 挑, 跳), and those of a near sound only (folded alike, ``NearSounds``: shi → 四, 死), for
    ``spoken.asr``."""
    common = sorted(c for c in frequent_chars(ASR_CHAR_FREQUENCY) if _first_level(c))
    plain = {c: convert(pinyin_dict[ord(c)].split(",")[0], Style.NORMAL, True) for c in common if ord(c) in pinyin_dict}
    same: dict[str, list[str]] = {}
    folded: dict[str, list[str]] = {}
    for c, syllable in plain.items():
        same.setdefault(syllable, []).append(c)
        folded.setdefault(near.fold(syllable), []).append(c)
    return {s: (tuple(chars), tuple(o for o in folded[near.fold(s)] if plain[o] != s)) for s, chars in same.items()}


def _first_level(char: str) -> bool:
    """Is ``char`` one of GB2312's first-level characters (its lead byte 0xB0-0xD7)?"""
    try:
        return 0xB0 <= char.encode("gb2312")[0] <= 0xD7
    except UnicodeEncodeError:
        return False


def char_sounds(near: NearSounds) -> dict[str, str]:
    """Every Han character pypinyin knows → its most common reading without tone, folded (调 → diao, 重 → zong)."""
    return {chr(code): near.fold(convert(readings.split(",")[0], Style.NORMAL, True))
            for code, readings in pinyin_dict.items() if _HAN[0] <= code <= _HAN[1]}


def term_sound(term: str, near: NearSounds) -> tuple[str, ...]:
    """The sound of a term as it is said (pypinyin reads phrases: 空调 kong tiao, 调高 diao gao), folded."""
    return tuple(near.fold(s) for s in lazy_pinyin(term, style=Style.NORMAL))


def is_han(text: str) -> bool:
    return all(_HAN[0] <= ord(c) <= _HAN[1] for c in text)


@dataclass(frozen=True)
class SoundMatcher:
    """Terms put back where the text says them with other characters (``put_back``); see the module.

    Each syllable a term has is one private-use character, and ``codes`` maps every character whose most common
    reading is one of them to it (``str.translate``): a text's sound is then a string, in which one Aho-Corasick
    pass finds every term's sound. A term's character whose most common reading is not the one it has in the term
    (调 of 空调 is most often diao, 乐 of 音乐 le) gets a code of its own, accepted where it stands in the term and
    wherever its common reading is heard: 空调 is found in 空调 and 空挑, 音乐 not in 硬了. ASR writes such a character
    by its common reading too (空掉 for 空调: every writer of the dev sets who slips on 空调 writes it so), so a
    character of that reading is accepted in its place as well."""

    digest: str  # of what the matcher is built of: its identity
    terms: tuple[str, ...] = field(repr=False)
    codes: dict[int, str] = field(repr=False)  # ord(character) → its code
    spellings: dict[str, str | None] = field(repr=False)  # a term's sound in codes → the term (None: two terms)
    plain: dict[str, tuple[str, ...]] = field(repr=False)  # a term → its toneless pinyin, unfolded
    lexicon_terms: frozenset = field(repr=False)  # every lexicon's terms of two to ``MAX_TERM`` Han characters
    near: NearSounds = field(repr=False)
    grammar: frozenset = field(repr=False)  # characters at least ``GRAMMAR_FREQUENCY`` frequent
    common: frozenset = field(repr=False)  # characters at least ``COMMON_FREQUENCY`` frequent
    #: (opening, closing) of the triggers said around their condition (当…时): an opening the text closes stays
    opened_triggers: tuple = field(default=(), repr=False)
    automaton: ahocorasick.Automaton = field(init=False, repr=False, compare=False)  # of ``spellings``

    def __post_init__(self):
        automaton = ahocorasick.Automaton()
        for spelling, term in self.spellings.items():
            if term is not None:
                automaton.add_word(spelling, (len(spelling), term))
        if len(automaton):
            automaton.make_automaton()
        object.__setattr__(self, "automaton", automaton)

    @classmethod
    def build(cls, terms, lexicon_terms, near: NearSounds, opened_triggers=()) -> "SoundMatcher":
        """The matcher of ``terms`` (the devices and functions to put back), guarded by ``lexicon_terms``
        (every lexicon's), jieba's dictionary and ``opened_triggers`` (当…时: 播放歌当找到…时 keeps its 当)."""
        terms = tuple(sorted({t for t in terms if len(t) >= 2 and is_han(t)}))
        lexicon_terms = frozenset(t for t in lexicon_terms if 2 <= len(t) <= MAX_TERM and is_han(t)) | frozenset(terms)
        reading = char_sounds(near)
        sounds = {term: term_sound(term, near) for term in terms}
        own = sorted({c for term, sound in sounds.items() for s, c in zip(sound, term) if reading.get(c) != s})
        syllables = sorted({s for sound in sounds.values() for s in sound})
        code = {s: chr(0xE000 + k) for k, s in enumerate(syllables)}  # the Private Use Area: no text's character
        codes = {ord(c): code[r] for c, r in reading.items() if r in code}
        codes.update({ord(c): chr(0xE000 + len(code) + k) for k, c in enumerate(own)})
        heard_as = {s: {code[s]} | {codes[ord(c)] for c in own if reading.get(c) == s} for s in syllables}
        spellings: dict[str, str | None] = {}
        for term, sound in sounds.items():
            accepted = [heard_as[s] | {codes[ord(c)]} | heard_as.get(reading[c], set()) if c in own else heard_as[s]
                        for s, c in zip(sound, term)]
            for spelling in map("".join, itertools.product(*accepted)):
                spellings[spelling] = term if spellings.get(spelling, term) == term else None
        plain = {term: tuple(lazy_pinyin(term, style=Style.NORMAL)) for term in terms}
        common = frequent_chars(COMMON_FREQUENCY)
        grammar = frequent_chars(GRAMMAR_FREQUENCY)
        opened = tuple(sorted(opened_triggers))
        digest = hashlib.sha256(repr((terms, sorted(lexicon_terms), near, sorted(common), sorted(grammar),
                                      WORD_FREQUENCY, MAX_WORD, MAX_TERM) + ((opened,) if opened else ())
                                     ).encode()).hexdigest()
        return cls(digest, terms, codes, spellings, plain, lexicon_terms, near, grammar, common, opened)

    def candidates(self, text: str) -> dict[int, list[tuple[int, str]]]:
        """Start → (end, term) of every window of ``text`` that sounds like a term, longest first; {} when
        each is the term itself."""
        found: dict[int, list[tuple[int, str]]] = {}
        slip = False
        for last, (size, term) in self.automaton.iter(text.translate(self.codes)):
            start = last + 1 - size
            found.setdefault(start, []).append((last + 1, term))
            slip = slip or text[start:last + 1] != term
        if not slip:
            return {}
        for hits in found.values():
            hits.sort(key=lambda hit: -hit[0])
        return found

    def put_back(self, text: str) -> str:
        """``text`` with every window that sounds like a term and is no real word replaced by the term, left to
        right, the longest term at each place first (恐调开到二十度 → 空调开到二十度; 车床 stays)."""
        found = self.candidates(text) if self.spellings else None
        if not found:
            return text
        out, last = [], 0
        for i in sorted(found):
            if i < last:
                continue
            hit = next(((end, term) for end, term in found[i] if self.fits(text, i, end, term)), None)
            if hit is not None:
                out.append(text[last:i] + hit[1])
                last = hit[0]
        return "".join(out) + text[last:]

    def fits(self, text: str, i: int, end: int, term: str) -> bool:
        """May window text[i:end], which sounds like ``term``, become it? Yes when it is the term already (kept,
        and nothing in it put back). No when

        * the window is a common dictionary word or a lexicon term (车床, 分量);
        * it keeps no character of the term and sounds like it only with a near sound folded (常听 ≠ 餐厅);
        * it changes the opening of a trigger the text closes after it (当 of 当…时);
        * it changes a grammatical character (``grammar``: 的, 到, 等) and keeps no rare character of the term
          (高的 ≠ 高德, 搞得 neither; 到航 → 导航 and 氛围等 → 氛围灯 keep 航 and 氛);
        * a character it changes is part of a lexicon term, or of a dictionary word that reaches beyond the window
          (做一个, 取暖器, 洗车, 午休), or a common word or a lexicon term reaches into it from outside (最高的, 来电时,
          今天穿, 沿途景点). A word inside the window is part of the slip: 后事 of 后事镜, 坐椅 of 坐椅加热.
        """
        window = text[i:end]
        if window == term:
            return True
        words = dictionary()
        if words.get(window, 0) >= WORD_FREQUENCY or window in self.lexicon_terms:
            return False
        changed = [k for k in range(i, end) if text[k] != term[k - i]]
        kept = len(window) - len(changed)
        if kept == 0 and tuple(lazy_pinyin(window, style=Style.NORMAL)) != self.plain[term]:
            return False
        if any(text[k] in self.grammar for k in changed) and all(
                text[k] != term[k - i] or text[k] in self.common for k in range(i, end)):
            return False
        if text[end:end + 1] == "了" and any(self._other_reading(text[k], term, k - i) for k in changed):
            return False
        if any(text[k] == opening and closing in text[end:]
               for k in changed for opening, closing in self.opened_triggers):
            return False  # 歌当找附近的加油站时: the 当 of 当…时, no 歌单
        longest = max(MAX_WORD, MAX_TERM)
        for a in range(max(0, i - longest + 1), end):
            for b in range(max(a + 2, i + 1), min(len(text), a + longest) + 1):
                if (a, b) == (i, end):
                    continue
                part = text[a:b]
                outside = a < i or b > end
                touches = any(a <= k < b for k in changed)
                if part in self.lexicon_terms and (touches or outside):
                    return False
                freq = words.get(part) if outside else None  # a word inside the window is part of the slip (坐椅加热)
                if freq is not None and (touches or freq >= WORD_FREQUENCY):
                    return False
        return True

    def _other_reading(self, char: str, term: str, at: int) -> bool:
        """Is ``char`` heard as the term's character ``term[at]`` only through that character's other reading (掉
        for 调 of 空调: diao, not tiao)? Such a window followed by 了 is a verb (电池空掉了), not the term."""
        return self.near.fold(lazy_pinyin(char, style=Style.NORMAL)[0]) != self.near.fold(self.plain[term][at])
