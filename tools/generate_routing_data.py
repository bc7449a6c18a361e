"""Seeded, deterministic generator of labelled fastslow training rows (XA4.1, data/LABELING.md).

    python tools/generate_routing_data.py --seed 13 --out data/train/generated.jsonl

The same seed always writes a byte-identical file (a seeded ``random.Random`` per reason code and per
template, file-ordered vocabularies and templates, no iteration over hashed sets, rows sorted by a
digest of their content): editing one template or vocabulary changes only the rows that use it. It needs only
the standard library and fastslow's normaliser (``features.text.normalise``).

Where things live (all plain text under ``data/generator/``, editable without reading this code):

* ``vocab/<name>.txt`` -- one entry per line, ``#`` starts a comment. An entry may have
  tab-separated fields, ``key<TAB>value``: ``{name}`` gives the last field, ``{name=t}`` draws an
  entry whose key equals the key of the entry bound as ``t``. Entries may themselves contain
  template syntax (``空调调到{temperatures}``).
  **To widen a vocabulary, add lines to its file.** Nothing else is needed.
  **To add a vocabulary**, create ``vocab/<new>.txt`` and use ``{new}`` in a template.
* ``templates.tsv`` -- one template per line: id, primary code, extra codes, endpoint choices,
  spoken-variation style, minimal-pair group, weight, query template, optional context. The
  header of that file documents the columns and the syntax (``{vocab}``, ``{vocab@tag}``,
  ``{vocab=tag}``, ``{vocab:key}``, ``[a|b|]``, ``<fragment>``, context turns ``U:/F:/S:`` joined
  by `` >> ``). **To add a template, add a line**; its rows are labelled with its code.
  Templates sharing a pair group are rendered together over the same tagged words, which
  yields the spec's minimal pairs (feeling + target vs feeling only, and so on).
* ``targets.tsv`` -- how many rows each primary code gets.
* ``spec_examples.txt`` -- the spec's example sentences, never emitted.
* Spoken variation (wake words, fillers, wrappers, particles) comes from the ``vocab`` files named
  in ``NOISE_FILES``; the probabilities are in ``STYLE_NOISE``.

After an edit, rerun and read the summary: broken templates fail with file:line messages, and a
code whose templates run out of distinct rows prints a warning (widen its vocabularies). Label
conflicts (the same query and context under two codes) are listed so that they can be fixed.

At the end any row whose query equals (after normalisation) a query of ``data/dev/*.jsonl`` or
``data/fixtures/routing_v1.jsonl`` is dropped, so held-out sets never leak into training; only
the number of dropped rows is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from fastslow.features.spoken import strip_disfluencies  # noqa: E402
from fastslow.features.text import normalise as normalise_text  # the one normaliser (fastslow installed or on the path)

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "data" / "generator"  # the vocabularies, templates and targets
VOCAB_DIR = HERE / "vocab"
TEMPLATES_FILE = HERE / "templates.tsv"
TARGETS_FILE = HERE / "targets.tsv"
SPEC_EXAMPLES_FILE = HERE / "spec_examples.txt"
REASON_CODES_FILE = ROOT / "data" / "taxonomy" / "reason_codes.tsv"
HELD_OUT_GLOBS = (("data/dev", "*.jsonl"), ("data/fixtures", "routing_v1.jsonl"))

MIN_CHARS, MAX_CHARS = 2, 40
ATTEMPTS_PER_ROW = 60
TEMPLATE_SLACK = 1.3  # a template may take up to 1.3x its weighted share before the top-up pass
ENDPOINTS = ("car", "speaker", "home", None)
CONTEXT_SEP = " >> "
ENDPOINTS_BY_DOMAIN = {"car": ("car", None), "home": ("home", "speaker", None)}
TURN_PREFIX = {"U": ("user", None), "F": ("assistant", "fast"), "S": ("assistant", "slow")}

#: Probabilities of each kind of spoken variation, per template style.
STYLE_NOISE = {
    "cmd": {"wrapper": 0.30, "particle": 0.10, "filler": 0.18, "wake": 0.10},
    "ask": {"particle": 0.12, "filler": 0.15, "wake": 0.10, "question_mark": 0.15},
    "plain": {"particle": 0.12, "filler": 0.20, "wake": 0.06},
    "none": {},
}
NOISE_FILES = {"wrapper": "wrappers", "cmd_particle": "particles_cmd", "ask_particle": "particles_ask",
               "plain_particle": "particles_plain", "filler": "fillers_start", "wake": "wake_words"}
#: A wrapper put before the command (帮我…, 我想…) needs the command to start with a verb or 把.
VERB_STARTS = ("把", "打开", "关", "开", "播放", "放", "来", "导航", "带我", "调", "切", "换", "给", "用", "找",
               "推荐", "定", "设", "让", "叫", "拨打", "呼叫", "锁", "解锁", "折叠", "展开", "收起", "启动",
               "搜", "做", "写", "整理", "建", "总结", "汇总", "查", "看看", "订", "买", "预订", "讲", "说",
               "营造", "弄", "搞", "拉", "降", "升", "播", "进入", "回", "去", "发", "打", "挂")
#: 给我… only wraps device and playback commands (给我打开空调, 给我放首歌).
DEVICE_VERB_STARTS = ("打开", "关", "开", "把", "放", "播放", "来", "调", "切", "换")
#: Which endpoints a wake word of each device (first field of wake_words.txt) is said on.
WAKE_DEVICES = {"car": ("car", None), "speaker": ("speaker", "home", None)}
#: Fillers that double as demonstratives always take a comma, so they are not read as 那个灯.
DEMONSTRATIVE_FILLERS = ("那个", "嗯那个", "哎那个")


class Retry(Exception):
    """This rendering cannot be completed (no matching or unused entry); draw again."""


class TemplateError(ValueError):
    """A broken template or vocabulary file; the message names file and line."""


# ------------------------------------------------------------------------------------- files

def read_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of non-empty, non-comment lines."""
    out = []
    for no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.rstrip("\r")
        if line.strip() and not line.lstrip().startswith("#"):
            out.append((no, line))
    return out


