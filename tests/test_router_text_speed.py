"""The router's and the text layer's rewritten steps give what their plain definitions give, on every
bundled routing query (no timings are asserted; see benchmarks/)."""

from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROUTING_FILES, bundled_queries
from fastslow.features.extractors import FusedCharTfidf, FusedTfidf, char_ngrams
from fastslow.features.split import join_actionless, pieces_between
from fastslow.models.routing.splitter import command_runs, split_subrequests

GENERATED_FILE = "data/train/generated.jsonl"


def bundled_routing_queries() -> list[str]:
    """The bundled routing queries, the generated training rows too."""
    return bundled_queries((*ROUTING_FILES, GENERATED_FILE))


def plain_split_subrequests(tokens, lexicon):
    """``split_subrequests`` as it was written before its set tests: a test per token in Python, and the
    dependency check after the pieces are cut."""
    whole = [(0, len(tokens))]
    cuts = lexicon.cuts
    if cuts.isdisjoint(tokens):
        if lexicon.controls.isdisjoint(tokens):
            return whole
        pieces = command_runs(tokens, 0, len(tokens), lexicon)
        if len(pieces) < 2:
            return whole
    else:
        pieces = pieces_between(len(tokens), ((i, i + 1) for i, t in enumerate(tokens) if t in cuts))
        if lexicon.controls:
            pieces = [cut for a, b in pieces for cut in command_runs(tokens, a, b, lexicon)]
    if any(t in lexicon.dependency or t in lexicon.triggers or t.endswith(lexicon.trigger_suffixes)
           for t in tokens):
        return whole
    if not lexicon.corrections.isdisjoint(tokens):
        last = max(i for i, t in enumerate(tokens) if t in lexicon.corrections)
        pieces = [(a, b) for a, b in pieces if a > last]
    if len(pieces) < 2:
        return whole
    merged = join_actionless(pieces, [any(t in lexicon.actions for t in tokens[a:b]) for a, b in pieces])
    return merged if len(merged) >= 2 else whole


@pytest.fixture(scope="module")
def utterances(model):
    return model.router.utterances(bundled_routing_queries())


def test_split_subrequests_is_its_plain_definition_on_every_bundled_query(model, utterances):
    lexicon = model.splitter
    split = [split_subrequests(u.tokens, lexicon) for u in utterances]
    assert split == [plain_split_subrequests(u.tokens, lexicon) for u in utterances]
    assert sum(len(spans) > 1 for spans in split) > 50  # the bundled queries do split


def assert_same_entries(got, want):
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_the_routers_char_block_batches_from_the_texts_as_from_their_grams(model, utterances):
    """``FusedCharTfidf.batch_texts`` against ``FusedTfidf.batch`` of the texts' ``char_ngrams`` (the definition),
    bit for bit, with the router's own vocabulary, on every bundled query (in batches, and as one)."""
    fused, analyse, field_name = model.router._fused()[0][0]
    assert isinstance(fused, FusedCharTfidf) and field_name == "text"
    texts = [u.text for u in utterances]
    for batch in (texts[:512], texts[512:1500], texts):
        assert_same_entries(fused.batch_texts(batch), fused.batch([analyse(t) for t in batch]))


ALPHABET = ["a", "b", "空", "调", "开", " ", "，", "1", "Z", "\U0001F600", "\ud800"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=10), max_size=7),
       st.sets(st.text(alphabet=ALPHABET, min_size=1, max_size=3), max_size=12),
       st.sampled_from([(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 3)]), st.booleans(), st.integers(0, 4))
def test_char_tfidf_from_code_points_is_the_batch_of_char_ngrams(texts, grams, ngram_range, sublinear, offset):
    """Any texts (empty ones, a character outside the BMP, a lone surrogate), any vocabulary (grams of three
    characters, which ``char_ngrams`` up to 2 never gives), sublinear tf or raw counts, repeated grams."""
    vocabulary = {g: i for i, g in enumerate(sorted(grams))}
    idf = [1.0 + i / 7 for i in range(len(vocabulary))]
    args = (vocabulary, idf, sublinear, offset, len(idf) + offset + 2)
    want = FusedTfidf(*args).batch([char_ngrams(t, *ngram_range) for t in texts])
    fused = FusedCharTfidf(*args, *ngram_range)
    assert_same_entries(fused.batch_texts(texts), want)
    fused.KEY_BITS = 0  # no room for a document: the grams' path
    assert_same_entries(fused.batch_texts(texts), want)
    assert_same_entries(CrowdedCharTfidf(*args, *ngram_range).batch_texts(texts), want)


