"""Property test: whatever text it gets, the parser never raises and always returns the schema."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fastslow.models.automation.parser import AutomationParser
from fastslow.models.automation.data import load_automation_training
from fastslow.models.automation.intents import IntentTaxonomy


@pytest.fixture(scope="module")
def small_parser():
    # a quick parser (few CRF iterations): the property is about robustness, not accuracy
    train = load_automation_training()[:600]
    return AutomationParser(max_iterations=20).fit([r["query"] for r in train], train)


INTENTS = set(IntentTaxonomy.load().intents)


def assert_schema(groups):
    assert isinstance(groups, list)
    for g in groups:
        assert set(g) <= {"condition", "querys", "builtin"}
        assert g["condition"] is None or (isinstance(g["condition"], str) and g["condition"])
        assert isinstance(g["querys"], list)
        for q in g["querys"]:
            assert set(q) == {"subquery", "intent"}
            assert isinstance(q["subquery"], str) and q["subquery"]
            assert q["intent"] in INTENTS
        assert g.get("builtin", True) is True


CHINESE = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
PUNCT = st.sampled_from(list("，。！？；：、,.!?;:…—~（）()[]【】\"'“”‘’ \t\n"))
WORDS = st.sampled_from(["上车时", "打开空调", "就", "且", "或", "提醒我", "十分钟", "主驾", "自动化", "执行一次",
                         "另外", "明天八点", "HyperTask", "when I arrive", "turn on AC", "😀", "%", "20"])
MIXED = st.lists(st.one_of(WORDS, st.text(CHINESE, max_size=3), PUNCT, st.text(max_size=3)), max_size=30).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(), st.text(PUNCT, min_size=1), MIXED))
def test_any_text_gives_the_schema(small_parser, text):
    assert_schema(small_parser.parse(text))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(MIXED.filter(bool))
def test_ten_thousand_characters_give_the_schema(small_parser, text):
    long_text = (text * (10_000 // len(text) + 1))[:10_000]
    assert_schema(small_parser.parse(long_text))


def test_batches_mix_empty_odd_and_long_inputs(small_parser):
    rows = ["", "   ", "。。。", "\x00\u200b", "上车时打开空调" * 1500, None, 42, "打开空调"]
    out = small_parser.parse_many(rows)
    assert len(out) == len(rows)
    assert out[0] == out[1] == out[2] == [] and out[5] == out[6] == []
    for groups in out:
        assert_schema(groups)


@pytest.mark.parametrize("said", [
    "打开空调。导航去公司！上车时打开座椅加热，",  # many sentences in one action span: no recursion per stop
    "打开空调不对打开座椅加热空调温度不对",          # many self-corrections: each looks back to the one before
    "wifi" * 50 + "连上以后打开热点",              # a long word in letters before a condition: read back once
])
def test_a_hundred_thousand_characters_parse(small_parser, said):
    text = (said * (100_000 // len(said) + 1))[:100_000]
    assert_schema(small_parser.parse(text))