def read_reason_codes(path: Path = REASON_CODES_FILE) -> dict[str, str]:
    """reason code -> label, in file order."""
    codes = {}
    for _, line in read_lines(path)[1:]:  # skip the header
        code, label = line.split("\t")[:2]
        codes[code] = label
    return codes


class Vocab:
    """Lazily loaded vocabularies: name -> list of entries (tuples of fields), in file order."""

    def __init__(self, folder: Path = VOCAB_DIR):
        self.folder = folder
        self._cache: dict[str, list[tuple[str, ...]]] = {}

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.folder.glob("*.txt"))

    def __call__(self, name: str) -> list[tuple[str, ...]]:
        if name not in self._cache:
            path = self.folder / f"{name}.txt"
            if not path.exists():
                raise TemplateError(f"no vocabulary file {path}")
            entries = [tuple(f.strip() for f in line.split("\t")) for _, line in read_lines(path)]
            seen, unique = set(), []
            for e in entries:  # keep the first of duplicate lines, in file order
                if e not in seen:
                    seen.add(e)
                    unique.append(e)
            self._cache[name] = unique
        return self._cache[name]


# ---------------------------------------------------------------------------- template syntax

@dataclass(frozen=True)
class Slot:
    name: str
    literal_key: str | None = None
    key_tag: str | None = None
    bind: str | None = None
    field: int | None = None


@dataclass(frozen=True)
class Frag:
    name: str
    bind: str | None = None


@dataclass(frozen=True)
class Choice:
    options: tuple  # tuple of node sequences


_SLOT = re.compile(r"^(?P<name>[a-z0-9_]+)(?::(?P<lit>[^=@.]+))?(?:=(?P<key>\w+))?(?:@(?P<bind>\w+))?(?:\.(?P<field>\d+))?$")
_FRAG = re.compile(r"^(?P<name>[a-z0-9_]+)(?:@(?P<bind>\w+))?$")
_PARSED: dict[str, tuple] = {}


def parse(text: str) -> tuple:
    """A template string as a tuple of nodes: str, Slot, Frag, Choice (cached)."""
    if text not in _PARSED:
        nodes, end = _parse_seq(text, 0, stop="")
        if end != len(text):
            raise TemplateError(f"unbalanced ']' or '|' in {text!r}")
        _PARSED[text] = nodes
    return _PARSED[text]