class CrowdedCharTfidf(FusedCharTfidf):
    SLOTS_PER_GRAM = 1  # a hash table nearly full: long runs of probes, wrapping round its end


def test_the_grams_hash_table_finds_every_vocabulary_gram_and_nothing_else():
    grams = sorted({a + b + c for a in "打开空调 a\U0001F600" for b in ["", *"开空调 "] for c in ["", *"调a"]})
    vocabulary = {g: i for i, g in enumerate(grams) if i % 3}
    for fused_type in (FusedCharTfidf, CrowdedCharTfidf):
        fused = fused_type(vocabulary, [1.0] * len(grams), True, 0, None, 1, 3)
        assert (fused.slots != fused.EMPTY).sum() == len(vocabulary) < len(fused.slots)
        codes = np.array([fused.code(g) for g in grams], dtype=np.int64)
        assert fused._columns(codes).tolist() == [vocabulary.get(g, fused.absent) for g in grams]


def test_char_tfidf_from_code_points_takes_the_grams_path_past_the_keys_room(monkeypatch):
    """A batch's keys fit beside its grams' span up to the last document (n * span < 2**KEY_BITS), in the base of
    its largest code point plus two for trigrams; past that the batch takes the grams' path."""
    texts = ["打开空调", "a\U0001F600b", "", "开 调"]
    fused = FusedCharTfidf({"开": 0, "空调": 1, "打开空": 2}, [1.0, 2.0, 3.0], True, 0, None, 1, 3)
    want = FusedTfidf(fused.vocabulary, fused.idf[:-1].tolist(), True).batch([char_ngrams(t, 1, 3) for t in texts])
    room = (len(texts) * (0x1F600 + 2) ** 3).bit_length()
    fused.KEY_BITS = room - 1
    assert_same_entries(fused.batch_texts(texts), want)
    monkeypatch.setattr(fused, "batch", None)  # not called: the keys fit
    fused.KEY_BITS = room
    assert_same_entries(fused.batch_texts(texts), want)


def test_char_tfidf_from_code_points_takes_grams_of_up_to_three_characters():
    with pytest.raises(ValueError):
        FusedCharTfidf({"abcd": 0}, [1.0], True, 0, None, 1, 4)


@pytest.mark.parametrize("ngram_range, fused_type", [((1, 2), FusedCharTfidf), ((2, 2), FusedCharTfidf),
                                                     ((1, 3), FusedTfidf)])
def test_the_router_batches_from_code_points_only_the_char_blocks_that_hold(ngram_range, fused_type):
    from types import SimpleNamespace

    from fastslow.features.extractors import CharNgrams
    from fastslow.models.routing.router import fused_tfidf

    block = CharNgrams(ngram_range=ngram_range).fit([SimpleNamespace(text=t) for t in ("打开空调", "关窗", "打开车窗")])
    assert type(fused_tfidf(block, 5, 100)) is fused_type


@settings(max_examples=1000, deadline=None)
@given(st.one_of(st.text(alphabet="，？！：；,?打开空调Ａ１ \u3000\u0301\u0327\u00e9e℃…ｶﾞ가\u1100\u1161", max_size=12), st.text(max_size=8)))
def test_nfkc_is_unicodedatas(text):
    import unicodedata

    from fastslow.features.normalise import nfkc

    assert nfkc(text) == unicodedata.normalize("NFKC", text)


def test_nfkc_is_unicodedatas_on_every_bundled_query():
    import unicodedata

    from fastslow.features.normalise import nfkc

    queries = bundled_routing_queries()
    assert sum(not unicodedata.is_normalized("NFKC", q) for q in queries) > 100  # the path that replaces marks runs
    assert [nfkc(q) for q in queries] == [unicodedata.normalize("NFKC", q) for q in queries]
