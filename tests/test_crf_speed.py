"""The automation tagger's fast paths against their definitions: ``tagging_features`` (the attributes crfsuite tags
a few texts from, as its UTF-8 bytes) holds the attributes of ``char_features`` that the CRF knows, in their
order, with the jieba token features too; a call with nothing to tag answers without opening the tagger."""

from __future__ import annotations

import pickle

from test_crf import EDGE_TEXTS, _bundled_queries

from fastslow.models.automation.parser import _SHAPE_CUES, _SHAPES, char_features, tagging_features
from fastslow.models.automation.rules import lowered

def _names(features):
    """``tagging_features``' attributes (crfsuite's UTF-8 bytes) as str."""
    return [[a.decode("utf-8") for a in item] for item in features]


def test_tagging_features_are_the_known_char_features_in_order(model):
    tagger = model.automation.tagger_
    known = set(tagger._crf()[0].attributes)
    for text in sorted(set(_bundled_queries()))[::5] + EDGE_TEXTS:
        full = char_features(text, tagger.table_)
        pruned = tagging_features(text, tagger.table_, None, tagger._known())
        assert all(isinstance(a, bytes) for item in pruned for a in item), text
        assert _names(pruned) == [[a for a in item if a in known] for item in full], text


def test_tagging_features_with_jieba_tokens(model):
    """The token columns (``use_tokens``), with tokens that stop matching the text halfway: tp= and t= are
    kept when the CRF knows them, as in char_features."""
    tagger = model.automation.tagger_
    keep = set(tagger._crf()[0].attributes)
    for text in EDGE_TEXTS:
        tokens = tuple(text[i:i + 2] for i in range(0, len(text), 2))[:3] + ("不在文中",)
        full = char_features(text, tagger.table_, tokens)
        pruned = tagging_features(text, tagger.table_, tokens, tagger._known())
        assert any(a.startswith("tp=") for item in full for a in item)
        assert _names(pruned) == [[a for a in item if a in keep] for item in full], text


def test_nothing_to_tag_opens_no_tagger(model):
    tagger = pickle.loads(pickle.dumps(model.automation.tagger_))  # no C tagger opened yet
    assert tagger.predict_marginals(["", ""]) == ([[], []], [[], []])
    assert tagger.predict([]) == []
    assert "_local" not in tagger.__dict__
    assert tagger.predict_marginals(["上车时打开空调", ""])[0][1] == []


def _looks_by_clause(text, table):
    """The clause-structure ranges of ``_char_layout`` as its loop over clauses finds them (the definition of its
    one-clause shortcut): per marker, ahead of its last point and behind its first point in every clause."""
    from fastslow.models.automation.parser import _CLAUSE_BREAK
    from fastslow.models.automation.rules import lowered

    points = {}
    for by_term, found in zip(table.lists, table.scanner.scan(lowered(text))):
        for a, _, term in found:
            if by_term[term][2] is not None:
                points.setdefault(by_term[term][2], []).append(a)
    breaks = [m.start() for m in _CLAUSE_BREAK.finditer(text)]
    starts = [0] + [b + 1 for b in breaks]
    ends = starts[1:] + [len(text)]
    clause_of = [sum(b <= i for b in breaks) for i in range(len(text))]
    looks = []
    for key, pts in points.items():
        first, last = {}, {}
        for pt in pts:
            cl = clause_of[pt]
            first[cl], last[cl] = min(pt, first.get(cl, pt)), max(pt, last.get(cl, pt))
        looks += [("ahead:" + key, starts[cl], pt) for cl, pt in last.items()]
        looks += [("behind:" + key, pt + 1, ends[cl]) for cl, pt in first.items()]
    return looks


def test_the_one_clause_looks_are_the_loops(model):
    from fastslow.models.automation.parser import _char_layout

    table = model.automation.tagger_.table_
    texts = sorted(set(_bundled_queries())) + EDGE_TEXTS
    assert sum("，" not in t and "," not in t for t in texts) > 1000
    for text in texts:
        assert _char_layout(text, table, None)[3] == _looks_by_clause(text, table), text


def test_every_match_of_a_shape_holds_its_cue(model):
    """_char_layout runs a number shape's pattern only on a text holding its cue (``_SHAPE_CUES``): every match
    of the shape holds it, on every bundled text and on made-up ones of each shape."""
    texts = sorted(set(_bundled_queries())) + EDGE_TEXTS + [
        "３点", "1:30", "十点半", "十二点钟", "5分钟后", "两个小时", "半个小时", "半小时", "3天", "十秒钟", "1.5秒",
        "一刻钟", "三个钟头", "50%", "百分之五十", "2.5%"]
    found = dict.fromkeys(_SHAPE_CUES, 0)
    for text in texts:
        low = lowered(text)
        for pattern, tag in _SHAPES:
            for m in pattern.finditer(low) if tag in _SHAPE_CUES else ():
                assert _SHAPE_CUES[tag].search(m.group()), (tag, m.group(), text)
                found[tag] += 1
    assert all(found.values()), found
