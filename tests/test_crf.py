"""The numpy CRF scorer (models/automation/crf.py, AttributeIndex) against its definition, python-crfsuite's
Tagger over the feature strings of char_features: the same tags on every bundled text, the same marginals
within 1e-9, the same attributes in the same order, the same tie-breaking."""

from __future__ import annotations

import json
import os
import pickle
import tempfile
from pathlib import Path

import numpy as np
import pycrfsuite
import pytest

from fastslow.models.automation.crf import CRFModel
from fastslow.models.automation.parser import AttributeIndex, char_features, surface_of

ROOT = Path(__file__).resolve().parents[1]
EDGE_TEXTS = ["a", "打", "Ａ1：2%", "上车时\n打开空调", " 打 开 ", "，，，", "3点半以后如果下雨就关窗然后播放音乐",
              "明天早上八点提醒我带伞，到家后打开空调二十分钟"]


def _bundled_queries() -> list[str]:
    from fastslow.models.automation.data import (AUTOMATION_DEV_FILE, AUTOMATION_EXTRA_DEV_FILES,
                                                 AUTOMATION_FIXTURE_FILE, AUTOMATION_TRAIN_DIR)
    from fastslow.models.lifecycle.dataset import DEV_FILE, TRAIN_DIR

    paths = [*sorted(AUTOMATION_TRAIN_DIR.glob("*.jsonl")), AUTOMATION_DEV_FILE, *AUTOMATION_EXTRA_DEV_FILES,
             ROOT / "data/automation/dev/automation_spoken_dev.jsonl", AUTOMATION_FIXTURE_FILE,
             *sorted(TRAIN_DIR.glob("*.jsonl")), DEV_FILE, ROOT / "data/fixtures/routing_v1.jsonl"]
    return [json.loads(line)["query"] for path in paths
            for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def texts(model):
    """Every bundled automation and routing query as the parser reads it: the surface of the validated
    query (what the pipeline hands over) and of the raw string, with and without the parser's lexicons."""
    from fastslow.models.record import validate_input

    lex = model.automation.lexicons_
    queries = _bundled_queries()
    validated = [validate_input({"query": q}, 10000)["query"] for q in queries]
    found = {surface_of(v, lex) for v in validated} | {surface_of(q, lex) for q in queries}
    found |= {surface_of(q) for q in queries}
    return sorted(t for t in found if t) + EDGE_TEXTS


def test_numpy_tags_and_marginals_are_crfsuites_on_every_bundled_text(model, texts):
    tagger = model.automation.tagger_
    crf = tagger._tagger()
    assert len(texts) >= tagger.NUMPY_BATCH
    tags, marginals = tagger.predict_marginals(texts + [""])
    assert tags[-1] == [] and marginals[-1] == []
    assert tagger.predict(texts) == tags[:-1]
    worst = 0.0
    for text, got, probs in zip(texts, tags, marginals):
        want = crf.tag(tagger.features(text))  # every feature string: crfsuite drops the unknown ones
        assert got == want, text
        worst = max(worst, max(abs(crf.marginal(tag, i) - p) for i, (tag, p) in enumerate(zip(want, probs))))
    assert worst <= 1e-9


def test_a_small_batch_goes_through_crfsuite_and_agrees_with_the_numpy_batch(model, texts):
    tagger = model.automation.tagger_
    few = texts[:: max(1, len(texts) // 40)][: tagger.NUMPY_BATCH - 1] + [""]
    small = tagger.predict_marginals(few)
    big = tagger.predict_marginals(few * 2)
    assert big[0][: len(few)] == small[0]
    assert all(np.allclose(a, b, rtol=0, atol=1e-9) for a, b in zip(big[1], small[1]) if a)
    assert tagger.predict(["上车时打开空调"]) == [tagger._tagger().tag(tagger.features("上车时打开空调"))]


def _ids_by_character(index, texts, tokens=None):
    """Per character of ``texts`` (one list per text), the known attribute ids ``index.ids`` gives it, in order."""
    ids, where = index.ids(texts, tokens or [None] * len(texts))
    order = np.argsort(where, kind="stable")
    ids, where = ids[order], where[order]
    per_char = [[int(i) for i in ids[where == k] if i >= 0] for k in range(sum(map(len, texts)))]
    cuts = np.cumsum([0] + [len(t) for t in texts]).tolist()
    return [per_char[a:b] for a, b in zip(cuts, cuts[1:])]


def _known_features(crf, text, table, tokens=None):
    known = {a: i for i, a in enumerate(crf.attributes)}
    return [[known[a] for a in item if a in known] for item in char_features(text, table, tokens)]


def test_attribute_ids_are_the_known_feature_strings_in_their_order(model, texts):
    """Per character, the ids AttributeIndex finds are the attributes of char_features that the CRF knows,
    in the same order and as many times: what crfsuite sums."""
    tagger = model.automation.tagger_
    crf, index = tagger._crf()
    for text in texts[:: max(1, len(texts) // 1500)] + EDGE_TEXTS:
        assert _ids_by_character(index, [text]) == [_known_features(crf, text, tagger.table_)], text
    # the jieba token features (use_tokens), with tokens that stop matching the text halfway
    for text in EDGE_TEXTS:
        tokens = tuple(text[i:i + 2] for i in range(0, len(text), 2))[:3] + ("不在文中",)
        assert _ids_by_character(index, [text], [tokens]) == [_known_features(crf, text, tagger.table_, tokens)]


def test_a_batchs_attribute_ids_are_each_texts_own(model, texts):
    """ids reads a batch as one string (the texts between the n-grams' pads) and numbers the clauses over the
    batch: no term, shape, clause or look range crosses from a text to its neighbours, whatever they are
    (a duration at a text's end before a 后, a text opening with a clause end, a trigger word cut in two)."""
    tagger = model.automation.tagger_
    crf, index = tagger._crf()
    edges = ["打开空调五分钟", "后关掉", "，到家时，", "上车", "时打开", "，", "a，b，c，d，e，f", "下雨就关窗，天晴就开窗",
             "打开\ud800空调"]  # a lone surrogate: the characters are read as code points
    batch = texts[:: max(1, len(texts) // 600)] + EDGE_TEXTS + edges + edges[::-1]
    want = [_known_features(crf, text, tagger.table_) for text in batch]
    assert _ids_by_character(index, batch) == want
    tokens = [tuple(text[i:i + 2] for i in range(0, len(text), 2)) if k % 3 else None for k, text in enumerate(batch)]
    assert _ids_by_character(index, batch, tokens) == \
        [_known_features(crf, text, tagger.table_, tok) for text, tok in zip(batch, tokens)]


def test_a_term_holding_the_pads_is_refused(model):
    """ids reads the batch as one string with the n-grams' pads between the texts: a term holding one could
    match across two texts, so such a word list is refused rather than read."""
    from types import SimpleNamespace

    crf, _ = model.automation.tagger_._crf()
    table = SimpleNamespace(lists=[{"开\x03": (("B:x",), "I:x", None)}], scanner=None)
    with pytest.raises(ValueError, match="pads"):
        AttributeIndex(crf.attributes, table)


def test_state_scores_add_the_weights_in_crfsuites_order_to_the_bit(model):
    tagger = model.automation.tagger_
    crf, index = tagger._crf()
    texts = EDGE_TEXTS * 2
    ids, where = index.ids(texts, [None] * len(texts))
    total = sum(map(len, texts))
    scores = crf.state_scores(ids, where, total)
    expected = np.zeros_like(scores)
    for i, w in zip(ids.tolist(), where.tolist()):
        if i >= 0:
            expected[w] = expected[w] + crf.state[i]  # one attribute after the other, from 0, as crfsuite does
    assert np.array_equal(scores, expected)


def test_the_model_file_reads_as_crfsuite_dumps_it(model):
    tagger = model.automation.tagger_
    crf, _ = tagger._crf()
    info = tagger._tagger().info()
    assert list(crf.labels) == tagger._tagger().labels()
    assert {a: str(i) for i, a in enumerate(crf.attributes)} == info.attributes
    label = {name: k for k, name in enumerate(crf.labels)}
    attribute = {name: k for k, name in enumerate(crf.attributes)}
    # the dump prints six decimals: the file holds the doubles themselves
    assert all(abs(crf.state[attribute[a], label[y]] - w) <= 5e-7 for (a, y), w in info.state_features.items())
    assert all(abs(crf.transition[label[a], label[b]] - w) <= 5e-7 for (a, b), w in info.transitions.items())
    assert np.count_nonzero(crf.state) <= len(info.state_features)
    with pytest.raises(ValueError, match="not a crfsuite"):
        CRFModel.from_bytes(b"\0" * 64)


def test_the_crf_arrays_are_built_per_process_and_never_pickled(model):
    tagger = model.automation.tagger_
    tagger._crf()
    assert "_crf_arrays" not in tagger.__getstate__()
    copy = pickle.loads(pickle.dumps(tagger))
    assert "_crf_arrays" not in copy.__dict__  # as a tagger pickled before the arrays existed
    texts = EDGE_TEXTS * 5
    assert copy.predict_marginals(texts) == tagger.predict_marginals(texts)


def _train(sequences, labels) -> bytes:
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(sequences, labels):
        trainer.append(xseq, yseq)
    trainer.set_params({"c1": 0.0, "c2": 0.1, "max_iterations": 50, "feature.possible_transitions": True})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.crfsuite")
        trainer.train(path)
        return Path(path).read_bytes()


def test_viterbi_breaks_ties_as_crfsuite_does():
    """Labels b and c are mirror images in the data, so every path through them scores exactly alike:
    crfsuite keeps the first maximum (the lower label id) at every step and at the end; so must we."""
    sequences = [[["x"], ["y"], ["x"]], [["x"], ["y"], ["x"]], [["z"], ["z"]], [["x"], ["z"], ["y"]]]
    labels = [["b", "c", "b"], ["c", "b", "c"], ["a", "a"], ["a", "a", "a"]]
    data = _train(sequences, labels)
    crf = CRFModel.from_bytes(data)
    b, c = crf.labels.index("b"), crf.labels.index("c")
    assert np.array_equal(crf.state[:, b], crf.state[:, c])  # the tie is real
    tagger = pycrfsuite.Tagger()
    tagger.open_inmemory(data)
    ids = {a: i for i, a in enumerate(crf.attributes)}
    tests = [["x"], ["y"], ["x", "y"], ["y", "x", "y", "x"], ["x", "x", "x"], ["z", "x", "y"], ["q"], ["q", "q"]]
    scores, lengths = [], []
    for seq in tests:
        rows = np.zeros((len(seq), len(crf.labels)))
        for k, attr in enumerate(seq):
            if attr in ids:
                rows[k] = crf.state[ids[attr]]
        scores.append(rows)
        lengths.append(len(seq))
    got, probs = crf.decode(np.concatenate(scores), lengths, marginals=True)
    for seq, path, p in zip(tests, got, probs):
        want = tagger.tag([[a] for a in seq])
        assert [crf.labels[i] for i in path] == want, seq
        assert np.allclose(p, [tagger.marginal(y, i) for i, y in enumerate(want)], rtol=0, atol=1e-12)


def test_the_character_layouts_shortcuts_change_nothing(model, texts):
    """_char_layout looks for number shapes only in a text holding a numeral (each shape holds one) and finds
    the clauses with one regex: the same shape matches and clauses as every pattern and the loop over
    every character."""
    from fastslow.models.automation.parser import _CLAUSE_END, _NUMERAL, _SHAPES, _char_layout
    from fastslow.models.automation.rules import lowered

    table = model.automation.tagger_.table_
    for text in texts + ["１２点", "半小时后", "百分之五", "٣点", ",a,,b,"]:
        low = lowered(text)
        if _NUMERAL.search(low) is None:
            assert not [m for pattern, _ in _SHAPES for m in pattern.finditer(low)], text
        clause_of, clause = [], 0
        for ch in text:
            clause += ch in _CLAUSE_END
            clause_of.append(clause)
        assert _char_layout(text, table, None)[2] == clause_of, text
