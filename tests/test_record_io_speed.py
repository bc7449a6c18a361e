"""The fast paths of building a query's texts and its record's capture entries give what their
definitions give, on every bundled text and on generated text aimed at their edges."""

import json
from functools import lru_cache
from pathlib import Path

from hypothesis import given, settings, strategies as st

from fastslow.features.normalise import _PUNCT, fold, normalise

ROOT = Path(__file__).resolve().parents[1]
FILES = ("data/dev/routing_dev.jsonl", "data/fixtures/routing_v1.jsonl", "data/train/core.jsonl",
         "data/automation/dev/automation_dev.jsonl", "data/fixtures/automation_v1.jsonl",
         "data/automation/train/core.jsonl")


@lru_cache(maxsize=1)
def bundled_texts() -> tuple[str, ...]:
    """Every query, condition and subquery of the bundled data."""
    texts = set()
    for path in FILES:
        for line in (ROOT / path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            texts.add(row["query"])
            for group in row.get("expected") or row.get("automation") or []:
                if isinstance(group, dict):
                    texts.update(t for t in [group.get("condition")] if isinstance(t, str))
                    texts.update(q.get("subquery") for q in group.get("querys") or []
                                 if isinstance(q, dict) and isinstance(q.get("subquery"), str))
    return tuple(sorted(texts))


def _fold_reference(text) -> str:
    """``fold`` as defined: ``normalise`` without any space or punctuation."""
    return "" if text is None else _PUNCT.sub("", normalise(str(text)))


def test_fold_is_its_definition_on_every_bundled_text():
    texts = bundled_texts()
    assert len(texts) > 1000
    spaced = 0
    for text in texts:
        assert fold(text) == _fold_reference(text)
        spaced += any(c.isspace() for c in text)
    assert spaced  # both paths ran
    assert fold(None) == _fold_reference(None) == ""
    assert fold(24) == _fold_reference(24) == "24"


#: what the fast path must get right: full width, cased letters (a final sigma, İ that lowers to two
#: characters), stops at the end, characters whose NFKC is or holds a space (´, ﬁ, NBSP, ideographic space)
_EDGY = st.text(alphabet="上车时打开空调ΑΣσςİIiＡａＳΣ１2，,。.．！!？?~～…´\u00a0\u3000 \t\nﬁ\u0301_-：:；;", max_size=16)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_EDGY, st.text(max_size=12), st.sampled_from(bundled_texts())))
def test_fold_is_its_definition_on_generated_text(text):
    assert fold(text) == _fold_reference(text)