def _parse_seq(text: str, i: int, stop: str) -> tuple[tuple, int]:
    nodes, buf = [], []
    while i < len(text):
        ch = text[i]
        if ch in stop:
            break
        if ch in "{<":
            close = "}" if ch == "{" else ">"
            j = text.find(close, i)
            if j < 0:
                raise TemplateError(f"missing {close!r} in {text!r}")
            body = text[i + 1:j]
            m = (_SLOT if ch == "{" else _FRAG).match(body)
            if not m:
                raise TemplateError(f"bad {ch}{body}{close} in {text!r}")
            if buf:
                nodes.append("".join(buf))
                buf = []
            if ch == "{":
                nodes.append(Slot(m["name"], m["lit"], m["key"], m["bind"],
                                  int(m["field"]) if m["field"] is not None else None))
            else:
                nodes.append(Frag(m["name"], m["bind"]))
            i = j + 1
        elif ch == "[":
            options, i = [], i + 1
            while True:
                seq, i = _parse_seq(text, i, stop="|]")
                options.append(seq)
                if i >= len(text):
                    raise TemplateError(f"missing ']' in {text!r}")
                if text[i] == "]":
                    i += 1
                    break
                i += 1  # '|'
            if buf:
                nodes.append("".join(buf))
                buf = []
            nodes.append(Choice(tuple(options)))
        elif ch in "]|" and not stop:
            raise TemplateError(f"stray {ch!r} in {text!r}")
        else:
            buf.append(ch)
            i += 1
    if buf:
        nodes.append("".join(buf))
    return tuple(nodes), i


def walk(nodes):
    """Every Slot and Frag in a node sequence, depth first."""
    for node in nodes:
        if isinstance(node, Choice):
            for option in node.options:
                yield from walk(option)
        elif isinstance(node, (Slot, Frag)):
            yield node


# ------------------------------------------------------------------------------------ templates

@dataclass
class Template:
    id: str
    code: str  # "-" for a fragment
    also: tuple[str, ...]
    endpoints: tuple
    style: str
    pair: str | None
    weight: float
    query: str
    context: str
    line: int


def load_templates(path: Path, codes: dict[str, str], vocab: Vocab) -> list[Template]:
    """Every template of ``path``, checked: known codes, endpoints, styles, vocabularies, fragments."""
    templates, errors = [], []
    for no, line in read_lines(path):
        cols = line.split("\t")
        where = f"{path.name}:{no}"
        if len(cols) not in (8, 9):
            errors.append(f"{where}: expected 8 or 9 tab-separated columns, got {len(cols)}")
            continue
        tid, code, also, endpoint, style, pair, weight, query = cols[:8]
        context = cols[8] if len(cols) == 9 else ""
        try:
            t = Template(tid, code, tuple(c for c in also.split(",") if c and c != "-"),
                         _endpoints(endpoint), style, None if pair == "-" else pair, float(weight),
                         query, context.strip(), no)
        except ValueError as exc:
            errors.append(f"{where}: {exc}")
            continue
        for c in ((t.code,) if t.code != "-" else ()) + t.also:
            if c not in codes:
                errors.append(f"{where}: unknown reason code {c!r}")
        if style not in STYLE_NOISE and not (t.code == "-" and style == "-"):
            errors.append(f"{where}: unknown style {style!r}")
        templates.append(t)
    fragments = {t.id for t in templates if t.code == "-"}
    ids = Counter(t.id for t in templates if t.code != "-")
    errors += [f"{path.name}: template id {i!r} used {n} times" for i, n in sorted(ids.items()) if n > 1]
    known_vocab = set(vocab.names())
    for t in templates:
        where = f"{path.name}:{t.line}"
        try:
            texts = [t.query] + [turn[2:] for turn in _split_turns(t.context)]
            for text in texts:
                for node in walk(parse(text)):
                    if isinstance(node, Frag) and node.name not in fragments:
                        errors.append(f"{where}: unknown fragment <{node.name}>")
                    if isinstance(node, Slot) and node.name not in known_vocab:
                        errors.append(f"{where}: no vocabulary file vocab/{node.name}.txt")
        except (TemplateError, ValueError) as exc:
            errors.append(f"{where}: {exc}")
    pairs = Counter(t.pair for t in templates if t.pair)
    errors += [f"{path.name}: pair group {p!r} has a single template" for p, n in sorted(pairs.items()) if n < 2]
    if errors:
        raise TemplateError("\n".join(errors))
    return templates


