"""Knowledge as lexicons (features/references.py, lexicons/chains, hubs, selectors, device_descriptions,
generic_targets, builtin_functions): each file changes the decision it exists for, and an edited file
changes it back."""

from __future__ import annotations

import dataclasses

import pytest

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.features.lexicon import LEXICON_DIR, Lexicon
from fastslow.features.references import EntityReferences
from fastslow.features.text import Segmenter
from fastslow.models.automation.rules import builtin_by_class, is_builtin


@pytest.fixture(scope="module")
def segmenter():
    return Segmenter(hmm=False, spoken=True).fit()


def fired(extractor, segmenter, query, context=None) -> set[str]:
    names = extractor.get_feature_names_out()
    u = segmenter.utterance({"query": query, "context": context or []})
    return {names[c].removeprefix("ref:") for c in extractor.row(u)}


def without(tmp_path, name: str, *terms: str):
    """A copy of lexicon ``name`` without the lines of ``terms``."""
    lines = (LEXICON_DIR / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    path = tmp_path / f"{name}.txt"
    path.write_text("\n".join(l for l in lines if l.split("\t")[0] not in terms) + "\n", encoding="utf-8")
    return path


def test_a_chain_without_a_selector_has_several_candidates(segmenter, tmp_path):
    refs = EntityReferences().fit()
    assert fired(refs, segmenter, "去星巴克") == {"chain&no_selector"}
    assert fired(refs, segmenter, "导航去最近的星巴克") == {"chain&selector"}
    # selectors.txt decides the contrast: without 最近的 the selector is gone
    no_selector = EntityReferences(selectors=without(tmp_path, "selectors", "最近的", "最近")).fit()
    assert fired(no_selector, segmenter, "导航去最近的星巴克") == {"chain&no_selector"}
    # chains.txt decides the entity: without 星巴克 nothing fires
    assert fired(EntityReferences(chains=without(tmp_path, "chains", "星巴克")).fit(), segmenter, "去星巴克") == set()


def test_a_city_with_several_airports_named_by_its_hub_word_has_several_candidates(segmenter, tmp_path):
    refs = EntityReferences().fit()
    assert fired(refs, segmenter, "送我去上海的机场") == {"hub_city&generic_hub"}
    assert fired(refs, segmenter, "导航去虹桥机场") == {"hub&named_or_selector"}
    edited = EntityReferences(hubs=without(tmp_path, "hubs", "上海")).fit()
    assert fired(edited, segmenter, "送我去上海的机场") == set()


def test_a_description_that_maps_to_one_device_is_recognised(segmenter, tmp_path):
    refs = EntityReferences().fit()
    assert {"described_device", "described_device&no_device"} <= fired(refs, segmenter, "车外那个能折起来的镜子收一下")
    edited = EntityReferences(descriptions=without(tmp_path, "device_descriptions", "能折起来的镜子", "折…镜子",
                                                   "车外…镜子")).fit()
    assert "described_device" not in fired(edited, segmenter, "车外那个能折起来的镜子收一下")


@pytest.mark.parametrize("query, kind", [
    ("把那个关了", "demonstrative&unresolved"),
    ("打开那个", "demonstrative&unresolved"),
    ("那个灯开一下", "demonstrative&generic_target"),
    ("打开那个空调", "demonstrative&device"),
])
def test_a_demonstrative_with_nothing_to_resolve_it(segmenter, query, kind):
    assert fired(EntityReferences().fit(), segmenter, query) == {kind}


def test_a_hesitation_is_no_demonstrative_and_context_resolves_one(segmenter, tmp_path):
    refs = EntityReferences().fit()
    assert fired(refs, segmenter, "那个，打开空调") == set()
    assert fired(refs, segmenter, "那个打开空调") == set()
    earlier = [{"role": "user", "text": "打开阅读灯"}, {"role": "assistant", "system": "fast", "text": "已打开"}]
    assert fired(refs, segmenter, "把那个关了", earlier) == {"demonstrative&context"}
    # generic_targets.txt decides that 灯 has several instances: without it 灯 reads as one device
    edited = EntityReferences(generic_targets=without(tmp_path, "generic_targets", "灯")).fit()
    assert fired(edited, segmenter, "那个灯开一下") == {"demonstrative&device"}


# the automation spec's 条件负例 are examples of a class: new phrasings of the class are built-in too
@pytest.mark.parametrize("condition, actions", [
    ("变道的时候", ["打开盲区监测"]),           # driver assistance
    ("夜里会车时", ["自动切换远近光"]),         # lighting
    ("人走开以后", ["自动落锁"]),               # locks
    ("疲劳驾驶的时候", ["提醒我"]),             # a safety warning the car gives itself
    ("没系安全带时", ["警告我"]),
])
def test_built_in_vehicle_behaviours_phrased_anew_are_not_user_tasks(condition, actions):
    assert is_builtin(condition, actions, load_automation_lexicons())


@pytest.mark.parametrize("condition, actions", [
    ("上车时", ["打开空调"]),
    ("电量低于20%时", ["提醒我充电"]),
    ("犯困的时候", ["打开车窗"]),
])
def test_user_automations_stay_user_tasks(condition, actions):
    assert not is_builtin(condition, actions, load_automation_lexicons())


def test_the_builtin_functions_lexicon_decides_the_class():
    lex = load_automation_lexicons()
    assert builtin_by_class("变道的时候", ["打开盲区监测"], lex)
    functions = lex.builtin_functions
    edited = dataclasses.replace(functions, category={t: c for t, c in functions.category.items() if "盲区" not in t})
    edited = type(functions).build("builtin_functions", list(edited.category.items()))
    assert not builtin_by_class("变道的时候", ["打开盲区监测"], dataclasses.replace(lex, builtin_functions=edited))
    assert isinstance(EntityReferences().fit().chains_, Lexicon)


def test_a_hotel_word_is_no_branch_selector(segmenter):
    """店 inside 酒店 picked no branch: 导航去汉庭酒店 has as many candidates as 导航去汉庭."""
    refs = EntityReferences().fit()
    assert fired(refs, segmenter, "导航去汉庭酒店") == {"chain&no_selector"}
    assert fired(refs, segmenter, "导航去最近的汉庭酒店") == {"chain&selector"}


def test_names_many_institutions_share_are_several_candidates(segmenter):
    refs = EntityReferences().fit()
    assert fired(refs, segmenter, "导航去人民医院") == {"chain&no_selector"}
    assert fired(refs, segmenter, "去离我最近的人民医院") == {"chain&selector"}


def test_a_city_and_its_hub_word_said_as_one_word_has_several_candidates(segmenter):
    """jieba has 北京机场 and 北京火车站 as words; the full name of one airport is one of them."""
    refs = EntityReferences().fit()
    assert fired(refs, segmenter, "导航去北京机场") == {"hub_city&generic_hub"}
    assert fired(refs, segmenter, "去北京火车站") == {"hub_city&generic_hub"}
    assert fired(refs, segmenter, "导航到北京大兴国际机场") == {"hub&named_or_selector"}


@pytest.mark.parametrize("query", ["仪表台上往玻璃上打字的那个关掉", "那个能自己扫地的机器开一下",
                                   "厨房里烧水的那个给我打开"])
def test_a_demonstrative_with_a_description_is_described_not_unresolved(segmenter, query):
    refs = EntityReferences().fit()
    assert "demonstrative&described" in fired(refs, segmenter, query)
    assert "demonstrative&unresolved" not in fired(refs, segmenter, query)


@pytest.mark.parametrize("query,kind", [("把那个关了", "demonstrative&unresolved"),
                                        ("那个车窗开一下", "demonstrative&generic_target"),
                                        ("那个空调开到二十三度", "demonstrative&device")])
def test_a_demonstrative_without_a_description_keeps_its_reading(segmenter, query, kind):
    """车窗 is a device a car has several of (generic_targets.txt); 空调 is one."""
    assert fired(EntityReferences().fit(), segmenter, query) == {kind}


@pytest.mark.parametrize("query, term", [("头顶那块能开的玻璃推开", "头顶…玻璃"),
                                         ("那个自己跟着前车走的功能关掉", "跟着前车走"),
                                         ("浴室里烧热水的那个打开", "烧…热水"),
                                         ("导航里那个声音小一点", "导航里…声音")])
def test_descriptions_of_car_and_home_devices_map_to_one(segmenter, tmp_path, query, term):
    """device_descriptions.txt names devices by their look or what they do; without its line the
    description is no longer recognised."""
    assert "described_device" in fired(EntityReferences().fit(), segmenter, query)
    edited = EntityReferences(descriptions=str(without(tmp_path, "device_descriptions", term))).fit()
    assert "described_device" not in fired(edited, segmenter, query)
