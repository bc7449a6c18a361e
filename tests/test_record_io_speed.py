"""The fast paths of building a query's texts and its record's capture entries give what their
definitions give, on every bundled text and on generated text aimed at their edges."""

import hashlib
import json
from functools import lru_cache

import pytest
from hypothesis import given, settings, strategies as st

from conftest import AUTOMATION_FILES, ROUTING_FILES, bundled_rows
from fastslow.features.normalise import _PUNCT, fold, normalise
from fastslow.data.io import bad_json_value, bad_value_error
from fastslow.models.capture import candidates, policy
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


# ---- capture: a group's identity and its idempotency key

_SORTED_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
_JSON = json.JSONEncoder(ensure_ascii=False)


def _identity_reference(group: dict) -> str:
    """``normalised_group`` as defined: the JSON of the folded condition and subqueries, keys sorted."""
    return _SORTED_JSON.encode({"condition": fold(group.get("condition")),
                                "querys": [fold(q.get("subquery")) for q in group.get("querys") or []]})


def _key_reference(query_id, query: str, group: dict, occurrence: int) -> str:
    """``idempotency_key`` as defined: sha256 of the JSON of the key's source, the identity and the occurrence."""
    source = ["id", query_id] if query_id is not None else ["query", fold(query)]
    blob = _JSON.encode([*source, _identity_reference(group), occurrence])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def bundled_groups() -> tuple[tuple[str, dict], ...]:
    return tuple((row["query"], g) for row in bundled_rows(FILES)
                 for g in row.get("expected") or row.get("automation") or [] if isinstance(g, dict))


def test_identities_and_keys_are_their_definitions_on_every_bundled_group():
    groups = bundled_groups()
    assert len(groups) > 500
    for n, (query, group) in enumerate(groups):
        assert candidates.normalised_group(group) == _identity_reference(group)
        for query_id in (None, f"q-{n}", n, -n):
            assert candidates.idempotency_key(query_id, query, group, n % 3) == _key_reference(query_id, query, group, n % 3)


#: what JSON escapes or NFKC changes: quotes, a backslash, control characters, line separators (no surrogate: no input holds one)
_ODD = st.text(alphabet='上车时打开空调"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é ，,Ａ', max_size=10)
_IDS = st.one_of(st.none(), _ODD, st.integers(), st.integers(min_value=10 ** 30, max_value=10 ** 40), st.floats(),
                 st.booleans())
_GROUPS = st.fixed_dictionaries(
    {"condition": st.one_of(st.none(), st.just("default"), _ODD),
     "querys": st.lists(st.fixed_dictionaries({"subquery": st.one_of(_ODD, st.none())}), max_size=3)})


@settings(max_examples=800, deadline=None)
@given(_IDS, _ODD, _GROUPS, st.integers(min_value=0, max_value=5))
def test_identities_and_keys_are_their_definitions_on_generated_groups(query_id, query, group, occurrence):
    assert candidates.normalised_group(group) == _identity_reference(group)
    assert candidates.idempotency_key(query_id, query, group, occurrence) == \
        _key_reference(query_id, query, group, occurrence)


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


# ---- capture signals: the strict checks, with their shortcuts, accept and refuse what the checkers do

def _signals_reference(values: dict):
    """``CaptureSignals(**values)``'s verdict as the checkers alone give it: the signals, or the error message."""
    for name in policy._BOOL_FIELDS:
        if name in values and not isinstance(values[name], bool):
            return f"{name} must be true or false, got {values[name]!r}"
    if values.get("concrete_deliverable") is not None and not isinstance(values["concrete_deliverable"], bool):
        return f"concrete_deliverable must be true or false, got {values['concrete_deliverable']!r}"
    owner = values.get("owner", policy.TaskOwner.UNKNOWN)
    if isinstance(owner, bool) or not isinstance(owner, (str, policy.TaskOwner)) \
            or owner not in policy.TaskOwner._value2member_map_:
        return f"owner must be one of user, other, unknown, got {owner!r}"
    for name in policy._TASK_REF_FIELDS:
        ref = values.get(name)
        if ref is not None and (not isinstance(ref, str) or not ref.strip()):
            return f"{name} must be a non-empty task id or null, got {ref!r}"
    for name in policy._CONFIDENCE_FIELDS:
        try:
            policy._check_confidence(name, values.get(name))
        except policy.CaptureSignalError as exc:
            return str(exc)
    return {**values, "owner": policy.TaskOwner(owner)}


_ANY = st.one_of(st.booleans(), st.none(), st.integers(-2, 2), st.floats(allow_nan=True), st.sampled_from(
    ["user", "other", "unknown", "x", " ", "t1", *policy.TaskOwner]))


@settings(max_examples=1500, deadline=None)
@given(st.dictionaries(st.sampled_from(policy.CaptureSignals.field_names()), _ANY))
def test_capture_signals_accept_and_refuse_as_their_checkers(values):
    expected = _signals_reference(values)
    try:
        signals = policy.CaptureSignals(**values)
    except policy.CaptureSignalError as exc:
        assert str(exc) == expected
    else:
        assert isinstance(expected, dict)
        assert all(getattr(signals, name) == value and type(getattr(signals, name)) is type(value)
                   for name, value in expected.items())