def _endpoints(spec: str) -> tuple:
    if spec.strip().startswith("by:"):
        return (spec.strip(),)  # resolved per row from a binding's key, see endpoint_for
    if spec.strip() == "*":
        return ENDPOINTS
    if spec.strip() == "-":
        return (None,)
    out = []
    for part in spec.split("|"):
        part = part.strip()
        if part == "null":
            out.append(None)
        elif part in ENDPOINTS:
            out.append(part)
        else:
            raise ValueError(f"unknown endpoint {part!r}")
    return tuple(out)


def _split_turns(context: str) -> list[str]:
    if not context:
        return []
    turns = [t.strip() for t in context.split(CONTEXT_SEP)]
    for t in turns:
        if t[:2] not in ("U:", "F:", "S:"):
            raise ValueError(f"context turn must start with U:, F: or S:, got {t!r}")
    return turns


# ------------------------------------------------------------------------------------- render

@dataclass
class Env:
    """State of one rendering: the RNG, tagged bindings (shared inside a pair) and used entries."""

    rng: random.Random
    vocab: Vocab
    fragments: dict[str, list[Template]]
    bindings: dict = field(default_factory=dict)
    used: dict = field(default_factory=dict)
    depth: int = 0


def render(text: str, env: Env) -> str:
    return "".join(_render_nodes(parse(text), env))


def _render_nodes(nodes, env: Env):
    for node in nodes:
        if isinstance(node, str):
            yield node
        elif isinstance(node, Choice):
            yield from _render_nodes(env.rng.choice(node.options), env)
        elif isinstance(node, Slot):
            yield _render_slot(node, env)
        else:
            yield _render_frag(node, env)


def _render_slot(slot: Slot, env: Env) -> str:
    if slot.bind and slot.bind in env.bindings:
        entry = env.bindings[slot.bind]
    else:
        entry = _draw(slot, env)
        if slot.bind:
            env.bindings[slot.bind] = entry
    index = slot.field if slot.field is not None else len(entry) - 1
    if index >= len(entry):
        raise TemplateError(f"{{{slot.name}}} entry {entry} has no field {index}")
    return _expand(entry[index], env)


def _draw(slot: Slot, env: Env) -> tuple[str, ...]:
    entries = env.vocab(slot.name)
    if slot.literal_key is not None:
        entries = [e for e in entries if e[0] == slot.literal_key]
    if slot.key_tag is not None and slot.key_tag in env.bindings:
        key = env.bindings[slot.key_tag]
        key = key[0] if isinstance(key, tuple) else key
        entries = [e for e in entries if e[0] == key]
    used = env.used.setdefault(slot.name, set())
    fresh = [e for e in entries if e not in used]
    if not fresh:
        raise Retry
    entry = env.rng.choice(fresh)
    used.add(entry)
    return entry


def _expand(value: str, env: Env) -> str:
    if not any(ch in value for ch in "{[<"):
        return value
    if env.depth > 5:
        raise TemplateError(f"vocabulary entries nest too deeply at {value!r}")
    env.depth += 1
    try:
        return render(value, env)
    finally:
        env.depth -= 1


def _render_frag(frag: Frag, env: Env) -> str:
    key = f"<{frag.name}>@{frag.bind}"
    if frag.bind and key in env.bindings:
        return env.bindings[key]
    used = env.used.setdefault("<>", set())  # a fragment line is used at most once per row
    options = [t for t in env.fragments[frag.name] if t.line not in used] or env.fragments[frag.name]
    chosen = env.rng.choices(options, weights=[t.weight for t in options])[0]
    used.add(chosen.line)
    outer = dict(env.bindings)
    text = _expand(chosen.query, env)
    for tag in [t for t in env.bindings if t not in outer]:  # a fragment's own tags stay inside it
        del env.bindings[tag]
    if frag.bind:
        env.bindings[key] = text
    return text


def endpoint_for(choices: tuple, env: Env, rng: random.Random) -> str | None:
    """One of the template's endpoints; ``by:t`` follows the domain key of binding t (car_…, home_…)."""
    if len(choices) == 1 and isinstance(choices[0], str) and choices[0].startswith("by:"):
        entry = env.bindings.get(choices[0][3:])
        key = entry[0] if isinstance(entry, tuple) else ""
        prefix = key.split("_")[0]
        choices = ENDPOINTS_BY_DOMAIN.get(prefix, ENDPOINTS)
    return rng.choice(choices)


