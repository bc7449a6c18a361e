"""The router's and the text layer's rewritten steps give what their plain definitions give, on every
bundled routing query (no timings are asserted; see benchmarks/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastslow.features.split import join_actionless, pieces_between
from fastslow.models.routing.splitter import command_runs, split_subrequests

ROOT = Path(__file__).resolve().parents[1]
ROUTING_FILES = ("data/dev/routing_dev.jsonl", "data/fixtures/routing_v1.jsonl", "data/train/core.jsonl",
                 "data/train/generated.jsonl")


def bundled_routing_queries() -> list[str]:
    return sorted({json.loads(line)["query"] for path in ROUTING_FILES
                   for line in (ROOT / path).read_text(encoding="utf-8").splitlines() if line.strip()})


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
