"""The utterance object and jieba segmentation with the domain dictionary (normalisation: ``features.normalise``)."""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import jieba
from sklearn.base import BaseEstimator, TransformerMixin

from fastslow.features.lexicon import LEXICON_DIR, ROUTER_LEXICONS, LexiconBank, load_lexicon, read_user_dict
from fastslow.features.normalise import normalise

try:  # jieba-rs: the same algorithm and dictionary, compiled (see RustCut)
    import rjieba
except ImportError:  # pragma: no cover - rjieba is a dependency; jieba stays the definition
    rjieba = None
from fastslow.features.spoken import amounts_as_said, spoken_lexicon, strip_disfluencies

jieba.setLogLevel(logging.WARNING)

CONTEXT_STATES = ("none", "prev_fast", "prev_slow", "slow_question", "prev_other", "prev_candidates", "prev_listed",
                  "slow_result")
#: the lexicon of what an earlier user turn says when it names several candidates (有两个张伟)
CANDIDATES_LEXICON = "candidates"
_WHITE = re.compile(r"\s")
_ASKS = re.compile(r"[?？]|吗|是否|要不要|哪个|哪一|哪家|哪天|几点|什么时候|还是|可以吗|好吗|请问|几位|几个人|多少|哪里|哪儿|去哪"
                   r"|什么|谁")
#: a slow answer that gives what it found, recommended, planned or booked (为你找到, 推荐两家, 第一家…, 为你规划了,
#: 已为你预约): a change to it or a choice among it that follows (换一家, 离得近的那个, 改到后天) depends on it, where a
#: question after an answer that explains keeps its kind
_RESULTS = re.compile(r"找到|推荐|第一家|第一个|为你规划|规划了|已为你|已预订|已预约|已订|订好|约好")
#: an answer that names several things of one kind (已打开阅读灯和氛围灯, 客厅灯、卧室灯都开着, 附近有A和B)
_LISTS = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]{2,}(?:和|、|跟|以及)[\u4e00-\u9fffA-Za-z0-9]{2,}")


def candidate_markers(lexicon_dir: Path | None = None) -> tuple[str, ...]:
    """The terms of candidates.txt (有两个, 同名): an earlier user turn with one names several candidates."""
    return tuple(load_lexicon(CANDIDATES_LEXICON, lexicon_dir=lexicon_dir).terms())


def context_state(context, candidates: tuple[str, ...] = ()) -> str:
    """Summarise earlier turns: is there one, which system answered, is a slow question pending, or a result the
    slow system gave (``slow_result``)?

    ``candidates`` (``candidate_markers()``): when an earlier turn says there are several candidates for
    one name (the user: 我通讯录里有两个张伟; a fast answer: 通讯录里有两个张伟), the state is
    ``prev_candidates`` unless a slow question is pending (its answer is a context reply): a request that
    names one of them needs disambiguation. When the last fast answer lists several things of one kind without
    asking which (已打开阅读灯和化妆镜灯, 附近有A和B) it is ``prev_listed``: a request that names one of them
    goes on, one that says 它, 那个 or 一个 needs disambiguation (XA4.1 真实消歧). A slow answer that lists
    what it found keeps its state: choosing among its results (离得近的那个) needs that answer."""
    if not context:  # most queries come without earlier turns
        return "none"
    state = _turn_state(context)
    if not candidates or state in ("none", "slow_question"):  # no markers given: the turn state alone
        return state
    if any(any(m in (turn.get("text") or "") for m in candidates) for turn in context):
        return "prev_candidates"
    answer = last_turn_text(context, "assistant")
    if state == "prev_fast" and _LISTS.search(answer) and not _ASKS.search(answer):
        return "prev_listed"
    return state


def last_turn_text(context, role: str) -> str:
    """The text of the last earlier turn of ``role`` (``user`` or ``assistant``); "" when the context holds none."""
    return next((turn.get("text") or "" for turn in reversed(context) if turn.get("role") == role), "")


def _turn_state(context) -> str:
    if not context:
        return "none"
    for turn in reversed(context):
        if turn.get("role") == "assistant":
            system = turn.get("system")
            if system == "slow":
                text = turn.get("text") or ""
                if _ASKS.search(text):
                    return "slow_question"
                return "slow_result" if _RESULTS.search(text) else "prev_slow"
            if system == "fast":
                return "prev_fast"
            return "prev_other"
        if turn.get("system") == "fast":
            return "prev_fast"
        if turn.get("system") == "slow":
            return "prev_slow"
    return "prev_other"