# ------------------------------------------------------------------------------ spoken variation

class Speech:
    """Adds fillers, wake words, polite wrappers and particles, as a speaker would."""

    def __init__(self, vocab: Vocab):
        self.lists = {kind: [e[-1] for e in vocab(name)] for kind, name in NOISE_FILES.items()}
        self.wake = {}  # endpoint -> wake words that fit it
        for entry in vocab(NOISE_FILES["wake"]):
            device = entry[0] if len(entry) > 1 else None
            for endpoint in WAKE_DEVICES.get(device, ENDPOINTS):
                self.wake.setdefault(endpoint, []).append(entry[-1])

    def vary(self, text: str, style: str, rng: random.Random, endpoint: str | None = None) -> str:
        p = STYLE_NOISE[style]
        if rng.random() < p.get("wrapper", 0):
            text = self._wrap(text, rng)
        if rng.random() < p.get("particle", 0):
            text = self._particle(text, style, rng)
        if rng.random() < p.get("question_mark", 0) and not text.endswith(("？", "?")):
            text += "？"
        if rng.random() < p.get("filler", 0):
            filler = rng.choice(self.lists["filler"])
            text = filler + ("，" if filler in DEMONSTRATIVE_FILLERS else rng.choice(("，", "", "，"))) + text
        if rng.random() < p.get("wake", 0) and self.wake.get(endpoint):
            text = rng.choice(self.wake[endpoint]) + rng.choice(("，", "", " ")) + text
        return text

    def _wrap(self, text: str, rng: random.Random) -> str:
        fitting = [w for w in self.lists["wrapper"] if _wrapper_fits(w, text)]
        if not fitting:
            return text
        before, _, after = rng.choice(fitting).partition("…")
        return before + text + after

    def _particle(self, text: str, style: str, rng: random.Random) -> str:
        if text.endswith(("吧", "呗", "吗", "呢", "啊", "呀", "？", "?", "哈", "嘛", "谢谢", "着", "啦")):
            return text
        kind = {"cmd": "cmd_particle", "ask": "ask_particle"}.get(style, "plain_particle")
        particle = rng.choice(self.lists[kind])
        return text + ("，" + particle if len(particle) > 1 else particle)


def _wrapper_fits(wrapper: str, text: str) -> bool:
    """Keep wrappers grammatical: no 一下 twice, no 吧 after 吧, no 我想我…, no wrapping of clauses."""
    if not wrapper.startswith("…") and ("，" in text or not text.startswith(VERB_STARTS)):
        return False
    if "一下" in wrapper and (not text.startswith("把") or "一下" in text or not text.endswith(("开", "关", "掉", "上"))):
        return False
    if wrapper.endswith(("吧", "呗", "吗")) and text.endswith(("吧", "呗", "吗", "了")):
        return False
    if wrapper.startswith(("我想", "我要", "我需要")) and text.startswith(("我", "帮我", "给我")):
        return False
    if wrapper.startswith(("给我", "你给我")) and not text.startswith(DEVICE_VERB_STARTS):
        return False  # 给我发个消息 would mean "send me a message"
    if wrapper.startswith(("帮", "给我", "你帮", "你给", "麻烦帮", "请帮", "能帮")) and text.startswith(("帮", "给我", "带我")):
        return False
    return True


# ------------------------------------------------------------------------------------ generation

def normalise(text: str) -> str:
    """The held-out key of a query: the one normaliser (``features.text.normalise``), then what the router strips
    as spoken noise (wake words, fillers, tails, stutters: ``features.spoken.strip_disfluencies``), without
    punctuation or spaces: a generated row is no held-out query said with a filler or a wake word around it."""
    return "".join(c for c in strip_disfluencies(normalise_text(text)) if c.isalnum())


def held_out_queries(root: Path = ROOT) -> set[str]:
    """Normalised queries of the dev set and the frozen fixture (exclusion only; never printed)."""
    queries = set()
    for folder, pattern in HELD_OUT_GLOBS:
        for path in sorted((root / folder).glob(pattern)):
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    try:
                        query = json.loads(line).get("query")
                    except (json.JSONDecodeError, AttributeError):
                        continue
                    if isinstance(query, str):
                        queries.add(normalise(query))
    return queries


