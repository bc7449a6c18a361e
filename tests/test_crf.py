"""The automation tagger's two decoders (crfsuite for a few texts, numpy for a batch: models/automation/crf.py)
against their definition, python-crfsuite's Tagger over the ItemSequence the CRF is trained on (the names of
char_attributes): the same tags on every bundled text, the same marginals within 1e-9, the same tie-breaking."""

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
from fastslow.models.automation.parser import attribute_ids, surface_of

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


def _crfsuite(tagger):
    crf = pycrfsuite.Tagger()
    crf.open_inmemory(tagger.crf_.data)
    return crf


def test_both_decoders_give_crfsuites_tags_and_marginals_on_every_bundled_text(model, texts):
    """The numpy batch and crfsuite's tagging of single texts, each from char_attributes, against pycrfsuite's
    own Tagger on the ItemSequence the CRF is trained on: the same tags, the same marginals within 1e-9."""
    tagger = model.automation.tagger_
    crf = _crfsuite(tagger)
    assert len(texts) >= tagger.NUMPY_BATCH
    tags, marginals = tagger.predict_marginals(texts + [""])
    assert tags[-1] == [] and marginals[-1] == []
    assert tagger.predict(texts) == tags[:-1]
    few = texts[:: max(1, len(texts) // 300)]
    single = [tagger.predict_marginals([text]) for text in few]
    worst = 0.0
    for text, got, probs in zip(texts, tags, marginals):
        want = crf.tag(tagger.item_sequence(text))
        assert got == want, text
        worst = max(worst, max(abs(crf.marginal(tag, i) - p) for i, (tag, p) in enumerate(zip(want, probs))))
    for text, ((got,), (probs,)) in zip(few, single):
        want = crf.tag(tagger.item_sequence(text))
        assert got == want, text
        worst = max(worst, max(abs(crf.marginal(tag, i) - p) for i, (tag, p) in enumerate(zip(want, probs))))
    assert worst <= 1e-9


def test_jieba_token_attributes_reach_both_decoders(model):
    """With tokens (use_tokens), tp= and t= attributes are made, and both decoders tag as crfsuite does on the
    ItemSequence with them, tokens that stop matching the text halfway included."""
    tagger = model.automation.tagger_
    crf = _crfsuite(tagger)
    texts = EDGE_TEXTS * 4
    tokens = [tuple(t[i:i + 2] for i in range(0, len(t), 2))[:3] + ("不在文中",) for t in texts]
    names = {a for row in tagger.item_sequence(texts[0], tokens[0]).items() for a in row}
    assert any(a.startswith("tp=") for a in names)
    want = [crf.tag(tagger.item_sequence(t, tok)) for t, tok in zip(texts, tokens)]
    assert tagger.predict(texts, tokens) == want
    assert [tagger.predict([t], [tok])[0] for t, tok in zip(texts, tokens)] == want


def test_a_batchs_texts_are_tagged_as_each_alone(model, texts):
    """A batch is read a column at a time over all its texts: each text gets the tags crfsuite gives it alone,
    whatever its neighbours (a duration before a 后, a text opening with a clause end, a trigger cut in two)."""
    tagger = model.automation.tagger_
    crf = _crfsuite(tagger)
    edges = ["打开空调五分钟", "后关掉", "，到家时，", "上车", "时打开", "，", "a，b，c，d，e，f", "下雨就关窗，天晴就开窗"]
    batch = edges * 4 + edges[::-1] * 4
    assert tagger.predict(batch) == [crf.tag(tagger.item_sequence(text)) for text in batch]


def test_state_scores_add_the_weights_in_crfsuites_order_to_the_bit(model):
    tagger = model.automation.tagger_
    crf = tagger.crf_
    texts = EDGE_TEXTS * 2
    total = sum(map(len, texts))
    ids, where = attribute_ids(tagger.attributes(texts), total, crf)
    scores = crf.state_scores(ids, where, total)
    expected = np.zeros_like(scores)
    for i, w in zip(ids.tolist(), where.tolist()):
        if i >= 0:
            expected[w] = expected[w] + crf.state[i]  # one attribute after the other, from 0, as crfsuite does
    assert np.array_equal(scores, expected)


def _ids_by_character(ids: np.ndarray, where: np.ndarray, total: int) -> list[list[int]]:
    found = [[] for _ in range(total)]
    for i, w in zip(ids.tolist(), where.tolist()):
        if i >= 0:
            found[w].append(i)
    return found


def _item_sequence_ids(tagger, text: str, tokens=None) -> list[list[int]]:
    """Per character of ``text``, the ids of the attributes of the ItemSequence the CRF is trained on (for
    ``text`` alone) that the CRF knows, in their order."""
    known = {name: i for i, name in enumerate(tagger.crf_.attributes)}
    return [[known[name] for name in item if name in known] for item in tagger.item_sequence(text, tokens).items()]


def test_a_batchs_attribute_ids_are_those_of_each_texts_item_sequence(model, texts):
    """The ids attribute_ids finds for a batch (its texts laid out as one string, the n-grams read as numbers)
    are, per character, those of the attributes crfsuite's ItemSequence of its text alone holds, in order:
    empty and one-character texts, Latin letters and digits, pads and line breaks inside a text, a long text."""
    tagger = model.automation.tagger_
    varied = ["", "a", "打", "", "把音量调到30%", "Wi-Fi开一下", "ΑΣ ΣΑΣ", "İstanbul导航", "\x02打开\x03空调\n",
              "，到家时，", "3点半以后如果下雨就关窗然后播放音乐，" * 40, "9", "上车时打开空调五分钟后关掉", "后"]
    batch = varied + texts[:: max(1, len(texts) // 400)] + varied[::-1]
    total = sum(map(len, batch))
    got = _ids_by_character(*attribute_ids(tagger.attributes(batch), total, tagger.crf_), total)
    assert got == [ids for text in batch for ids in _item_sequence_ids(tagger, text)]
    assert sum(map(len, got)) > 10 * total  # most of the n-grams, marks and looks are known


def test_attribute_ids_of_texts_with_jieba_tokens_are_those_of_their_item_sequences(model):
    tagger = model.automation.tagger_
    batch = EDGE_TEXTS + ["", "打开空调"]
    tokens = [tuple(t[i:i + 2] for i in range(0, len(t), 2))[:3] + ("不在文中",) for t in batch]
    total = sum(map(len, batch))
    got = _ids_by_character(*attribute_ids(tagger.attributes(batch, tokens), total, tagger.crf_), total)
    assert got == [ids for text, tok in zip(batch, tokens) for ids in _item_sequence_ids(tagger, text, tok)]


def test_the_model_file_reads_as_crfsuite_dumps_it(model):
    crf = model.automation.tagger_.crf_
    tagger = pycrfsuite.Tagger()
    tagger.open_inmemory(crf.data)
    info = tagger.info()
    assert list(crf.labels) == tagger.labels()
    assert {a: str(i) for i, a in enumerate(crf.attributes)} == info.attributes
    label = {name: k for k, name in enumerate(crf.labels)}
    attribute = {name: k for k, name in enumerate(crf.attributes)}
    # the dump prints six decimals: the file holds the doubles themselves
    assert all(abs(crf.state[attribute[a], label[y]] - w) <= 5e-7 for (a, y), w in info.state_features.items())
    assert all(abs(crf.transition[label[a], label[b]] - w) <= 5e-7 for (a, b), w in info.transitions.items())
    assert np.count_nonzero(crf.state) <= len(info.state_features)
    with pytest.raises(ValueError, match="not a crfsuite"):
        CRFModel.from_bytes(b"\0" * 64)


def test_the_crf_pickles_as_its_model_file_and_tags_alike_when_loaded(model):
    tagger = model.automation.tagger_
    copy = pickle.loads(pickle.dumps(tagger))
    assert copy.crf_.data == tagger.crf_.data
    assert len(pickle.dumps(tagger.crf_)) < len(tagger.crf_.data) + 1000  # the file, not the arrays
    for texts in (EDGE_TEXTS, EDGE_TEXTS * 5):
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