@dataclass(frozen=True, slots=True)
class Utterance:
    """One query as the router, its extractors and the splitter see it: normalised text, tokens, its
    conversation state, and what the automation parse of the whole query says (``parse_signals``; empty for a
    subrequest and for an input routed without a parse)."""

    text: str  # normalise(query): what the router and the lexicons read
    tokens: tuple[str, ...]
    context: str = "none"  # one of CONTEXT_STATES
    endpoint: str | None = None  # car, speaker, home or None (unknown)
    hits: dict = field(default_factory=dict, compare=False, repr=False)  # lexicon digest -> {column: count}
    parse: tuple[str, ...] = ()  # parse_signals of the input's automation groups


def as_fields(item) -> tuple[str, list, str | None]:
    """(query, context, endpoint) of a raw string or an input dict (already validated)."""
    if isinstance(item, str):
        return item, [], None
    return item["query"], item.get("context") or [], item.get("endpoint")


#: what an automation parse can say of a whole query (``parse_signals``)
PARSE_SIGNALS = ("condition", "reminder", "vehicle", "device", "builtin", "default")


def parse_signals(item) -> tuple[str, ...]:
    """What the automation groups passed with an input (its ``automation`` field, in the record's format) say
    of the whole query, in ``PARSE_SIGNALS`` order: ``condition`` (a condition of the user's own: neither
    ``default`` nor a built-in behaviour), ``reminder`` (such a condition whose every subquery is a reminder),
    ``vehicle`` / ``device`` (such a condition over a control of the car's own, 车载控制, or of a device a home
    has too, 设备控制: where an automation runs when the endpoint is not known), ``builtin`` (a built-in
    behaviour; one that is only a reminder, 洗衣机洗完的时候提醒我, still asks to be told at a moment, so it is a
    ``condition`` and a ``reminder`` too, routed as one on a speaker), ``default`` (managing a task or memo).
    Empty without groups."""
    groups = item.get("automation") if isinstance(item, dict) else None
    if not groups:
        return ()
    found = set()
    for group in groups:
        condition = group.get("condition")
        if condition is None:
            continue
        querys = group.get("querys") or []
        intents = {q.get("intent") for q in querys}
        reminder = bool(querys) and intents == {"提醒"}
        if condition == "default":
            found.add("default")
        elif group.get("builtin"):
            found.add("builtin")
            if reminder:  # 洗衣机洗完的时候提醒我: the appliance's own notice, yet a reminder asked for at a moment
                found |= {"condition", "reminder"}
        else:
            found.add("condition")
            if reminder:
                found.add("reminder")
            if "车载控制" in intents:
                found.add("vehicle")
            if "设备控制" in intents:
                found.add("device")
    return tuple(s for s in PARSE_SIGNALS if s in found)


_TOKENIZERS: dict[tuple, jieba.Tokenizer] = {}
_TOKENIZER_LOCK = threading.RLock()


def words_key(words: tuple[tuple[str, int | None], ...]) -> str:
    return hashlib.sha1(repr(words).encode("utf-8")).hexdigest()


def domain_tokenizer(words: tuple[tuple[str, int | None], ...], key: str | None = None) -> jieba.Tokenizer:
    """A jieba tokenizer with the domain words added; built once per process and word list."""
    key = key or words_key(words)
    tokenizer = _TOKENIZERS.get(key)
    if tokenizer is None:
        with _TOKENIZER_LOCK:
            tokenizer = _TOKENIZERS.get(key)
            if tokenizer is None:
                tokenizer = jieba.Tokenizer()
                tokenizer.initialize()
                for word, freq in words:
                    tokenizer.add_word(word, freq)
                _TOKENIZERS[key] = tokenizer
    return tokenizer


class ExactCut:
    """jieba's accurate mode without HMM, ``tokenizer.lcut(text, HMM=False)``, token for token.

    jieba builds a dict-of-lists word graph, then finds the best path with a generator of tuples and
    a ``log`` per candidate word on every call. This does both in one backward pass over the
    characters and computes each word's log-probability once per process; on this project's queries
    it segments about twice as fast. The same arithmetic and the same tie-break (the longer word)
    give the same tokens, which ``tests/test_features.py`` checks against jieba on every bundled query.
    """

    _HAN = jieba.re_han_default  # the blocks jieba segments with its dictionary
    _SKIP = jieba.re_skip_default
    _ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")  # jieba.re_eng

    def __init__(self, tokenizer: jieba.Tokenizer):
        tokenizer.check_initialized()
        self.freq = tokenizer.FREQ
        self.logtotal = math.log(tokenizer.total)
        self.logp: dict[str, float] = {}  # word -> log(freq) - log(total), filled as words are met

    def lcut(self, sentence: str) -> list[str]:
        out: list[str] = []
        # re.split with one group: the odd parts are the matches (jieba tests each with re_han.match)
        for j, block in enumerate(self._HAN.split(sentence)):
            if not block:
                continue
            if j % 2:
                self._cut_block(block, out)
            else:
                for part in self._SKIP.split(block):
                    if self._SKIP.match(part):
                        out.append(part)
                    else:
                        out.extend(part)
        return out

    def _cut_block(self, s: str, out: list[str]) -> None:
        freq, logp, logtotal = self.freq, self.logp, self.logtotal
        n = len(s)
        score = [0.0] * (n + 1)
        end = [0] * n
        for k in range(n - 1, -1, -1):
            best_end, best = -1, 0.0
            i, frag = k, s[k]
            while i < n and frag in freq:
                f = freq[frag]
                if f:
                    lp = logp.get(frag)
                    if lp is None:
                        lp = logp[frag] = math.log(f) - logtotal
                    candidate = lp + score[i + 1]
                    if best_end < 0 or candidate >= best:  # >=: a tie goes to the longer word, as in jieba
                        best, best_end = candidate, i
                i += 1
                frag = s[k: i + 1]
            if best_end < 0:  # no dictionary word starts here: the single character, at frequency 1
                best, best_end = -logtotal + score[k + 1], k
            score[k], end[k] = best, best_end
        alnum, buf, x = self._ALNUM, "", 0
        while x < n:
            y = end[x] + 1
            word = s[x:y]
            if y - x == 1 and word in alnum:
                buf += word  # runs of single letters and digits stay one token
            else:
                if buf:
                    out.append(buf)
                    buf = ""
                out.append(word)
            x = y
        if buf:
            out.append(buf)