def spec_examples(path: Path = SPEC_EXAMPLES_FILE) -> set[str]:
    return {normalise(line) for _, line in read_lines(path)} if path.exists() else set()


def read_targets(path: Path, codes: dict[str, str]) -> dict[str, int]:
    targets = {}
    for no, line in read_lines(path):
        code, rows = line.split("\t")[:2]
        if code not in codes:
            raise TemplateError(f"{path.name}:{no}: unknown reason code {code!r}")
        targets[code] = int(rows)
    return targets


class Generator:
    def __init__(self, seed: int, vocab: Vocab | None = None):
        self.seed = seed
        self.streams: dict[str, random.Random] = {}  # one seeded stream per code and per template
        self.vocab = vocab or Vocab()
        self.codes = read_reason_codes()
        self.templates = load_templates(TEMPLATES_FILE, self.codes, self.vocab)
        self.targets = read_targets(TARGETS_FILE, self.codes)
        self.speech = Speech(self.vocab)
        self.blocked = spec_examples()
        self.fragments: dict[str, list[Template]] = {}
        self.by_code: dict[str, list[Template]] = {}
        self.pairs: dict[str, list[Template]] = {}
        for t in self.templates:
            if t.code == "-":
                self.fragments.setdefault(t.id, []).append(t)
                continue
            self.by_code.setdefault(t.code, []).append(t)
            if t.pair:
                self.pairs.setdefault(t.pair, []).append(t)
        self.rows: dict[str, dict] = {}  # query+context key -> row, in insertion order
        self.used: Counter = Counter()  # rows kept per template id
        self.counts: Counter = Counter()
        self.stats: Counter = Counter()
        self.conflicts: list[str] = []

    def run(self) -> list[dict]:
        """Fill every code round-robin, each template up to its weighted share, then top up."""
        self._fill_round_robin(capped=True)
        self._fill_round_robin(capped=False)
        for code in self.codes:
            if self.counts[code] < self.targets.get(code, 0):
                print(f"warning: {code}: only {self.counts[code]} of {self.targets[code]} rows "
                      f"(templates exhausted)", file=sys.stderr)
        rows = list(self.rows.values())
        # a stable order by content: an edit to one template or vocabulary changes only its own lines
        rows.sort(key=lambda r: hashlib.sha1(f"{self.seed}\x1f{r['query']}\x1f{r['source']}".encode()).hexdigest())
        return rows

    def stream(self, name: str) -> random.Random:
        """The seeded random stream of one code's template choice or of one template's rendering, so
        that editing a template or a vocabulary reshuffles only the rows that use it."""
        rng = self.streams.get(name)
        if rng is None:
            rng = self.streams[name] = random.Random(f"{self.seed}\x1f{name}")
        return rng

    def _quota(self, t: Template) -> int:
        """A template's weighted share of its code's target, with some slack."""
        templates = self.by_code[t.code]
        share = self.targets.get(t.code, 0) * t.weight / sum(x.weight for x in templates)
        return int(share * TEMPLATE_SLACK) + 1

    def _fill_round_robin(self, capped: bool) -> None:
        attempts = Counter()
        open_codes = [c for c in self.codes if self.targets.get(c, 0)]
        for code in open_codes:
            if not self.by_code.get(code):
                raise TemplateError(f"no template for {code}")
        while open_codes:
            for code in list(open_codes):
                attempts[code] += 1
                full = self.counts[code] >= self.targets[code]
                if full or attempts[code] > self.targets[code] * ATTEMPTS_PER_ROW:
                    open_codes.remove(code)
                    continue
                templates = [t for t in self.by_code[code] if not capped or self.used[t.id] < self._quota(t)]
                if not templates:
                    open_codes.remove(code)
                    continue
                chosen = self.stream(f"code:{code}").choices(templates, weights=[t.weight for t in templates])[0]
                self._render_group(chosen, capped)

    def _render_group(self, chosen: Template, capped: bool) -> None:
        """Render a template, or its whole pair group over shared tagged words."""
        members = self.pairs[chosen.pair] if chosen.pair else [chosen]
        rng = self.stream(f"template:{chosen.pair or chosen.id}")
        shared: dict = {}
        for member in members:
            if member is not chosen and capped and self.used[member.id] >= self._quota(member):
                continue
            row = self._render_row(member, shared, rng)
            if row is not None and self._add(row):
                self.used[member.id] += 1

    def _render_row(self, t: Template, shared: dict, rng: random.Random) -> dict | None:
        env = Env(rng, self.vocab, self.fragments, bindings=shared)
        try:
            context = [self._turn(turn, env) for turn in _split_turns(t.context)]
            endpoint = endpoint_for(t.endpoints, env, rng)
            query = self.speech.vary(render(t.query, env), t.style, rng, endpoint)
        except Retry:
            self.stats["retry"] += 1
            return None
        for i, turn in enumerate(context):  # a user turn belongs to the system that answered it
            if turn["role"] == "user" and i + 1 < len(context):
                turn["system"] = context[i + 1]["system"]
        if not MIN_CHARS <= len(query) <= MAX_CHARS:
            self.stats["length"] += 1
            return None
        if normalise(query) in self.blocked:
            self.stats["spec_example"] += 1
            return None
        return {"query": query, "label": self.codes[t.code], "primary_reason_code": t.code,
                "reason_codes": [t.code, *[c for c in t.also if c != t.code]],
                "endpoint": endpoint, "context": context, "source": f"gen:{t.id}"}

    def _turn(self, turn: str, env: Env) -> dict:
        role, system = TURN_PREFIX[turn[0]]
        return {"role": role, "system": system, "text": render(turn[2:], env)}

    def _add(self, row: dict) -> bool:
        code = row["primary_reason_code"]
        key = row["query"] + "\x1f" + json.dumps(row["context"], ensure_ascii=False)
        if key in self.rows:
            old = self.rows[key]
            if old["primary_reason_code"] != code and old["endpoint"] == row["endpoint"]:
                self.conflicts.append(f"{row['query']!r}: {old['source']} {old['primary_reason_code']} "
                                      f"vs {row['source']} {code}")
            self.stats["duplicate"] += 1
            return False
        if self.counts[code] >= self.targets.get(code, 0):
            return False
        self.rows[key] = row
        self.counts[code] += 1
        return True


