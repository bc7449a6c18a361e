"""Spoken style: how a query sounds when people say it to a car or a speaker, and what ASR makes of it.

One place for two jobs:

* **Variation** (training augmentation and ``fastslow robustness``): each kind of spoken variation is
  a named, seeded, pure function ``kind(text, seed, lexicon=None) -> str``; the same text and seed
  always give the same variant, and a kind that does not apply returns the text unchanged.
  ``VARIANTS`` maps the names to the functions; ``spoken_variants`` applies them all.
* **Stripping** (the text layer, before segmentation): ``strip_disfluencies`` removes what never changes
  the answer (a leading wake word, hesitations, a stutter, a polite tail) and knows 那个/这个 as a
  hesitation (那个，打开空调; 那个打开空调) from 那个 as a determiner (那个灯打开; 把那个关了).

The word lists are files in ``lexicons/spoken/`` (see its README), read once per process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from pypinyin import Style, lazy_pinyin

from fastslow.features.lexicon import GAP, LEXICON_DIR, read_entries, read_user_dict
from fastslow.features.memo import TextMemo
from fastslow.features.normalise import normalise
from fastslow.features.sound import WORD_FREQUENCY, NearSounds, SoundMatcher, confusions, dictionary

SPOKEN_DIR = LEXICON_DIR / "spoken"

#: pauses ASR may or may not write; stripped at the edges, kept inside (the splitter reads ，)
_PAUSE = "，,、。.！!？?；;：: "
_PUNCT = re.compile(r"[，,、。！!？?；;…~～\s]|(?<!\d)[.:：](?!\d)|(?<=\d)[.:：](?!\d)|(?<!\d)[.:：](?=\d)")
_CJK = re.compile(r"[\u3400-\u9fff]")


@dataclass(frozen=True)
class SpokenLexicon:
    """The word lists of ``lexicons/spoken/``, longest terms first where they are matched as prefixes."""

    wake_words: tuple[str, ...]
    hesitations: tuple[str, ...]  # stripped at the start
    augment_fillers: tuple[str, ...]  # put at the start by ``filler`` (hesitations, 那个/这个, 然后)
    demonstrative_fillers: tuple[str, ...]  # 那个/这个: a hesitation only before a command
    stutter_chars: frozenset
    tails: tuple[str, ...]  # stripped at the end
    pause_tails: tuple[str, ...]  # stripped at the end only after a pause (augmentation: every one of these)
    homophones: tuple[tuple[str, str], ...]  # (word, misrecognition)
    command_starts: tuple[str, ...]
    corrections: tuple[tuple[str, str], ...] = ()  # (misrecognition, word) put back before segmentation
    statement_tails: frozenset = frozenset()  # of pause_tails, those stripped after any statement (好吗, 呗)
    greetings: tuple[str, ...] = ()  # said before an assistant's name (你好, 嘿): 你好小途 is a wake word
    tail_words: frozenset = frozenset()  # words a statement tail would cut (限行 of 今天限行吗): no tail there
    sound: SoundMatcher | None = None  # devices and functions put back by sound before segmentation (恐调 → 空调)

    @cached_property
    def identity(self) -> str:
        """A digest of every word list: lexicons with the same lists strip alike (the router's, frozen with a
        model, and the parser's, loaded by this process, share ``strip_disfluencies``' memo)."""
        fields = [getattr(self, f.name) for f in dataclasses.fields(self)]
        return hashlib.sha256(repr([sorted(v) if isinstance(v, frozenset) else v for v in fields]).encode()).hexdigest()

    @cached_property
    def inner_hesitation(self) -> re.Pattern | None:
        """A hesitation said alone between two pauses inside a query (先打开空调然后，呃，再…) with the pause
        before it: ``strip_disfluencies`` drops both, the pause after it stays."""
        terms = sorted(self.hesitations, key=lambda t: (-len(t), t))
        pause = re.escape(_PAUSE)
        return re.compile(f"[{pause}](?:{'|'.join(map(re.escape, terms))})(?=[{pause}])") if terms else None

    @cached_property
    def correction_pattern(self) -> re.Pattern | None:
        wrong = sorted((w for w, _ in self.corrections), key=lambda w: (-len(w), w))
        return re.compile("|".join(map(re.escape, wrong))) if wrong else None

    @cached_property
    def correction_map(self) -> dict[str, str]:
        return dict(self.corrections)

    @cached_property
    def edge_chars(self) -> tuple[frozenset, frozenset]:
        """Characters a strippable start and end begin and finish with: most queries have neither,
        and ``strip_disfluencies`` returns them after two set lookups and one regular expression."""
        starts = self.stripped_wake_words + self.hesitations + self.demonstrative_fillers + self.greetings
        ends = self.tails + self.pause_tails  # a wake word said last: ``strip_disfluencies`` asks endswith
        return (frozenset(t[0] for t in starts) | frozenset(_PAUSE) | frozenset(_ASSISTANT_FIRSTS),
                frozenset(t[-1] for t in ends) | frozenset(_PAUSE))

    @cached_property
    def by_edge(self) -> tuple[dict[str, tuple[str, ...]], ...]:
        """The stripped wake words, hesitations and demonstrative fillers by their first character, the
        tails and pause tails by their last, each in list order: the stripper's loops try only the terms
        that can match where they look, and the first that does is the one the whole list would give
        (a term that does not start with the text's first character cannot be its prefix)."""
        out = []
        for at, terms in ((0, self.stripped_wake_words), (0, self.hesitations), (0, self.demonstrative_fillers),
                          (-1, self.tails), (-1, self.pause_tails)):
            index: dict[str, list[str]] = {}
            for term in terms:
                if term:  # an empty term strips nothing
                    index.setdefault(term[at], []).append(term)
            out.append({c: tuple(ts) for c, ts in index.items()})
        return tuple(out)

    @cached_property
    def command_start_set(self) -> frozenset:
        """``command_starts`` as a set, for a whole piece said before a restart (帮我|打给，呃，打给老周)."""
        return frozenset(self.command_starts)

    @cached_property
    def longer_command_starts(self) -> tuple[str, ...]:
        """The command starts of two characters or more: across a pause a one-character one could end a whole
        command (打开空调，那个，…: 调)."""
        return tuple(t for t in self.command_starts if len(t) > 1)

    @cached_property
    def greeting_firsts(self) -> frozenset:
        """First characters of the greetings and of an assistant name (小): ``_without_assistant_name``
        returns any other text at once."""
        return frozenset(g[0].lower() for g in self.greetings if g) | frozenset(_ASSISTANT_FIRSTS)

    @cached_property
    def stripped_wake_words(self) -> tuple[str, ...]:
        """The wake words the stripper removes: those of the file, and the half of one said twice (小理小理
        is 小理 once its repeat collapses, ``_collapse_repeats``), longest first. Augmentation puts only the
        file's words before a query."""
        halves = [t[: len(t) // 2] for t in self.wake_words if len(t) % 2 == 0 and t[: len(t) // 2] * 2 == t]
        return tuple(sorted(dict.fromkeys([*self.wake_words, *halves]), key=lambda t: (-len(t), t)))

    @cached_property
    def stutter_pattern(self) -> re.Pattern:
        chars = "".join(sorted(self.stutter_chars))
        return re.compile(f"([{re.escape(chars)}])\\1+") if chars else re.compile(r"(?!)")

    @cached_property
    def repeat_pattern(self) -> re.Pattern:
        """A repeat (``_REPEAT``) or a stutter (``stutter_pattern``) anywhere: without one, neither
        substitution of ``_collapse_repeats`` changes the text."""
        chars = "".join(sorted(self.stutter_chars))
        return re.compile(_REPEAT_ONCE + (f"|([{re.escape(chars)}])\\2" if chars else ""))

    @classmethod
    def load(cls, folder: Path = SPOKEN_DIR, lexicon_dir: Path = LEXICON_DIR) -> "SpokenLexicon":
        """The word lists of ``folder``; the sound matcher (when ``folder`` has sound_lexicons.txt and
        near_sounds.txt) of the word classes it names, read from ``lexicon_dir``."""
        folder, lexicon_dir = Path(folder), Path(lexicon_dir)

        def entries(name):
            return read_entries(folder / f"{name}.txt")

        def longest_first(terms):
            return tuple(sorted(dict.fromkeys(terms), key=lambda t: (-len(t), t)))

        fillers = entries("fillers")
        tails = entries("tails")
        return cls(
            wake_words=longest_first(t for t, c in entries("wake_words") if c != "greeting"),
            greetings=longest_first(t for t, c in entries("wake_words") if c == "greeting"),
            hesitations=longest_first(t for t, c in fillers if c in ("fillers", "strip_only")),
            augment_fillers=tuple(dict.fromkeys(t for t, c in fillers if c in ("fillers", "hesitation_demonstrative",
                                                                                 "augment_only"))),
            demonstrative_fillers=longest_first(t for t, c in fillers if c == "hesitation_demonstrative"),
            stutter_chars=frozenset(t for t, c in fillers if c == "stutter"),
            tails=longest_first(t for t, c in tails if c == "tails"),
            pause_tails=longest_first(t for t, c in tails if c in ("after_pause", "after_statement")),
            statement_tails=frozenset(t for t, c in tails if c == "after_statement"),
            tail_words=frozenset(t for t, c in tails if c == "word"),
            homophones=tuple(entries("homophones")),
            command_starts=longest_first(t for t, _ in entries("command_starts")),
            corrections=tuple(entries("asr_corrections")) if (folder / "asr_corrections.txt").is_file() else (),
            sound=sound_matcher(folder, lexicon_dir),
        )


def sound_matcher(folder: Path, lexicon_dir: Path) -> SoundMatcher | None:
    """The ``SoundMatcher`` of the word classes sound_lexicons.txt names (less the categories it leaves out),
    guarded by every term of ``lexicon_dir``'s lexicons and jieba's dictionary; None without those two files."""
    if not ((folder / "sound_lexicons.txt").is_file() and (folder / "near_sounds.txt").is_file()):
        return None
    terms = []
    for name, left_out in read_entries(folder / "sound_lexicons.txt"):
        skip = set(left_out.split(",")) if left_out != "sound_lexicons" else set()
        terms += [t for t, category in read_entries(lexicon_dir / f"{name}.txt") if category not in skip]
    lexicon_terms = {t for path in sorted(lexicon_dir.glob("*.txt")) if path.name != "user_dict.txt"
                     for t, _ in read_entries(path) if GAP not in t}
    user_dict = lexicon_dir / "user_dict.txt"
    if user_dict.is_file():
        lexicon_terms |= {word for word, _ in read_user_dict(user_dict)}
    # a trigger said in two parts around its condition (当…时): its one-character opening and its closing
    triggers = lexicon_dir / "triggers.txt"
    opened = {tuple(t.split(GAP)) for t, _ in read_entries(triggers) if GAP in t and len(t.split(GAP)[0]) == 1} \
        if triggers.is_file() else set()
    return SoundMatcher.build(terms, lexicon_terms, NearSounds.of(read_entries(folder / "near_sounds.txt")),
                              opened_triggers=opened)


@lru_cache(maxsize=4)
def spoken_lexicon(folder: str | None = None) -> SpokenLexicon:
    """The bundled word lists (or those of ``folder``), loaded once per process."""
    return SpokenLexicon.load(Path(folder) if folder else SPOKEN_DIR)


def _rng(kind: str, text: str, seed: int) -> random.Random:
    return random.Random(f"{kind}\x1f{seed}\x1f{text}")  # str seeds are hashed with SHA-512: stable across runs


# ---------------------------------------------------------------------------------------- numerals

_DIGIT_CN = "零一二三四五六七八九"
_CN_DIGIT = {c: i for i, c in enumerate(_DIGIT_CN)} | {"两": 2, "〇": 0}
_CN_UNIT = {"十": 10, "百": 100, "千": 1000}
_CN_NUM = "零〇一二两三四五六七八九十百千"
#: a Chinese numeral becomes digits only before one of these (一下, 一点儿, 一些 stay words)
_UNITS = ("度", "点", "分钟", "分", "小时", "个", "档", "号", "月", "日", "岁", "公里", "米", "级", "倍", "秒",
          "首", "遍", "次", "格", "块", "元", "天", "%")


def int_to_chinese(n: int) -> str:
    """0…9999 in Chinese numerals as said aloud: 24 → 二十四, 10 → 十, 105 → 一百零五."""
    if not 0 <= n <= 9999:
        raise ValueError(f"int_to_chinese: {n} is outside 0…9999")
    if n < 10:
        return _DIGIT_CN[n]
    if n < 20:
        return "十" + (_DIGIT_CN[n - 10] if n > 10 else "")
    out, zero = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        d = n // value % 10
        if d:
            out += ("零" if zero and out else "") + _DIGIT_CN[d] + unit
            zero = False
        elif out:
            zero = True
    return out


def chinese_to_int(text: str) -> int:
    """二十四 → 24, 十五 → 15, 一百零五 → 105, 两 → 2; ``ValueError`` for anything else."""
    if not text or any(c not in _CN_NUM for c in text):
        raise ValueError(f"chinese_to_int: not a Chinese numeral: {text!r}")
    total, digit = 0, None
    for c in text:
        if c in _CN_UNIT:
            total += (1 if digit is None else digit) * _CN_UNIT[c]
            digit = None
        else:
            digit = _CN_DIGIT[c] if digit is None else digit * 10 + _CN_DIGIT[c]  # 二四 is rare; read as digits
    return total + (digit or 0)


_DIGIT = re.compile(r"\d")
_TIME_DIGITS = re.compile(r"(\d{1,2})[:：点](\d{1,2})(?:分)?(?!\d)")
_PERCENT_DIGITS = re.compile(r"(\d{1,3})%")
_INT_DIGITS = re.compile(r"(?<![\d.])(\d{1,4})(?![\d.%:])")
_TIME_CN = re.compile(rf"([{_CN_NUM}]{{1,3}})点([{_CN_NUM}]{{1,3}})(分)?")
_PERCENT_CN = re.compile(rf"百分之([{_CN_NUM}]{{1,3}})")
_NUM_CN = re.compile(rf"([{_CN_NUM}]{{1,5}})(?=({'|'.join(map(re.escape, _UNITS))}))(?!分之)")  # 百分之多少 is no 100分


def digits_as_said(text: str) -> str:
    """Every number written in digits as the Chinese numerals it is said as (24度 → 二十四度, 7:45 → 七点四十五,
    30% → 百分之三十); a decimal or a number past 9999 stays as written."""
    return _INT_DIGITS.sub(lambda m: int_to_chinese(int(m[1])), _clock_and_percent_as_said(text))


def _clock_and_percent_as_said(text: str) -> str:
    """7:45 → 七点四十五, 2点10 → 两点十, 30% → 百分之三十."""
    def hour(h: int) -> str:
        return "两" if h == 2 else int_to_chinese(h)

    text = _TIME_DIGITS.sub(lambda m: f"{hour(int(m[1]))}点{int_to_chinese(int(m[2]))}"
                            if int(m[1]) <= 24 and int(m[2]) < 60 else m[0], text)
    return _PERCENT_DIGITS.sub(lambda m: "百分之" + int_to_chinese(int(m[1])), text)


#: the units after which a number in digits is read as said by the router (``amounts_as_said``): a clock time, an
#: amount of time, a temperature, a level, a share or a count; not 天 (7天酒店), 号 (92号) or 次 (执行1次 is a term)
_AMOUNT_UNITS = ("点", "分钟", "小时", "秒", "度", "档", "个", "公里")
_AMOUNT_DIGITS = re.compile(rf"(?<![\d.a-zA-Z])(\d{{1,4}})(?=(?:{'|'.join(_AMOUNT_UNITS)}))")


def amounts_as_said(text: str) -> str:
    """The numbers of clock times (8点, 7:45) and of amounts with their unit (10分钟, 24度, 30%) in digits as the
    Chinese numerals they are said as (八点, 七点四十五, 十分钟, 二十四度, 百分之三十): ASR writes them either way, and the
    router reads one. Other digits stay as written (5G, 4S店, 7天酒店, 360影像, 92号)."""
    if not _DIGIT.search(text):
        return text
    text = _clock_and_percent_as_said(text)
    # 2 is 两 before 点 and 个 (两点, 两个), as it is said
    return _AMOUNT_DIGITS.sub(lambda m: "两" if m[1] == "2" and text[m.end()] in "点个" else int_to_chinese(int(m[1])),
                              text)


def _to_digits(text: str) -> str:
    def safe(numeral: str) -> str | None:
        try:
            return str(chinese_to_int(numeral))
        except ValueError:
            return None

    def time(m):
        h, mnt = safe(m[1]), safe(m[2])
        return f"{h}点{mnt}" if h and mnt and int(mnt) < 60 else m[0]

    text = _TIME_CN.sub(time, text)
    text = _PERCENT_CN.sub(lambda m: (safe(m[1]) + "%") if safe(m[1]) else m[0], text)
    # a lone 一 (一下, 一点儿, 一个) stays a word
    return _NUM_CN.sub(lambda m: m[0] if m[1] in ("一", "两") or safe(m[1]) is None else safe(m[1]), text)


# ---------------------------------------------------------------------------------------- variants

def filler(text: str, seed: int, lexicon: SpokenLexicon | None = None) -> str:
    """A hesitation before the query: 嗯打开空调, 那个，打开空调, 就是导航回家."""
    lex = lexicon or spoken_lexicon()
    rng = _rng("filler", text, seed)
    return rng.choice(lex.augment_fillers) + rng.choice(("", "", "，")) + text


def wake(text: str, seed: int, lexicon: SpokenLexicon | None = None) -> str:
    """A wake word before the query: 小爱同学打开空调, 你好小鹏，导航回家."""
    lex = lexicon or spoken_lexicon()
    rng = _rng("wake", text, seed)
    return rng.choice(lex.wake_words) + rng.choice(("", "，")) + text


_QUESTION = re.compile(r"[吗呢?？]$|什么|怎么|多少|哪|几|为什么|是不是|有没有|问一下|问下|问问")


def tail(text: str, seed: int, lexicon: SpokenLexicon | None = None) -> str:
    """A polite tail after the query: 打开空调谢谢, 打开空调，好吗. Questions only get thanks."""
    lex = lexicon or spoken_lexicon()
    rng = _rng("tail", text, seed)
    body = text.rstrip(_PAUSE)
    if _QUESTION.search(body):
        return body + rng.choice(("", "，")) + rng.choice(lex.tails)
    choice = rng.choice(lex.tails + lex.pause_tails)
    if choice in lex.pause_tails and body.endswith(choice):
        choice = rng.choice(lex.tails)
    return body + rng.choice(("", "，")) + choice


def stutter(text: str, seed: int, lexicon: SpokenLexicon | None = None) -> str:
    """The first one or two characters said twice: 空调空调开一下, 把把温度调低."""
    rng = _rng("stutter", text, seed)
    m = re.match(r"[\u3400-\u9fff]{2,}", text)
    if not m:
        return text
    k = rng.choice((1, 2))
    return text[:k] + text


def no_punct(text: str, seed: int = 0, lexicon: SpokenLexicon | None = None) -> str:
    """Punctuation and spaces dropped, as ASR delivers text (a decimal point or 7:45 stays)."""
    return _PUNCT.sub("", text)


def numerals(text: str, seed: int = 0, lexicon: SpokenLexicon | None = None) -> str:
    """Digits said as Chinese numerals (24度 → 二十四度, 7点45 → 七点四十五), or the other way round
    when the query has no digits (二十四度 → 24度)."""
    if _DIGIT.search(text):
        return digits_as_said(text)
    return _to_digits(text)


def homophone(text: str, seed: int, lexicon: SpokenLexicon | None = None) -> str:
    """One word replaced by what ASR often writes for it (座椅 → 坐椅, 导航 → 到航)."""
    lex = lexicon or spoken_lexicon()
    present = [(word, wrong) for word, wrong in lex.homophones if word in text]
    if not present:
        return text
    word, wrong = _rng("homophone", text, seed).choice(present)
    return text.replace(word, wrong, 1)


_TWO_SWAPS = 8  # characters a text needs for ``asr`` to swap two of them
#: outside a device or function term, ``asr`` leaves the characters of a dictionary word at least this frequent
#: (jieba's counts: 电话, 机票, 画面): an engine's language model writes its commonest words right
ASR_KEEPS_WORDS = 300


@lru_cache(maxsize=1)
def _command_words() -> re.Pattern:
    """The actions and question words of the lexicons (关, 打开, 吗, 哪), which ``asr`` leaves as they are."""
    terms = {t for name in ("actions", "questions") for t, _ in read_entries(LEXICON_DIR / f"{name}.txt")
             if GAP not in t}
    return re.compile("|".join(map(re.escape, sorted(terms, key=lambda t: (-len(t), t)))))


def asr(text: str, seed: int, lexicon: SpokenLexicon | None = None) -> str:
    """One character (two in a text of eight or more) swapped for another of the same sound in any tone, or
    of a near sound (zh/z, n/l, in/ing ...: ``near_sounds.txt``), as an ASR engine writes them: 空调 → 空挑,
    导航 → 到航, 座椅 → 作椅, 加热 → 加惹. Only common characters are swapped in (``sound.confusions``). A device
    or function term slips anywhere; the rest of the text only where an engine's language model is unsure: not
    in its common words (``ASR_KEEPS_WORDS``: 电话, 机票), its common characters (``SoundMatcher.common``: 的,
    上, 车), its actions and question words (关, 打开, 吗: ``_command_words``). The first swap falls on a term
    when the text has one and the seed says so (one in two). Unlike ``homophone`` it needs no list of
    misrecognitions, so it also says slips the sound matcher is not told of, and ones it must leave alone."""
    lex = lexicon or spoken_lexicon()
    if lex.sound is None:
        return text
    table = confusions(lex.sound.near)
    heard = lazy_pinyin(text, style=Style.NORMAL, errors=lambda rest: [""] * len(rest))  # 调 of 空调 is tiao

    def pools(k: int) -> tuple[tuple[str, ...], tuple[str, ...]]:  # same sound, near sound only
        same, near = table.get(heard[k], ((), ()))
        return tuple(c for c in same if c != text[k]), near

    swappable = {k for k in range(len(text)) if any(pools(k))}
    on_terms = sorted({k for term in lex.sound.terms for m in re.finditer(re.escape(term), text)
                       for k in range(m.start(), m.end())} & swappable)
    words = dictionary()
    kept = {k for size in (2, 3) for a in range(len(text) - size + 1)
            if words.get(text[a:a + size], 0) >= ASR_KEEPS_WORDS for k in range(a, a + size)}
    kept |= {k for m in _command_words().finditer(text) for k in range(m.start(), m.end())}
    places = sorted(set(on_terms) | {k for k in swappable if k not in kept and text[k] not in lex.sound.common})
    if not places:
        return text
    rng = _rng("asr", text, seed)
    chosen = [rng.choice(on_terms) if on_terms and rng.random() < 0.5 else rng.choice(places)]
    if len(text) >= _TWO_SWAPS and len(places) > 1 and rng.random() < 0.5:  # 上一首 is one slip from unreadable
        chosen.append(rng.choice([k for k in places if k != chosen[0]]))
    out = list(text)
    for k in chosen:
        same, near = pools(k)
        out[k] = rng.choice(near if near and (not same or rng.random() < 0.25) else same)
    return "".join(out)


VARIANTS = {"filler": filler, "wake": wake, "tail": tail, "stutter": stutter, "no_punct": no_punct,
            "numerals": numerals, "homophone": homophone, "asr": asr}
VARIANT_KINDS = tuple(VARIANTS)


def spoken_variants(text: str, seed: int = 0, kinds=VARIANT_KINDS,
                    lexicon: SpokenLexicon | None = None) -> list[tuple[str, str]]:
    """``(kind, variant)`` for each kind that changes ``text`` (in ``kinds`` order)."""
    out = []
    for kind in kinds:
        if kind not in VARIANTS:
            raise ValueError(f"unknown spoken variant kind {kind!r} (known: {', '.join(VARIANT_KINDS)})")
        variant = VARIANTS[kind](text, seed, lexicon)
        if variant != text:
            out.append((kind, variant))
    return out


# ---------------------------------------------------------------------------------------- stripping

_REPEAT_ONCE = r"([\u3400-\u9fff]{2,4})\1"
_REPEAT = re.compile(_REPEAT_ONCE + "+")


def _collapse_repeats(text: str, lex: SpokenLexicon) -> str:
    text = _without_leading_stutter(text)
    if lex.repeat_pattern.search(text) is None:  # most queries repeat nothing: one search finds either pattern
        return text
    text = _REPEAT.sub(lambda m: m[0] if m[1][0] == m[1][1] else m[1], text)  # 谢谢谢谢, 哈哈哈哈 stay; 小爱小爱小爱 → 小爱
    return lex.stutter_pattern.sub(lambda m: m[0] if _two_words_meet(text, m) else m[1], text)


def _two_words_meet(text: str, m: re.Match) -> bool:
    """Is a character said twice the end of one word and the start of the next (上车|车载冰箱, 开关|关闭: common words
    of jieba's dictionary), not a stutter? Not when the character before it belongs to a word of its own (打开|车车窗:
    开 is 打开's, and 车 said twice a stutter)."""
    a, b = m.start(), m.end()
    return 0 < a and b < len(text) and b - a == 2 and _common_word(text[a - 1:a + 1]) \
        and _common_word(text[b - 1:b + 1]) and not (a >= 2 and _common_word(text[a - 2:a]))


def _common_word(word: str) -> bool:
    """Is ``word`` a word of jieba's dictionary at least ``WORD_FREQUENCY`` frequent?"""
    return dictionary().get(word, 0) >= WORD_FREQUENCY


def _without_leading_stutter(text: str) -> str:
    """A character said twice at the start (现现在, 总总结一下, 十十分钟以后) as said once, unless the two are a
    common word of jieba's dictionary (看看, 天天, 刚刚); said three times (看看看) it is that word."""
    if len(text) < 3 or text[0] != text[1] or not "\u3400" <= text[0] <= "\u9fff":
        return text
    if text[2] == text[0]:
        return text[1:]
    return text if _common_word(text[:2]) else text[1:]


def _corrected(text: str, lex: SpokenLexicon) -> str:
    """``text`` with the misrecognitions of asr_corrections.txt put back (坐椅 → 座椅), then the devices and
    functions ASR wrote with other characters of their sound (恐调 → 空调, ``SoundMatcher.put_back``). Most
    texts hold no listed misrecognition: one search tells, cheaper than a test of their characters."""
    fix = lex.correction_pattern
    if fix is not None and fix.search(text) is not None:
        word = lex.correction_map
        text = fix.sub(lambda m: word[m[0]], text)
    return text if lex.sound is None else lex.sound.put_back(text)


def slips(text: str, lexicon: SpokenLexicon | None = None) -> tuple[tuple[tuple[str, str], ...], ...]:
    """The misrecognitions ``strip_disfluencies`` puts back in ``text`` (做椅加热 → 座椅加热, 蓝雅 → 蓝牙), one
    entry per run of changed characters: (corrected, as said) windows of the run with its neighbours, widest
    first, so that a window names the place of the slip and not a lone character found anywhere (蓝牙的/蓝雅的,
    蓝牙/蓝雅, 牙的/雅的; never 牙/雅 alone). A text with no slip, or one whose correction changes its length,
    has none."""
    lex = lexicon or spoken_lexicon()
    fixed = _corrected(text, lex)
    if fixed == text or len(fixed) != len(text):
        return ()
    found, k = [], 0
    while k < len(text):
        if text[k] == fixed[k]:
            k += 1
            continue
        i = k
        while k < len(text) and text[k] != fixed[k]:
            k += 1
        windows = ((i - 1, k + 1), (i - 1, k), (i, k + 1), (i, k))
        found.append(tuple((fixed[a:b], text[a:b]) for a, b in windows if a >= 0 and b <= len(text) and b - a >= 2))
    return tuple(found)


def _hesitation_demonstrative(rest: str, lex: SpokenLexicon) -> bool:
    """Is 那个/这个 before ``rest`` a hesitation? After a pause, before another filler or wake word,
    or before a command that has an object of its own (那个打开空调, not 那个打开)."""
    if not rest:
        return False
    if rest[0] in _PAUSE:
        return True
    if rest.startswith(lex.hesitations) or rest.startswith(lex.wake_words):
        return True
    for start in lex.command_starts:
        if rest.startswith(start):
            after = rest[len(start):].strip(_PAUSE)
            for bare in ("一下", "掉", "了", "吧", "呗", "上", "下"):
                if after.endswith(bare):
                    after = after[: -len(bare)]
            return len(after) >= 1
    return False


_ASSISTANT_FIRSTS = "小阿"  # an assistant's name said as 小X or 阿X (小途, 小舟, 阿福, 小V), maybe with 同学 (小柚同学)
_ASSISTANT_NAME = re.compile(f"[{_ASSISTANT_FIRSTS}]" + r"[\u4e00-\u9fffa-zA-Z](?:同学)?")


def _without_assistant_name(out: str, text: str, lex: SpokenLexicon) -> str:
    """``out`` without a leading assistant name of the shape 小X that no wake word list knows (小途, 小舟):
    after a greeting (你好小途, 嘿小舟), said twice in ``text`` (小途小途, which the stutter rule made one), or
    before a pause, 你好, a hesitation or a command (小悠，…, 小悠帮我…). 小声, 小米任务 … stay: no
    greeting, no repetition, no pause or command after them."""
    if out[:1].lower() not in lex.greeting_firsts:
        return out
    lowered = out.lower()  # once, not once per greeting
    greeting = next((g for g in lex.greetings if lowered.startswith(g)), "")
    m = _ASSISTANT_NAME.match(out, len(greeting))
    if m is None or len(out) <= m.end() + 1:
        return out
    name, rest = m.group(), out[m.end():]
    if rest.startswith("你好"):
        rest = rest[2:]
    said = text.lower()
    greeted = greeting or any(g + name.lower() in said for g in lex.greetings)  # 嘿 may have gone as a hesitation
    if greeted or (name + name).lower() in said or (rest and rest[0] in _PAUSE) or rest.startswith(lex.hesitations) \
            or rest.startswith(lex.command_starts):
        return rest
    return out


def _statement(body: str) -> bool:
    """Is ``body`` a whole statement or command (空调再调低两度, 快进三十秒), not a question of its own (能开吗,
    这首好不好听) nor a short topic the tail asks about (今天天气 of 今天天气好吗)? Then a tail after it is polite."""
    return len(body) >= 5 and not _QUESTION.search(body)


def strip_disfluencies(text: str, lexicon: SpokenLexicon | None = None) -> str:
    """``text`` (normalised) without what never changes its answer: a wake word first or last, hesitations
    (嗯, 呃, 就是; 那个/这个 when they are one) first or alone between two pauses, stutters (空调空调 → 空调,
    把把 → 把) and a polite tail (谢谢; 好吗 after a pause); misrecognitions of asr_corrections.txt are put
    back (坐椅 → 座椅), and so are devices ASR wrote with characters of their sound (恐调 → 空调). A query that
    would be left empty is returned as it was.

    Kept per process (``_STRIPPED``): the router strips a query's normalised text and the automation parser
    its surface, which for most queries is the same string."""
    lex = lexicon or spoken_lexicon()
    key = (lex.identity, text)
    out = _STRIPPED.get(key)
    if out is None:
        out = _strip(text, lex)
        _STRIPPED.keep({key: out})
    return out


_STRIPPED = TextMemo(4096)


def without_false_starts(text: str) -> str:
    """``text`` without each space-separated chunk that the chunk after it says again from its start, the
    speaker having started over (打开 打开座椅通风 → 打开座椅通风), and without each chunk that only echoes the end
    of the chunk before it (车窗关上 关上 → 车窗关上). Read where spaces are pauses (``spaces_as_pauses``), which
    ``strip_disfluencies`` collapses only when nothing stands between the two."""
    chunks = text.split()
    kept = _said_once(chunks)
    return text if len(kept) == len(chunks) else " ".join(chunks[i] for i in kept)


def _said_once(chunks: list[str]) -> list[int]:
    """The indexes of ``chunks`` (what is said between two pauses) left once each false start (a chunk of two
    or more characters the next chunk says again from its start) and each echo (one the chunk before ends with:
    of two or more characters, or one of ``_RESAID_ONE``, as in 导航去，去，虹桥) is dropped."""
    if len(chunks) < 2:
        return list(range(len(chunks)))
    kept = [i for i, (c, after) in enumerate(zip(chunks, chunks[1:])) if not (len(c) >= 2 and after.startswith(c))]
    kept.append(len(chunks) - 1)
    echo = [(len(chunks[i]) >= 2 or chunks[i] in _RESAID_ONE) and chunks[before].endswith(chunks[i])
            for before, i in zip(kept, kept[1:])]
    return kept[:1] + [i for i, dropped in zip(kept[1:], echo) if not dropped]


def _without_restarts(text: str) -> str:
    """``text`` without the false starts and echoes of ``_said_once`` between its pauses (打开，打开主驾车窗 →
    打开主驾车窗): each dropped chunk goes with the pause after it, or before it at the end."""
    parts = _PAUSES.split(text)  # chunk, pause, chunk, …
    chunks = parts[::2]
    kept = _said_once(chunks)
    if len(kept) == len(chunks):
        return text
    out = []
    for n, i in enumerate(kept):
        out.append(chunks[i])
        if n + 1 < len(kept):  # a chunk before the last kept one has its pause after it
            out.append(parts[2 * i + 1])
    return "".join(out)


_PAUSES = re.compile(f"([{re.escape(_PAUSE)}]+)")
#: what may follow a 那个 that ends a chunk and keep it a pointer: another pointer or a word asking for the name
_STILL_POINTING = ("那", "这", "就", "叫", "什么", "啥", "谁", "哪")


def _without_paused_demonstratives(text: str, lex: SpokenLexicon) -> str:
    """``text`` without each 那个/这个 said right after a command's start (or a place word 去/到 ending it) and
    before a pause, then the thing itself (打开那个，哨兵模式吧 → 打开哨兵模式吧; 把那个，雷达声音关掉 →
    把雷达声音关掉; 导航去，那个，浦东机场 → 导航去浦东机场, the pause before it going too): the speaker
    searching for the word, not pointing. It stays when what follows points again or asks for the name
    (打开那个，那个app; 导航去那个，那个啥来着) and after anything else (幼儿园那个，还是钢琴课那个)."""
    out = text
    for term in lex.demonstrative_fillers:
        at = out.find(term)
        while at > 0:
            end = at + len(term)
            pause = _PAUSES.match(out, end)
            start = len(out[:at].rstrip(_PAUSE))  # a pause before it goes with it
            # across a pause, a one-character start could end a whole command (打开空调，那个，…)
            starts = lex.command_starts if start == at else lex.longer_command_starts
            if pause is not None and pause.end() < len(out) and start > 0 \
                    and (out.endswith(starts, 0, start) or out[start - 1] in _PLACE_AFTER) \
                    and not out.startswith(_STILL_POINTING, pause.end()):
                out = out[:start] + out[pause.end():]
            at = out.find(term, at + 1)
    return out


def _strip(text: str, lex: SpokenLexicon) -> str:
    """``strip_disfluencies`` of ``text`` with ``lex``."""
    out = _corrected(_collapse_repeats(text, lex), lex)
    if _PAUSES.search(out):
        out = _without_paused_demonstratives(_without_restarts(out), lex)
    inner = lex.inner_hesitation
    if inner is not None and inner.search(out):
        out = _without_inner_hesitations(out, inner, lex.command_start_set)
    starts, ends = lex.edge_chars
    first = out[:1].lower()  # the lists are lower case, a text may not be (NOMI 打开车窗)
    if not out or (first not in starts and out[-1] not in ends and not out.endswith(lex.stripped_wake_words)):
        return out or text
    if first in starts or first in lex.greeting_firsts:  # else the start is left as it is
        out = _strip_start(out, text, lex)
    if out and (out[-1] in ends or out.endswith(lex.stripped_wake_words)):  # else so is the end
        out = _strip_end(out, lex)
    out = out.strip(_PAUSE)
    return out if out else text


#: a single character a speaker says again when going on after a hesitation (导航去，呃，去虹桥): a word of two
#: or more said again is always a restart (把空调，嗯，空调打开), one character only when it is one of these
_RESAID_ONE = frozenset("去到把给在往从跟和再")
#: a word that ends a command's start and asks for a place next (导航去, 开到)
_PLACE_AFTER = frozenset("去到")


def _without_inner_hesitations(out: str, inner: re.Pattern, starts: frozenset) -> str:
    """``out`` without each hesitation said alone between two pauses, and the pause before it; when the words
    after it say again the last words before it (导航去，呃，去虹桥火车站), the speaker restarted there: the
    words said again and the pause go too (导航去虹桥火车站). A verb said again is a restart only when nothing
    but a command's start (``starts``: 帮我, 请) came before it (打开，呃，打开空调; 帮我打给，呃，打给老周):
    把灯打开，嗯，打开空调 is two commands."""
    pieces, last = [], 0
    for m in inner.finditer(out):
        pieces.append(out[last:m.start()])
        last = m.end()
        rest = out[m.end():]
        body = rest.lstrip(_PAUSE)
        for k in (4, 3, 2, 1):
            said = body[:k]
            alone = m.start() == k or out[:m.start() - k].strip(_PAUSE) in starts
            if len(said) == k and out.endswith(said, 0, m.start()) and _said_again(said, alone=alone):
                last = m.end() + len(rest) - len(body) + k
                break
    pieces.append(out[last:])
    return "".join(pieces)


def _said_again(word: str, alone: bool) -> bool:
    """Is ``word``, said on both sides of a hesitation, a restart? (``alone``: nothing was said before it.)"""
    if not all("\u3400" <= c <= "\u9fff" for c in word):
        return False
    if len(word) == 1:
        return word in _RESAID_ONE
    return alone or _command_words().fullmatch(word) is None


def _strip_start(out: str, text: str, lex: SpokenLexicon) -> str:
    """``out`` without a leading wake word, hesitation or assistant name, again and again."""
    wake_at, hesitation_at, demonstrative_at = lex.by_edge[:3]
    while True:
        before = out
        out = out.lstrip(_PAUSE)
        for k in (1, 2):  # a stutter on the wake word's first characters (小小爱同学, 你你好小鹏)
            if out[:k] == out[k:2 * k] and out[k:].startswith(lex.stripped_wake_words):
                out = out[k:]
                break
        # the lists are lower case (``read_entries``), the automation parser's text keeps the user's (嗨NOMI)
        low = out.lower()
        if len(low) != len(out):  # a character whose lower case is two (İ): read as it is
            low = out
        for group in (wake_at, hesitation_at):
            for term in group.get(low[:1], ()):
                if low.startswith(term) and len(out) > len(term):
                    out, low = out[len(term):], low[len(term):]
                    break
        for term in demonstrative_at.get(out[:1], ()):
            if out.startswith(term) and _hesitation_demonstrative(out[len(term):], lex):
                out = out[len(term):]
                break
        out = _without_assistant_name(out, text, lex)
        if out == before:
            return out


def _strip_end(out: str, lex: SpokenLexicon) -> str:
    """``out`` without a polite tail or a wake word said last, again and again."""
    tail_at, pause_tail_at = lex.by_edge[3:]
    while True:
        before = out
        body = out.rstrip(_PAUSE)
        for term in tail_at.get(body[-1:], ()):
            if body.endswith(term) and len(body) > len(term) + 1:
                body = body[: -len(term)]
                break
        if body.endswith(lex.stripped_wake_words):  # a wake word said last calls the assistant (放首歌吧小爱同学; 你好小鹏 stays)
            for term in lex.stripped_wake_words:
                if body.endswith(term) and len(body) > len(term) + 1 and (
                        len(term) >= 3 or body[-len(term) - 1] in _PAUSE):
                    body = body[: -len(term)]
                    break
        for term in pause_tail_at.get(body[-1:], ()):
            if body.endswith(term) and len(body) > len(term) + 1 and (
                    body[-len(term) - 1] in _PAUSE
                    or (term in lex.statement_tails and _statement(body[: -len(term)])
                        and body[-len(term) - 1] + term[0] not in lex.tail_words)):
                body = body[: -len(term)]
                break
        out = body.rstrip(_PAUSE)
        if out == before:
            return out


# ---------------------------------------------------------------------------------------- augmentation

def augment_rows(rows: list[dict], per_row: int, seed: int, held_out: set[str] = frozenset(),
                 kinds=VARIANT_KINDS, lexicon: SpokenLexicon | None = None) -> list[dict]:
    """Up to ``per_row`` spoken variants of each labelled row, each of another kind, as new rows with
    the source's label and codes and ``source`` ``<source>+spoken:<kind>``. A row with punctuation inside
    always gets its ``no_punct`` variant (when ``kinds`` has it): speech is written without pauses.

    The leak guard: a variant whose normalised query is in ``held_out`` (the queries of the dev sets and
    fixtures, normalised) or equals a query already in ``rows`` is not added. Deterministic: the same
    rows, ``per_row`` and ``seed`` give the same list.
    """
    if per_row <= 0:
        return []
    seen = {normalise(r["query"]) for r in rows} | set(held_out)
    out = []
    for row in rows:
        query = row["query"]
        order = list(kinds)
        _rng("augment", query, seed).shuffle(order)
        if "no_punct" in order:  # people who never saw the data, and ASR, write no pauses: a punctuated row
            order.remove("no_punct")  # always gets its unpunctuated twin first
            order.insert(0, "no_punct")
        added = 0
        for kind in order:
            if added >= per_row:
                break
            variant = VARIANTS[kind](query, seed, lexicon)
            key = normalise(variant)
            if variant == query or key in seen:
                continue
            seen.add(key)
            out.append({**row, "query": variant, "source": f"{row.get('source') or 'train'}+spoken:{kind}"})
            added += 1
    return out