class RustCut:
    """jieba-rs (``rjieba``, compiled) loaded with exactly the dictionary of a jieba tokenizer.

    jieba-rs runs jieba's algorithm, but ``add_word`` on its bundled dictionary does not reproduce
    jieba's arithmetic: jieba adds every added word's frequency to its total again (even for a word
    it already has), so near ties such as 分钟后 against 分钟+后 go the other way. So the Rust
    dictionary is built from scratch with every word and frequency of the Python tokenizer, plus one
    entry that no text can match (it holds NUL) carrying the rest of jieba's total; then every
    word's log-probability, and so every path's score, is jieba's. ``cut_for`` checks the result
    before it is used, and ``tests/test_features.py`` checks it on every bundled text.
    """

    _PAD = "\x00\x00"  # outside jieba's Han blocks: never a candidate word

    def __init__(self, tokenizer: jieba.Tokenizer):
        tokenizer.check_initialized()
        self.jieba = rjieba.Jieba.empty()
        total = 0
        for word, freq in tokenizer.FREQ.items():
            if freq:  # 0: only a prefix of a longer word, never a candidate in jieba either
                self.jieba.add_word(word, freq, None)
                total += freq
        if tokenizer.total > total:
            self.jieba.add_word(self._PAD, tokenizer.total - total, None)
        self._cut = self.jieba.cut

    def lcut(self, sentence: str) -> list[str]:
        return self._cut(sentence, False)


#: sentences every cutter must segment as jieba does before it is used (beside every domain word)
PROBES = ("15分钟后关掉音乐", "把温度调到24度然后打开座椅加热", "su7支持哪些模式?", "打开 空调", "100%亮度",
          "a_b c#d", "2.5度", "HELLO世界", "上车时打开空调，到家时关闭车窗", "今天天气怎么样")


def agrees(cut, reference: ExactCut, words) -> bool:
    """Does ``cut`` segment every domain word and every probe sentence as ``reference`` (jieba) does?"""
    return all(cut.lcut(text) == reference.lcut(text)
               for text in (*PROBES, *(word for word, _ in words)))


_CUTS: dict[str, "ExactCut | RustCut"] = {}


def cut_for(tokenizer: jieba.Tokenizer, words=()) -> "ExactCut | RustCut":
    """The fastest cutter that gives jieba's tokens (no HMM): ``RustCut`` when rjieba is installed
    and agrees with jieba on the domain words and the probes, else ``ExactCut`` (pure Python)."""
    exact = ExactCut(tokenizer)
    if rjieba is None:
        return exact
    rust = RustCut(tokenizer)
    if agrees(rust, exact, words):
        return rust
    logging.getLogger(__name__).warning("rjieba disagrees with jieba on the domain dictionary: using jieba's algorithm")
    return exact


def domain_cut(words: tuple[tuple[str, int | None], ...], key: str | None = None) -> "ExactCut | RustCut":
    """The cutter (``cut_for``) of ``domain_tokenizer(words)``, one per process and word list."""
    key = key or words_key(words)
    cut = _CUTS.get(key)
    if cut is None:
        with _TOKENIZER_LOCK:
            cut = _CUTS.get(key)
            if cut is None:
                cut = _CUTS[key] = cut_for(domain_tokenizer(words, key), words)
                if isinstance(cut, RustCut):  # jieba's own dictionary is no longer needed (~60 MiB)
                    _TOKENIZERS.pop(key, None)
    return cut