def drop_held_out(rows: list[dict], held_out: set[str]) -> tuple[list[dict], int]:
    kept = [r for r in rows if normalise(r["query"]) not in held_out]
    return kept, len(rows) - len(kept)


def write_jsonl(rows: list[dict], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def summary(rows: list[dict], codes: dict[str, str], gen: Generator, dropped: int) -> str:
    total = len(rows)
    by_label = Counter(r["label"] for r in rows)
    by_code = Counter(r["primary_reason_code"] for r in rows)
    with_context = sum(1 for r in rows if r["context"])
    endpoints = Counter(r["endpoint"] for r in rows)
    lengths = [len(r["query"]) for r in rows]
    lines = [f"rows: {total}  with context: {with_context}  query length: {min(lengths)}-{max(lengths)}",
             "labels: " + "  ".join(f"{label} {by_label[label]} ({by_label[label] / total:.1%})"
                                   for label in dict.fromkeys(codes.values())),
             "endpoints: " + "  ".join(f"{e or 'null'} {endpoints[e]}" for e in ENDPOINTS),
             "codes:"]
    lines += [f"  {code:<30}{codes[code]:<4}{by_code[code]:>6}  {by_code[code] / total:6.1%}" for code in codes]
    lines.append(f"dropped: {dropped} held-out (dev/fixture) queries, {gen.stats['spec_example']} spec examples, "
                 f"{gen.stats['duplicate']} duplicates, {gen.stats['length']} out of {MIN_CHARS}-{MAX_CHARS} chars")
    if gen.conflicts:
        lines.append(f"label conflicts (same query and context, different code): {len(gen.conflicts)}")
        lines += [f"  {c}" for c in gen.conflicts[:20]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=13, help="random seed (same seed, same bytes)")
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "train" / "generated.jsonl")
    args = parser.parse_args(argv)
    try:
        gen = Generator(args.seed)
        rows = gen.run()
    except TemplateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows, dropped = drop_held_out(rows, held_out_queries())
    write_jsonl(rows, args.out)
    print(f"wrote {args.out}")
    print(summary(rows, gen.codes, gen, dropped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
