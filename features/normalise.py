"""The one normaliser: what every component reads of a query's text (full/half width, spaces next to
Chinese, the final stop, punctuation), and the identities built from it. The lowest module of the
text layer: lexicons, the spoken-style module and the segmenter all read through it."""

from __future__ import annotations

import re
import unicodedata

_CJK = r"\u3400-\u9fff\uf900-\ufaff"
_SPACE_NEAR_CJK = re.compile(rf"\s+(?=[{_CJK}])|(?<=[{_CJK}])\s+")
_SPACE_BETWEEN_CJK = re.compile(rf"(?<=[{_CJK}])\s+(?=[{_CJK}])")
_SPACES = re.compile(r"\s+")
_STOPS = "。．.!！~～…"
_TRAILING = re.compile(rf"[{_STOPS}\s]+$")
_HALF = ",;:?!"
_HALF_PUNCT = re.compile(rf"(?<=[{_CJK}])[{_HALF}]|[{_HALF}](?=[{_CJK}])")
_FULL = {",": "，", ";": "；", ":": "：", "?": "？", "!": "！"}
_PUNCT = re.compile(r"[\s\W_]+", re.UNICODE)


#: the full-width marks queries are typed with, each with its NFKD decomposition (the half-width mark)
_WIDE_MARKS = tuple((mark, unicodedata.normalize("NFKD", mark)) for mark in "，？！：；")


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``. A third of queries are not NFKC-stable, nearly all only for a
    full-width comma or question mark; normalising them costs ~2 us. Replacing a character by its NFKD
    decomposition leaves the text's NFKC as it was (NFKC composes the full decomposition, which is the same), so
    once the common marks are replaced, a text that is NFKC-stable is its own NFKC; any other is normalised."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    for wide, narrow in _WIDE_MARKS:
        text = text.replace(wide, narrow)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def without_spaces_near_chinese(text: str) -> str:
    return _SPACE_NEAR_CJK.sub("", text)


def without_final_stop(text: str) -> str:
    """``text`` without its final stops and white space; a text that ends otherwise (nearly every one)
    is returned without running the pattern (``\\s`` is ``str.isspace``)."""
    if not text or (text[-1] not in _STOPS and not text[-1].isspace()):
        return text
    return _TRAILING.sub("", text)


def clean(text: str) -> str:
    """The one normaliser: NFKC (full-width letters, digits and punctuation to half width), no spaces
    next to Chinese, runs of spaces as one, no final 。/！/… . Letter case is kept."""
    text = _SPACES.sub(" ", _SPACE_NEAR_CJK.sub("", nfkc(text).strip()))
    return _TRAILING.sub("", text)


def spaces_as_pauses(text: str) -> str:
    """A space between two Chinese characters as the pause it stands for (``，``): people who type
    without punctuation and ASR that marks pauses write 那个 天窗关了 空调开内循环; deleting the space
    would glue a hesitation to its command (那个天窗) and two commands into one."""
    text = nfkc(text)
    return _SPACE_BETWEEN_CJK.sub("，", text.strip())


def normalise(text: str) -> str:
    """``clean`` and lower case, a space between Chinese characters read as a pause
    (``spaces_as_pauses``): the text the router reads and lexicons are matched in.

    ``把温度调到 24 度。`` and ``把温度调到24度`` become the same string; ``关窗 开空调`` is ``关窗,开空调``.

    A text whose NFKC holds no white space once stripped (nearly every one) is that NFKC without its final
    stops, lower-cased: the space patterns have nothing to do (a test holds the two equal)."""
    stripped = nfkc(text).strip()
    if _SPACES.search(stripped) is None:
        return without_final_stop(stripped).lower()
    return clean(spaces_as_pauses(text)).lower()


def chinese_punctuation(text: str) -> str:
    """``,`` next to a Chinese character back to ``，`` (NFKC made it half width); same length. A text
    without any half-width ``,;:?!`` is returned without running the pattern."""
    if "," not in text and ";" not in text and ":" not in text and "?" not in text and "!" not in text:
        return text  # five substring tests beat a set test of every character and the pattern
    return _HALF_PUNCT.sub(lambda m: _FULL[m.group()], text)


def surface(query) -> str:
    """``clean`` with Chinese punctuation kept: the text the automation parser reads and quotes from,
    so ``HyperTask`` and ``，`` are quoted as written. Not a string: ``""``.

    As in ``normalise``, a text whose NFKC holds no white space once stripped (nearly every one) skips the
    space patterns, which have nothing to do: ``clean`` is then that NFKC without its final stops (a test
    holds the two equal). Every query is read this way once by the parser: ~2 µs of ~2.5."""
    if not isinstance(query, str):
        return ""
    stripped = nfkc(query).strip()
    if _SPACES.search(stripped) is None:
        return chinese_punctuation(without_final_stop(stripped))
    return chinese_punctuation(clean(query))


def fold(text) -> str:
    """``normalise`` without any space or punctuation: the identity of a condition, subquery or task
    name (上车时， 打开 空调 == 上车时打开空调). ``None``: ``""``.

    A text whose NFKC holds no white space (nearly every one) is that NFKC lower-cased without
    punctuation: ``normalise`` then only drops a final run of stops, which are punctuation and not
    cased (so lower-casing what comes before them gives the same), and the fold drops them anyway. Any
    other text takes the definition (``tests/test_text_layer_speed.py`` holds the two equal)."""
    if text is None:
        return ""
    text = str(text)
    stable = nfkc(text)
    if _SPACES.search(stable) is None:
        return _PUNCT.sub("", stable.lower())
    return _PUNCT.sub("", normalise(text))
