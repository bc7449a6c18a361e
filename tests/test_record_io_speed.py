"""The fast path of folding a text gives what its definition gives (``normalise`` without space or
punctuation), on every bundled text and on generated text aimed at its edges; a bad input value is named
as ``bad_json_value`` names it. (Idempotency keys and every other field of a record: the records snapshot.)"""

import re
from functools import lru_cache

import pytest
from hypothesis import given, settings, strategies as st

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_rows
from fastslow.features.normalise import fold, normalise
from fastslow.data.io import bad_json_value, bad_value_error
from fastslow.models.record import InputError, validate_input

FILES = (*ROUTING_FILES, *AUTOMATION_FILES)


@lru_cache(maxsize=1)
def bundled_texts() -> tuple[str, ...]:
    """Every query, condition and subquery of the bundled data."""
    texts = set()
    for row in bundled_rows(FILES):
        texts.add(row["query"])
        for group in row.get("expected") or row.get("automation") or []:
            if isinstance(group, dict):
                texts.update(t for t in [group.get("condition")] if isinstance(t, str))
                texts.update(q.get("subquery") for q in group.get("querys") or []
                             if isinstance(q, dict) and isinstance(q.get("subquery"), str))
    return tuple(sorted(texts))


def _fold_reference(text) -> str:
    """``fold`` as documented: ``normalise`` without any space or punctuation (``_`` included)."""
    return "" if text is None else re.sub(r"[\s\W_]+", "", normalise(str(text)))


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


# ---- input validation: a field's bad value is found and named as ``bad_json_value`` names it

@pytest.mark.parametrize("name, value", [
    ("id", "a\ud800"), ("id", float("nan")),
    ("context", [{"role": "user", "system": None, "text": "好\udcff"}]), ("context", [{"role": "user", "x": 1e400}]),
    ("endpoint", "car\ud800"), ("existing_tasks", [{"id": "t1", "querys": [{"subquery": "\ud83d"}]}]),
])
def test_a_bad_value_of_a_field_is_named_as_bad_json_value_names_it(name, value):
    with pytest.raises(InputError) as caught:
        validate_input({"query": "打开空调", name: value})
    field, message = bad_value_error(bad_json_value(value, name))
    assert str(caught.value) == f"{field}: {message}"


def test_rows_without_earlier_turns_have_an_empty_context():
    for context in (None, []):
        assert validate_input({"query": "打开空调", "context": context})["context"] == []
    with pytest.raises(InputError, match=r"^context: must be a list"):
        validate_input({"query": "打开空调", "context": ""})
