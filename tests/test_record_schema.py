"""The one record schema (``models/record.py``): the hand-written fast validator accepts exactly what the
pydantic models and their JSON Schema accept, the flat table layout and the pyfunc signature are the
models' fields, and numbers JSON cannot hold are never echoed into a record."""

from __future__ import annotations

import json
import math
import sys

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fastslow.data.io import INPUT_COLUMNS, bad_json_value
from fastslow.data.sinks import RECORD, CsvSink, JsonlSink
from fastslow.models.lifecycle.pyfunc import SIGNATURE
from fastslow.models.record import (NOT_BLANK, WHITESPACE, ErrorRecord, InputError, Record, RouteInput, error_record,
                                    record_layout, validate_input)

ROUTE_INPUT_SCHEMA = RouteInput.model_json_schema()


jsonschema.Draft202012Validator.check_schema(ROUTE_INPUT_SCHEMA)  # once: jsonschema.validate checks it every call
ROUTE_INPUT_VALIDATOR = jsonschema.Draft202012Validator(ROUTE_INPUT_SCHEMA)


def schema_accepts(raw) -> bool:
    return ROUTE_INPUT_VALIDATOR.is_valid(raw)


def model_accepts(raw) -> bool:
    try:
        RouteInput.model_validate(raw)
        return True
    except ValidationError:
        return False


def validator_field(raw) -> str | None:
    """None when ``validate_input`` accepts ``raw``, else the top-level field its error names."""
    try:
        validate_input(raw)
        return None
    except InputError as exc:
        return exc.field.split("[")[0].split(".")[0]


# texts that probe the edges: whitespace of either regex flavour, control characters, long text
TEXT = st.one_of(st.sampled_from(["", " ", "\u001f", "\u0000", "\u3000", "\ufeff", "\u0085", "打开空调", " x ",
                                  "\u200b", "a" * 1000, "a" * 1001]),
                 st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8))
# floats with a fraction (or not finite): JSON Schema cannot tell 1.0 from 1 (see the test below)
FLOAT = st.floats(allow_nan=True).filter(lambda f: not (math.isfinite(f) and f.is_integer()))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), FLOAT, TEXT)
TURN = st.fixed_dictionaries({}, optional={"role": st.sampled_from(["user", "assistant", "bot", None]),
                                           "system": st.sampled_from(["fast", "slow", None, "x"]),
                                           "text": st.one_of(TEXT, SCALAR), "extra": SCALAR})
TASK_QUERY = st.fixed_dictionaries({}, optional={"subquery": st.one_of(TEXT, SCALAR),
                                                 "intent": st.one_of(TEXT, SCALAR), "extra": SCALAR})
TASK = st.fixed_dictionaries({}, optional={"id": st.one_of(TEXT, SCALAR), "name": st.one_of(TEXT, SCALAR),
                                           "condition": SCALAR, "owner": SCALAR,
                                           "querys": st.one_of(SCALAR, st.lists(st.one_of(TASK_QUERY, SCALAR),
                                                                                max_size=2))})
INPUT = st.fixed_dictionaries({}, optional={
    "query": st.one_of(TEXT, SCALAR), "id": SCALAR,
    "context": st.one_of(SCALAR, st.lists(st.one_of(TURN, SCALAR), max_size=2)),
    "endpoint": st.one_of(st.sampled_from(["car", "speaker", "home", "tv"]), SCALAR),
    "existing_tasks": st.one_of(SCALAR, st.lists(st.one_of(TASK, SCALAR), max_size=2)),
    "unknown": SCALAR})


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(INPUT)
def test_the_fast_validator_accepts_exactly_what_the_schema_accepts(raw):
    field = validator_field(raw)
    assert (field is None) == model_accepts(raw) == schema_accepts(raw), (field, raw)
    if field is not None:  # and it names a field the models also find wrong
        try:
            RouteInput.model_validate(raw)
        except ValidationError as exc:
            assert field in {str(e["loc"][0]) for e in exc.errors()}, (field, exc.errors())