def _without_space(tokens: list[str], text: str) -> tuple[str, ...]:
    if _WHITE.search(text) is None:  # no white space in the text: none in a token (\s is str.isspace)
        return tuple(tokens)
    return tuple(t for t in tokens if not t.isspace())


class Segmenter(BaseEstimator, TransformerMixin):
    """Raw inputs (strings or input dicts) → ``Utterance`` objects, segmented once with jieba.

    The domain dictionary is every multi-character term of the router's lexicons (``ROUTER_LEXICONS``)
    plus ``user_dict.txt``; ``fit``
    freezes it into ``words_`` so that a saved model segments exactly as it did in training,
    whatever happens to the lexicon files later.
    """

    def __init__(self, lexicon_dir=None, hmm=True, spoken=False):
        self.lexicon_dir = lexicon_dir
        self.hmm = hmm
        self.spoken = spoken  # strip wake words, hesitations, stutters and polite tails (features.spoken)

    def fit(self, X=None, y=None):
        lexicon_dir = Path(self.lexicon_dir) if self.lexicon_dir else LEXICON_DIR
        lexicons = [load_lexicon(name, lexicon_dir=lexicon_dir) for name in ROUTER_LEXICONS
                    if (lexicon_dir / f"{name}.txt").is_file()]
        self.lexicons_ = LexiconBank.of(lexicons)
        # every multi-character, non-gap lexicon term is a domain word (Lexicon.words holds exactly those)
        words: dict[str, int | None] = {term: None for lexicon in lexicons for term in lexicon.words}
        user_dict = lexicon_dir / "user_dict.txt"
        if user_dict.is_file():
            for word, freq in read_user_dict(user_dict):
                words[word] = freq
        self.words_ = tuple(sorted(words.items(), key=lambda kv: kv[0]))
        self.words_key_ = words_key(self.words_)
        self.spoken_ = spoken_lexicon() if self.spoken else None  # frozen with the model, as words_
        self.candidates_ = candidate_markers(lexicon_dir) if (lexicon_dir / f"{CANDIDATES_LEXICON}.txt").is_file() else ()
        return self

    def warm_up(self):
        """Build the tokenizer now (at load or server start), not on the first request; read the dictionary
        the sound matcher reads for one text in twenty too (0.2 s)."""
        self.segment("打开空调")
        if getattr(self, "spoken_", None) is not None:
            strip_disfluencies("恐调开一下", self.spoken_)
        return self

    def segment(self, text: str) -> tuple[str, ...]:
        return self.segment_all([text])[0]

    def segment_all(self, texts: list[str]) -> list[tuple[str, ...]]:
        """The tokens of each text: jieba's with the domain words, white space dropped."""
        if self.hmm:
            lcut = functools.partial(domain_tokenizer(self.words_, self.words_key_).lcut, HMM=True)
        else:
            lcut = domain_cut(self.words_, self.words_key_).lcut
        return [_without_space(lcut(text), text) for text in texts]

    def utterance(self, item) -> Utterance:
        return self._build([item])[0]

    def _build(self, items: list) -> list[Utterance]:
        """The utterances of raw inputs: each text normalised, its amounts in digits read as said (``amounts_as_said``)
        and stripped of disfluencies, then every text segmented (one cut after another: the cutter's tables stay in
        cache, ~0.5 us a row in a batch), then each matched with the lexicons (``annotate``)."""
        spoken, candidates = self.spoken_, self.candidates_
        texts, rest = [], []
        for item in items:
            query, context, endpoint = as_fields(item)
            normalised = amounts_as_said(normalise(query))  # 8点 and 八点 are one word to every feature
            texts.append(normalised if spoken is None else strip_disfluencies(normalised, spoken))
            rest.append((context_state(context, candidates), endpoint, parse_signals(item)))
        annotate = self.annotate
        return [annotate(tokens, state, endpoint, text, parse)
                for tokens, text, (state, endpoint, parse) in zip(self.segment_all(texts), texts, rest)]

    def annotate(self, tokens: tuple[str, ...], context: str = "none", endpoint: str | None = None,
                 text: str | None = None, parse: tuple[str, ...] = ()) -> Utterance:
        """The utterance of already segmented, normalised text (a whole query, or a subrequest's tokens)."""
        text = "".join(tokens) if text is None else text
        return Utterance(text, tokens, context, endpoint, self.lexicons_.match(tokens, text), parse)

    def utterances(self, X) -> list[Utterance]:
        """``transform`` without scikit-learn's output wrapper: the per-query inference path (an
        ``Utterance`` passes through, the raw inputs are built together)."""
        out = list(X)
        raw = [i for i, x in enumerate(out) if not isinstance(x, Utterance)]
        if raw:  # the router routes the pipeline's utterances: nothing to build
            for i, u in zip(raw, self._build([out[i] for i in raw])):
                out[i] = u
        return out

    def transform(self, X):
        return self.utterances(X)
