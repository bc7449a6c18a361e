"""One walk over parsed JSON values (``fastslow.data.io.bad_json_value``) finds what no record can hold: a
lone UTF-16 surrogate in a string or a field name, and a number JSON cannot write; the batch readers,
the validator and the server all name it through it."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastslow.data.io import NAME, NUMBER, SURROGATE, BadValue, bad_json_value, bad_value_error, surrogate_error

CLEAN = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(alphabet=st.characters(blacklist_categories=("Cs",))),
                     lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=5),
                                       inner, max_size=4), max_leaves=20)


@given(CLEAN)
def test_every_value_json_can_write_as_utf8_is_clean(value):
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")  # the definition holds
    assert bad_json_value(value) is None


@given(CLEAN, st.sampled_from([math.nan, math.inf, -math.inf, "a\ud800", "\udfff"]))
def test_a_bad_value_put_anywhere_is_found_and_json_refuses_it(value, bad):
    holder = {"ok": value, "deep": [value, {"x": bad}]}
    found = bad_json_value(holder)
    assert found is not None
    with pytest.raises((ValueError, UnicodeEncodeError)):
        json.dumps(holder, ensure_ascii=False, allow_nan=False).encode("utf-8")


@pytest.mark.parametrize("value, expected", [
    ({"id": "a\ud800b"}, BadValue("id", SURROGATE, "\\ud800")),
    ({"context": [{"role": "user", "text": "\udfff"}]}, BadValue("context[0].text", SURROGATE, "\\udfff")),
    ({"a": {"\udc00k": 1}}, BadValue("a", NAME, "\\udc00")),
    ({"id": math.nan}, BadValue("id", NUMBER, "NaN")),
    ({"id": [1, 2.5, -math.inf]}, BadValue("id[2]", NUMBER, "-Infinity")),
    ({"x": float("1e400")}, BadValue("x", NUMBER, "Infinity")),
    ([0, "\ud800"], BadValue("[1]", SURROGATE, "\\ud800")),
    ({"first": math.nan, "then": "\ud800"}, BadValue("first", NUMBER, "NaN")),  # the first in the value's order
])
def test_the_first_bad_value_is_named_by_its_path(value, expected):
    assert bad_json_value(value) == expected


@pytest.mark.parametrize("bad, top, expected", [
    (BadValue("context[0].text", SURROGATE, "\\ud83d"), "row", ("context[0].text", "a lone surrogate (\\ud83d) is not Unicode text")),
    (BadValue("", NAME, "\\ud800"), "row", ("a field name", "a lone surrogate (\\ud800) is not Unicode text")),
    (BadValue("[3]", SURROGATE, "\\ud800"), "row", ("row[3]", "a lone surrogate (\\ud800) is not Unicode text")),
    (BadValue("", NUMBER, "NaN"), "body", ("body", "NaN is not valid JSON")),
    (BadValue("id", NUMBER, "-Infinity"), "row", ("id", "-Infinity is not valid JSON")),
])
def test_a_bad_value_is_said_as_rows_error_records_say_it(bad, top, expected):
    assert bad_value_error(bad, top) == expected


def test_a_row_is_walked_only_when_its_text_escapes_a_surrogate():
    text = '{"query": "x", "id": "\\ud800"}'
    assert surrogate_error(text, json.loads(text)) == "id: a lone surrogate (\\ud800) is not Unicode text"
    assert surrogate_error('{"query": "\\u4e00"}', {"query": "\u4e00"}) is None
    assert surrogate_error('{"query": "x"}', {"query": "x", "id": math.nan}) is None  # no escape: the validator's job
