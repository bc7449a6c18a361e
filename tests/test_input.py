"""Bad input gets a clear error naming the row or field, and costs no other row."""

import io
import json

import pytest

from fastslow.models.record import InputError, validate_input
from fastslow.data.io import InputFileError, detect_format, read_csv, read_jsonl


@pytest.mark.parametrize("raw, field", [
    ({"query": ""}, "query"),
    ({"query": "   \t "}, "query"),
    ({"id": 1}, "query"),
    ({"query": None}, "query"),
    ({"query": 42}, "query"),
    ({"query": ["开空调"]}, "query"),
    ({"query": "开" * 10_000}, "query"),
    ({"query": "开空调", "id": {"x": 1}}, "id"),
    ({"query": "开空调", "id": True}, "id"),
    ({"query": "开空调", "endpoint": "moon"}, "endpoint"),
    ({"query": "开空调", "context": "上一轮"}, "context"),
    ({"query": "开空调", "context": [{"role": "bot", "text": "x"}]}, "context[0].role"),
    ({"query": "开空调", "context": [{"role": "assistant", "system": "medium", "text": "x"}]}, "context[0].system"),
    ({"query": "开空调", "context": [{"role": "user", "text": 3}]}, "context[0].text"),
    ({"query": "开空调", "existing_tasks": "x"}, "existing_tasks"),
    ("开空调", "row"),
])
def test_invalid_inputs_name_the_field(raw, field):
    with pytest.raises(InputError) as err:
        validate_input(raw)
    assert err.value.field == field
    assert str(err.value).startswith(field)


def test_valid_input_is_cleaned_and_ids_pass_through():
    item = validate_input({"query": "开空调", "id": 7, "extra": "kept out", "endpoint": "car"})
    assert item == {"id": 7, "query": "开空调", "context": [], "endpoint": "car", "existing_tasks": []}


def test_jsonl_reader_reports_broken_and_non_utf8_lines_and_keeps_the_rest():
    data = b'{"query": "a"}\n{broken\n\xff\xfe\n\n{"query": "b"}\n'
    rows = list(read_jsonl(io.BytesIO(data)))
    assert [line for line, _, _ in rows] == [1, 2, 3, 5]
    assert rows[0][1] == {"query": "a"} and rows[3][1] == {"query": "b"}
    assert "line 2: broken JSON" in rows[1][2]
    assert "line 3: not valid UTF-8" in rows[2][2]


def test_csv_reader_parses_context_json_and_reports_bad_rows():
    ctx = json.dumps([{"role": "assistant", "system": "slow", "text": "要开吗？"}], ensure_ascii=False)
    text = ('id,query,context\n1,开空调,\n2,好的,"' + ctx.replace('"', '""') + '"\n3,x,{broken\n4,,\n').encode()
    rows = list(read_csv(io.BytesIO(text + b"5,\xff\xfe,\n")))
    assert rows[0][1] == {"id": "1", "query": "开空调", "context": None}
    assert rows[1][1]["context"][0]["system"] == "slow"
    assert rows[2][1] is None and "row 4: context: broken JSON" in rows[2][2]
    assert rows[3][1]["query"] == ""
    assert rows[4][1] is None and "row 6: not valid UTF-8" in rows[4][2]


def test_csv_without_query_column_is_a_file_error():
    with pytest.raises(InputFileError, match="no 'query' column"):
        list(read_csv(io.BytesIO(b"text,id\nabc,1\n")))


def test_format_comes_from_the_extension():
    assert detect_format("logs/a.jsonl") == "jsonl"
    assert detect_format("a.CSV") == "csv"
    assert detect_format("a.txt", "csv") == "csv"
    with pytest.raises(InputFileError, match="cannot tell the format"):
        detect_format("a.txt")