def test_an_integral_float_id_is_refused_though_json_schema_cannot_say_so():
    """JSON Schema's ``integer`` is a number without a fraction, so 1.0 is one; the record keeps ids as
    given and refuses a float id (a client sends ``1``, not ``1.0``). The one known gap between the two."""
    assert validator_field({"query": "x", "id": 1.0}) == "id" and not model_accepts({"query": "x", "id": 1.0})
    assert schema_accepts({"query": "x", "id": 1.0})


def test_blank_means_what_str_strip_removes_in_both_regex_flavours():
    assert WHITESPACE == "".join(chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace())
    for text, ok in [("\u001f", False), ("\u0085 ", False), ("\u3000", False), ("\u0000", True), ("\ufeff", True),
                     (" 开 ", True)]:
        assert (validator_field({"query": text}) is None) == ok == schema_accepts({"query": text}), repr(text)
    assert "\\s" not in NOT_BLANK  # ECMAScript's \s is another set: the pattern spells its characters out


def test_the_flat_record_layout_is_the_schemas_fields():
    assert record_layout() == RECORD.columns
    required = [name for name, f in Record.model_fields.items() if f.is_required()]
    assert [name for name, _ in RECORD.columns] == [*required, "error", "line"]
    assert [n for n in Record.model_fields if n not in required] == ["explanation"]  # only with --explain
    assert set(ErrorRecord.model_fields) <= set(RECORD.names)


def test_the_input_columns_and_the_pyfunc_signature_are_the_schemas_input_fields():
    assert tuple(RouteInput.model_fields) == INPUT_COLUMNS == (
        "query", "id", "context", "endpoint", "existing_tasks")
    inputs = SIGNATURE.inputs.to_dict()
    assert [c["name"] for c in inputs] == list(INPUT_COLUMNS)
    assert [c["name"] for c in inputs if c.get("required", True)] == ["query"]


@pytest.mark.parametrize("qid, field, shown", [(math.inf, "id", "Infinity"), (-math.inf, "id", "-Infinity"),
                                               (math.nan, "id", "NaN"), ([1.0, math.inf], "id[1]", "Infinity"),
                                               ({"a": math.nan}, "id.a", "NaN")])
def test_an_id_json_cannot_hold_is_refused_and_not_echoed(qid, field, shown):
    with pytest.raises(InputError) as exc:
        validate_input({"query": "打开空调", "id": qid})
    assert str(exc.value) == f"{field}: {shown} is not valid JSON"
    assert bad_json_value(qid).kind == "number"
    record = error_record(qid, "打开空调", str(exc.value))
    assert record == {"id": None, "query": "打开空调", "error": str(exc.value)}
    line = JsonlSink.encode([record], RECORD).decode()
    assert json.loads(line, parse_constant=pytest.fail) == record
    assert "NaN" not in line.replace(record["error"], "")
    cells = CsvSink.encode([record], RECORD).decode().splitlines()[-1].split(",")
    assert cells[:2] == ["", "打开空调"] and "Infinity" not in ",".join(cells).replace(record["error"], "")


def test_finite_ids_are_echoed_as_given():
    assert error_record(1.5, 3, "id: bad")["id"] == 1.5
    assert error_record({"a": [1, "x"]}, None, "id: bad") == {"id": {"a": [1, "x"]}, "query": None, "error": "id: bad"}


@pytest.mark.parametrize("raw, field", [({"query": "打开空调", "id": "a\ud800"}, "id"),
                                        ({"query": "打开空调", "context": [{"role": "user", "text": "\udfff"}]},
                                         "context[0].text"),
                                        ({"query": "打开空调", "existing_tasks": [{"id": "t", "name": "\ud800"}]},
                                         "existing_tasks[0].name")])
def test_a_lone_surrogate_in_any_echoed_field_is_an_input_error_and_never_echoed(raw, field):
    """Rows from a pyfunc DataFrame or a caller of ``FastslowModel.score`` reach no reader that checks
    for half a UTF-16 pair: the validator refuses it, and the error record holds nothing unencodable."""
    with pytest.raises(InputError) as caught:
        validate_input(raw)
    assert caught.value.field == field
    record = error_record(raw.get("id"), raw["query"] + "\ud800", str(caught.value))
    assert json.dumps(record, ensure_ascii=False).encode("utf-8")
    assert record["query"] == "打开空调\ufffd"
