"""Normalisation, segmentation and the feature extractors behave as scikit-learn transformers."""

import json
import pickle
import re
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from fastslow.features import (
    ActionLexicon, AutomationParse, CharNgrams, ExplicitTarget, Connectors, ContextFeatures, Demonstratives, DeviceLexicon, EndpointFeatures,
    NumbersUnits, QuestionMarkers, SceneWords, Segmenter, SensationWords, TriggerMarkers, WhereItRuns, WordTokens,
    normalise,
)
from fastslow.features.extractors import CharGramColumns, TfidfRows, char_ngrams
from fastslow.features.lexicon import load_lexicon
from fastslow.features.normalise import chinese_punctuation, clean, spaces_as_pauses, surface
from fastslow.features.text import (
    ExactCut, RustCut, candidate_markers, context_state, cut_for, domain_cut, domain_tokenizer, parse_signals,
)

from conftest import ALL_FILES, bundled_queries

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

SLOW_QUESTION = [{"role": "assistant", "system": "slow", "text": "路面湿滑，要开启湿滑模式吗？"}]


def test_normalise_folds_width_case_spaces_and_final_stop():
    assert normalise("把温度调到 24 度。") == "把温度调到24度"
    assert normalise("ＳＵ７  支持哪些模式？") == "su7支持哪些模式?"
    assert normalise("  hey   siri  ") == "hey siri"


def test_a_space_between_chinese_characters_is_a_pause():
    """Typed or transcribed without punctuation, a space is where the speaker paused: a hesitation stays
    apart from its command and two commands stay two (the surface the automation parser reads keeps
    the old folding)."""
    assert normalise("那个 天窗关了  空调开内循环") == "那个,天窗关了,空调开内循环"
    assert normalise("空调调到 24 度") == "空调调到24度"
    assert surface("那个 天窗关了") == "那个天窗关了"
    u = Segmenter(spoken=True).fit().utterance("那个 天窗打开一半")
    assert u.text == "天窗打开一半"  # the hesitation before the pause is stripped


def test_segmenter_keeps_domain_words_whole():
    tokens = Segmenter().fit().utterance("打开主驾座椅加热").tokens
    assert "座椅加热" in tokens


@pytest.mark.parametrize("text, device", [("打开天窗", "天窗"), ("别开天窗", "天窗"), ("扫地机关了", "扫地机"),
                                          ("把油烟机关一下", "油烟机"), ("开除雾", "除雾"), ("开外循环", "外循环"),
                                          ("关内循环", "内循环")])
def test_no_word_of_jiebas_swallows_a_device_said_after_or_before_its_verb(text, device):
    for hmm in (True, False):
        assert device in Segmenter(hmm=hmm).fit().segment(text)


@pytest.fixture(scope="module")
def jieba_and_exact_cut():
    segmenter = Segmenter().fit()
    tokenizer = domain_tokenizer(segmenter.words_, segmenter.words_key_)
    return tokenizer, ExactCut(tokenizer)


@pytest.fixture(scope="module")
def rust_cut(jieba_and_exact_cut):
    return RustCut(jieba_and_exact_cut[0])


def bundled_texts() -> set[str]:
    """Every query of the bundled files, as written and normalised."""
    queries = set(bundled_queries(ALL_FILES))
    return queries | {normalise(q) for q in queries}


def test_normalise_is_clean_of_spaces_as_pauses_lower_cased_on_every_bundled_text():
    """``normalise`` and ``surface`` skip the space patterns for a text without white space: the same texts as
    the compositions they are defined by, on every bundled query and on texts with spaces, stops and full-width marks."""
    edges = ["把温度调到 24 度。", "ＳＵ７  支持哪些模式？", "  hey   siri  ", "打开空调。。 ", "关窗\t开空调", "", " ", "。"]
    for text in sorted(set(bundled_queries(ALL_FILES))) + edges:
        assert normalise(text) == clean(spaces_as_pauses(text)).lower(), text
        assert surface(text) == chinese_punctuation(clean(text)), text  # the same for the parser's text


def test_exact_cut_and_rjieba_give_jiebas_tokens_on_every_bundled_query(jieba_and_exact_cut, rust_cut):
    tokenizer, cut = jieba_and_exact_cut
    queries = bundled_texts()
    assert len(queries) > 10_000
    expected = {q: tokenizer.lcut(q, HMM=False) for q in queries}
    assert [q for q in sorted(queries) if cut.lcut(q) != expected[q]] == []
    assert [q for q in sorted(queries) if rust_cut.lcut(q) != expected[q]] == []


def test_the_segmenter_uses_rjieba_with_the_domain_words():
    segmenter = Segmenter().fit()
    assert isinstance(domain_cut(segmenter.words_, segmenter.words_key_), RustCut)
    # a near tie decided by jieba's total: rjieba's own add_word would give 分钟 + 后
    assert segmenter.segment("15分钟后关掉音乐") == ("15", "分钟后", "关掉", "音乐")


def test_a_cutter_that_disagrees_with_jieba_is_not_used(jieba_and_exact_cut, monkeypatch):
    tokenizer, cut = jieba_and_exact_cut
    monkeypatch.setattr(RustCut, "lcut", lambda self, text: list(text))
    assert isinstance(cut_for(tokenizer, ()), ExactCut)


_MIXED = st.text(st.one_of(st.sampled_from("打开空调座椅加热导航去公司的了吗"), st.characters(min_codepoint=0x4E00,
                 max_codepoint=0x9FFF), st.sampled_from("abcXYZ019 .%-_#&+\t\n，。？!😀ｆ")), max_size=60)


@settings(max_examples=300, deadline=None)
@given(text=_MIXED)
def test_exact_cut_and_rjieba_give_jiebas_tokens_on_any_mixed_text(jieba_and_exact_cut, rust_cut, text):
    tokenizer, cut = jieba_and_exact_cut
    expected = tokenizer.lcut(text, HMM=False)
    assert cut.lcut(text) == expected
    assert rust_cut.lcut(text) == expected


def test_segmenter_freezes_its_dictionary_at_fit(tmp_path):
    (tmp_path / "devices.txt").write_text("飞天扫帚\tcar_device\n", encoding="utf-8")
    segmenter = Segmenter(lexicon_dir=tmp_path).fit()
    assert ("飞天扫帚", None) in segmenter.words_
    (tmp_path / "devices.txt").write_text("", encoding="utf-8")
    assert "飞天扫帚" in segmenter.utterance("打开飞天扫帚").tokens


@pytest.mark.parametrize("context, state", [
    (None, "none"), ([], "none"), (SLOW_QUESTION, "slow_question"),
    ([{"role": "assistant", "system": "slow", "text": "已为你规划好路线"}], "slow_result"),
    ([{"role": "assistant", "system": "slow", "text": "找到三家 第一家最近 第二家最便宜 你想去哪家"}], "slow_question"),
    ([{"role": "assistant", "system": "slow", "text": "好的 想在每天早上几点提醒你"}], "slow_question"),
    # spoken answers come without a question mark: the question word says it
    ([{"role": "assistant", "system": "slow", "text": "好的 请问几位用餐"}], "slow_question"),
    ([{"role": "assistant", "system": "slow", "text": "好的 消息内容是什么"}], "slow_question"),
    ([{"role": "assistant", "system": "slow", "text": "推荐你去湖边那家茶馆 人均八十"}], "slow_result"),
    ([{"role": "assistant", "system": "slow", "text": "长城始建于春秋战国时期"}], "prev_slow"),
    ([{"role": "user", "system": None, "text": "打开空调"}, {"role": "assistant", "system": "fast", "text": "好的"}],
     "prev_fast"),
])
def test_context_state_summarises_the_last_assistant_turn(context, state):
    assert context_state(context) == state


TWO_NAMESAKES = [{"role": "user", "system": None, "text": "我微信里存了两个叫周明的，一个是邻居一个是同学"},
                 {"role": "assistant", "system": "slow", "text": "好的，记住了"}]


def test_a_turn_naming_several_candidates_gives_its_own_context_state():
    markers = candidate_markers()
    assert "有两个" in markers and "同名" in markers
    assert context_state(TWO_NAMESAKES, markers) == "prev_candidates"
    assert context_state(TWO_NAMESAKES) == "prev_slow"  # no markers given: the turn state alone
    one = [{"role": "user", "system": None, "text": "我微信里存了周明的号码"}, TWO_NAMESAKES[1]]
    assert context_state(one, markers) == "prev_slow"
    # a fast answer that lists them is a turn that names several candidates too
    listed = [{"role": "user", "system": None, "text": "周明的号码多少"},
              {"role": "assistant", "system": "fast", "text": "通讯录里找到两个周明，一个备注邻居"}]
    assert context_state(listed, markers) == "prev_candidates"
    assert context_state(listed) == "prev_fast"
    # a pending slow question keeps its state: the reply answers it
    asked = [TWO_NAMESAKES[0], {"role": "assistant", "system": "slow", "text": "要打给哪一个？"}]
    assert context_state(asked, markers) == "slow_question"


@pytest.mark.parametrize("answer, state", [
    ("已打开阅读灯和氛围灯", "prev_listed"),           # two things of one kind: 关掉那个 asks which
    ("客厅灯、卧室灯都开着", "prev_listed"),
    ("附近有万达停车场跟路边停车位", "prev_listed"),
    ("空调已打开", "prev_fast"),                           # one thing: 把它关了 goes on with it
    ("已打开阅读灯和氛围灯，要关掉哪个？", "prev_fast"),   # a question: the reply answers it
])
def test_an_answer_that_lists_several_things_has_its_own_context_state(answer, state):
    context = [{"role": "user", "system": None, "text": "灯开一下"},
               {"role": "assistant", "system": "fast", "text": answer}]
    assert context_state(context, candidate_markers()) == state
    assert context_state(context) == "prev_fast"  # no markers given: the turn state alone


def test_a_slow_answer_that_lists_its_results_stays_a_slow_result():
    # choosing among what the slow system found (离得近的那个) depends on that answer: a context reply
    context = [{"role": "user", "system": None, "text": "帮我找个安静的咖啡馆"},
               {"role": "assistant", "system": "slow", "text": "找到两家 漫咖啡和Manner 都比较安静"}]
    assert context_state(context, candidate_markers()) == "slow_result"
    for answer in ("推荐两家：A亲子餐厅距离3公里，B主题餐厅距离8公里。", "第一家森林餐厅有儿童乐园 第二家在商场里"):
        context[-1] = {"role": "assistant", "system": "slow", "text": answer}  # what it recommends is a result too
        assert context_state(context, candidate_markers()) == "slow_result"


def test_the_segmenter_freezes_the_candidate_markers_at_fit(tmp_path):
    (tmp_path / "candidates.txt").write_text("有一对\n", encoding="utf-8")
    segmenter = Segmenter(lexicon_dir=tmp_path).fit()
    assert segmenter.candidates_ == ("有一对",)
    (tmp_path / "candidates.txt").write_text("", encoding="utf-8")
    turns = [{"role": "user", "system": None, "text": "群里有一对周明"}, TWO_NAMESAKES[1]]
    assert segmenter.utterance({"query": "给周明打电话", "context": turns}).context == "prev_candidates"


def test_gap_patterns_match_in_order_only(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("当…时\ttrigger\n每\tperiodic\n", encoding="utf-8")
    lexicon = load_lexicon(path)
    hit = lambda text: lexicon.match(tuple(text), text)
    assert hit("当电量低于20%时提醒我") == {0: 1}
    assert hit("时间到了当然") == {}
    assert hit("每天早上") == {1: 1}


EXTRACTORS = [CharNgrams, WordTokens, TriggerMarkers, SensationWords, SceneWords, DeviceLexicon, ActionLexicon,
              QuestionMarkers, Connectors, Demonstratives, NumbersUnits, ContextFeatures, EndpointFeatures, ExplicitTarget,
              AutomationParse, WhereItRuns]


@pytest.fixture(scope="module")
def utterances():
    return Segmenter().fit().transform([
        "我感觉好冷快冻死了，帮我调一下", {"query": "帮我开启", "context": SLOW_QUESTION},
        {"query": "每天早上七点打开窗帘", "endpoint": "home"}, "那个压线噔噔的声音关掉", "现在几点？",
    ])


@pytest.mark.parametrize("extractor", EXTRACTORS, ids=lambda e: e.__name__)
def test_extractors_are_well_behaved_transformers(extractor, utterances):
    fitted = extractor().fit(utterances)
    out = fitted.transform(utterances)
    assert out.shape[0] == len(utterances)
    assert clone(extractor()).get_params() == extractor().get_params()
    again = pickle.loads(pickle.dumps(fitted)).transform(utterances)
    assert np.allclose(out.toarray(), again.toarray())


def names_hit(extractor, utterance):
    fitted = extractor().fit([utterance])
    row = fitted.transform([utterance]).toarray()[0]
    return {name for name, v in zip(fitted.get_feature_names_out(), row) if v}


def test_lexicon_extractors_see_their_words(utterances):
    feeling, confirm, automation, nickname, clock = utterances
    assert {"sensations:cold", "sensations:feeling"} <= names_hit(SensationWords, feeling)
    assert "triggers:periodic" in names_hit(TriggerMarkers, automation)
    assert "devices:home_device" in names_hit(DeviceLexicon, automation)
    assert "demonstratives:that" in names_hit(Demonstratives, nickname)
    assert {"questions:time", "questions:mark"} <= names_hit(QuestionMarkers, clock)
    fault = Segmenter().fit().transform(["车门关不严咋办"])[0]
    assert "questions:how" in names_hit(QuestionMarkers, fault)  # 咋 is spoken 怎么
    assert {"ctx:slow_question", "ctx:slow_question&short"} <= names_hit(ContextFeatures, confirm)
    assert {"endpoint:home", "endpoint:home&trigger"} <= names_hit(EndpointFeatures, automation)
    assert {"number", "len<=16"} <= names_hit(NumbersUnits, automation)


@pytest.mark.parametrize("query", ["把ESP关掉", "车身稳定系统关一下", "开启哨兵", "autohold打开"])
def test_the_cars_functions_said_short_or_in_letters_are_devices(query):
    u = Segmenter().fit().transform([query])[0]
    assert "devices:car_device" in names_hit(DeviceLexicon, u)


@pytest.mark.parametrize("item, where", [
    ("每天早上七点打开空调", "unplaced"),  # a car and a home both have one: the spec's 模糊
    ("上车的时候打开空调", "car"),
    ("每天早上八点帮我把车里空调提前打开", "car"),
    ("扫地机每天下午两点开始扫", "home"),
    ("下雨的时候把阳台的窗帘拉上", "home"),
    ("睡觉前提醒我关窗户", "unplaced"),  # a home has windows too (车窗 is the car's)
    ("锁车的时候把车窗关上", "car"),
    ({"query": "天黑了就把客厅的灯打开", "automation": [{"condition": "天黑了", "querys": []}]}, "home"),
    ({"query": "每天早上七点打开空调", "endpoint": "car"}, None),  # the endpoint says where
    ("打开空调", None),  # no automation
    ("定个五点半的闹钟", None),  # an alarm runs alike everywhere (LABELING rule 10): 闹钟 says nothing of where
])
def test_where_an_automation_with_no_endpoint_runs_is_read_from_its_content(item, where):
    u = Segmenter().fit().transform([item])[0]
    hit = names_hit(WhereItRuns, u)
    assert hit == ({f"no_endpoint_automation:{where}"} if where else set())


def group(condition, *intents, builtin=False) -> dict:
    out = {"condition": condition, "querys": [{"subquery": "x", "intent": i} for i in intents]}
    return {**out, "builtin": True} if builtin else out


@pytest.mark.parametrize("groups, signals", [
    (None, ()), ([], ()), ([group(None, "设备控制")], ()),
    ([group("下雨了", "设备控制")], ("condition", "device")),
    ([group("上车时", "车载控制", "音乐播放")], ("condition", "vehicle")),
    ([group("八点", "提醒")], ("condition", "reminder")),
    ([group("八点", "提醒", "设备控制")], ("condition", "device")),
    ([group("走远时", "车载控制", builtin=True)], ("builtin",)),
    ([group("洗衣机洗完的时候", "提醒", builtin=True)], ("condition", "reminder", "builtin")),
    ([group("default", "系统控制"), group("到家时", "设备控制"), group(None, "音乐播放")], ("condition", "device", "default")),
])
def test_parse_signals_read_what_the_groups_say_of_the_whole_query(groups, signals):
    assert parse_signals({"query": "q", "automation": groups}) == signals
    assert parse_signals("a raw query") == ()


def test_the_router_reads_a_parse_passed_with_the_input_alone_and_with_its_endpoint():
    home, bare = Segmenter().fit().transform([
        {"query": "孩子房间一有哭声就打开小夜灯", "endpoint": "home", "automation": [group("孩子房间一有哭声", "设备控制")]},
        {"query": "孩子房间一有哭声就打开小夜灯", "endpoint": "home"}])
    assert home.parse == ("condition", "device") and bare.parse == ()
    assert names_hit(AutomationParse, home) == {"parse:condition", "parse:condition@home", "parse:device",
                                                "parse:device@home"}
    assert names_hit(AutomationParse, bare) == set()


def test_explicit_target_separates_a_named_device_from_a_vague_request():
    named, vague = Segmenter().fit().transform(["太冷了，调一下空调", "太冷了，帮我调一下"])
    assert {"target:target", "target:sensation&target", "target:vague&target"} <= names_hit(ExplicitTarget, named)
    assert {"target:no_target", "target:sensation&no_target", "target:vague&no_target"} <= names_hit(ExplicitTarget, vague)


def test_an_edited_lexicon_changes_the_lexicons_digest(tmp_path):
    """Lexicons are training data: train.py's model version includes this digest."""
    from fastslow.features.lexicon import LEXICON_DIR, lexicons_digest

    import shutil

    copy = tmp_path / "lexicons"
    shutil.copytree(LEXICON_DIR, copy)
    assert lexicons_digest(copy) == lexicons_digest(LEXICON_DIR)
    with (copy / "fillers.txt").open("a", encoding="utf-8") as f:
        f.write("哎呀呀\tprefix\n")
    assert lexicons_digest(copy) != lexicons_digest(LEXICON_DIR)


def test_a_lexicon_file_holds_one_word_class_with_a_column_per_view(tmp_path):
    """devices.txt is read by the router (category) and the automation parser (automation) alike;
    ``-`` leaves a term out of a view, and the first column's empty cell is the file's name."""
    from fastslow.features.lexicon import Matcher

    path = tmp_path / "gadgets.txt"
    path.write_text("# comment\n#: category\tautomation\n空调\tcar_device\tshared\n车锁\t-\tcar\n"
                    "扫地机\thome_device\n雷达\n", encoding="utf-8")
    router = load_lexicon("gadgets", lexicon_dir=tmp_path)
    assert (router.name, router.categories) == ("gadgets", ("car_device", "home_device", "gadgets"))
    assert router.words == {"空调": (0,), "扫地机": (1,), "雷达": (2,)}
    kinds = Matcher.load("gadgets", "automation", tmp_path)
    assert kinds.category == {"空调": "shared", "车锁": "car"}
    assert [(a, b, cat) for a, b, _, cat in kinds.find("打开空调锁上车锁")] == [(2, 4, "shared"), (6, 8, "car")]
    with pytest.raises(ValueError, match="no column 'kind'"):
        load_lexicon(path, "kind")


def test_the_scanner_finds_what_each_matcher_finds_in_one_pass():
    from fastslow.features.automation_lexicons import AutomationLexicons, load_automation_lexicons
    from fastslow.features.lexicon import Scanner

    lex = load_automation_lexicons()
    matchers = [getattr(lex, name) for name in AutomationLexicons.FEATURE_MATCHERS]
    scanner = pickle.loads(pickle.dumps(Scanner(matchers)))
    for text in sorted(bundled_texts())[::7]:
        low = text.lower()
        assert scanner.scan(low) == [[(a, b, t) for a, b, t, _ in m.find(low)] for m in matchers], text


def test_a_single_character_term_counts_only_outside_a_longer_term_of_any_lexicon():
    """调 is no second verb in 空调 (a device word) nor in 调到 (a verb of its own); said alone, it is
    one."""
    from fastslow.features.lexicon import ROUTER_LEXICONS, LexiconBank

    lexicons = [load_lexicon(name) for name in ROUTER_LEXICONS]
    bank = LexiconBank.of(lexicons)
    actions = lexicons[ROUTER_LEXICONS.index("actions")]
    adjust = actions.categories.index("adjust")

    def adjust_hits(bank, tokens):
        text = "".join(tokens)
        return bank.match(tokens, text)[actions.digest].get(adjust, 0)

    assert adjust_hits(bank, ("空调", "调到", "二十六度")) == 1
    assert adjust_hits(bank, ("把", "空调", "调", "高", "点")) == 1
    assert adjust_hits(bank, ("打开", "空调")) == 0
    # the lexicon alone knows only its own longer terms: 调到 hides 调, 空调 (not an action) does not
    text = "空调调到二十六度"
    assert actions.match(("空调", "调到", "二十六度"), text).get(adjust, 0) == 2


def test_explain_names_only_the_words_that_were_counted(model):
    """The explanation lists a lexicon's words by the bank's rule: 带我去 is the nav verb, its 去 is not a
    second one (the feature's value is log1p(1))."""
    from fastslow.models.routing.explain import explain_utterances

    u = model.router.segmenter.utterance({"query": "带我去万达广场", "context": [], "endpoint": "car"})
    features = {f["feature"].split(" ")[0]: f for f in explain_utterances(model.router, [u], top_k=None)[0]["features"]}
    nav = next(f for name, f in features.items() if name == "actions:nav")
    assert nav["feature"] == 'actions:nav "带我去"'
    assert nav["value"] == pytest.approx(np.log1p(1), abs=1e-4)  # rounded in the explanation


def assert_rows_are_the_vectorizers(vectorizer: TfidfVectorizer, documents) -> None:
    """``TfidfRows`` of a fitted vectorizer give its ``transform`` on ``documents``, all at once (numpy over the
    batch when it has more than ``FEW_ROWS`` documents) and each alone (Python floats), the two bit for bit."""
    rows = TfidfRows.of(vectorizer)
    want = vectorizer.transform(documents).tocsr()
    want.sort_indices()
    documents = [vectorizer.analyzer(d) for d in documents]
    indptr, columns, values = map(np.asarray, rows.rows(documents))
    got = sp.csr_matrix((values, columns, indptr), shape=want.shape, copy=True)  # a row's columns are distinct
    got.sort_indices()
    assert got.indptr.tolist() == want.indptr.tolist() and got.indices.tolist() == want.indices.tolist()
    np.testing.assert_allclose(got.data, want.data, rtol=0, atol=1e-12)
    columns, values = columns.tolist(), values.tolist()
    for k, document in enumerate(documents):
        start, end = indptr[k], indptr[k + 1]
        one_indptr, one_columns, one_values = rows.rows([document])
        assert list(one_indptr) == [0, end - start]
        assert list(one_columns) == columns[start:end] and list(one_values) == values[start:end]


@pytest.mark.parametrize("sublinear", [True, False])
def test_tfidf_rows_are_the_vectorizers_transform_on_every_bundled_text(sublinear):
    """The router's character n-grams of every bundled text (fitted on every other one, so that some grams are
    out of the vocabulary), as scikit-learn computes them."""
    texts = sorted(bundled_texts())
    analyse = lambda text: char_ngrams(text, 1, 2)
    vectorizer = TfidfVectorizer(analyzer=analyse, sublinear_tf=sublinear, lowercase=False).fit(texts[::2])
    assert_rows_are_the_vectorizers(vectorizer, texts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdefg") | st.text("xyz", min_size=2, max_size=3), max_size=12),
                min_size=1, max_size=8), st.booleans())
def test_tfidf_rows_are_the_vectorizers_transform_on_any_documents(documents, sublinear):
    """Repeated grams (the tf weight), grams out of the vocabulary and empty documents (no entry at all)."""
    vectorizer = TfidfVectorizer(analyzer=lambda grams: grams, sublinear_tf=sublinear, lowercase=False)
    fitted_on = [d for d in documents[: max(1, len(documents) // 2)] if d] or [["a"]]
    assert_rows_are_the_vectorizers(vectorizer.fit(fitted_on), documents)


def test_a_tfidf_extractor_transforms_as_its_fitted_vectorizer(utterances):
    for extractor in (CharNgrams(ngram_range=(1, 2)), WordTokens(max_n=2)):
        extractor.fit(utterances)
        want = extractor.vectorizer_.transform([extractor.document(u) for u in utterances])
        assert abs(extractor.transform(utterances) - want).max() < 1e-12


def test_char_grams_read_a_number_in_digits_as_it_is_said():
    said = ["明天上午九点提醒我", "主驾调到二十二度", "电量百分之三十", "七点四十五叫我", "收音机调到fm97.4"]
    written = ["明天上午9点提醒我", "主驾调到22度", "电量30%", "7:45叫我", "收音机调到FM97.4"]
    extractor = CharNgrams(ngram_range=(1, 2), digits_as_said=True).fit(Segmenter().fit().transform(said))
    assert (extractor.transform(Segmenter().fit().transform(written)) != extractor.transform(
        Segmenter().fit().transform(said))).nnz == 0
    # the segmenter reads amounts as said already (9点 is 九点 to every feature); other numbers only the grams
    assert Segmenter().fit().transform(written[:1])[0].text == said[0]
    plain = CharNgrams(ngram_range=(1, 2)).fit(Segmenter().fit().transform(said))
    assert (plain.transform(Segmenter().fit().transform(["加92号汽油"])) != plain.transform(
        Segmenter().fit().transform(["加九十二号汽油"]))).nnz > 0


def test_a_fitted_segmenter_and_its_lexicons_pickle_with_their_tables():
    """Everything ``utterances`` reads is learned state: a segmenter loaded from a pickle builds the same
    utterances, lexicon hits included (the bank's shared empty hits stay empty after a pickle)."""
    segmenter = Segmenter(spoken=True).fit()
    queries = sorted(bundled_texts())[::50]
    loaded = pickle.loads(pickle.dumps(segmenter))
    want, got = segmenter.utterances(queries), loaded.utterances(queries)
    assert got == want and [u.hits for u in got] == [u.hits for u in want]
    assert loaded.utterances(queries) == want and [u.hits for u in loaded.utterances(queries)] == [u.hits for u in want]


def assert_char_columns_are_the_vectorizers(vectorizer: TfidfVectorizer, texts) -> None:
    """``CharGramColumns.counted`` and ``TfidfRows.counted_rows`` of a fitted ``TfidfVectorizer(analyzer="char")`` give its
    ``transform`` on ``texts``, all at once and each alone, the two bit for bit."""
    min_n, max_n = vectorizer.ngram_range
    grams, rows = CharGramColumns(vectorizer.vocabulary_, min_n, max_n), TfidfRows.of(vectorizer)
    spaced = [re.sub(r"\s\s+", " ", t) for t in texts]  # what the vectorizer's analyzer reads of a text
    want = vectorizer.transform(texts).tocsr()
    indptr, columns, values = map(np.asarray, rows.counted_rows(*grams.counted(spaced)))
    for k, text in enumerate(spaced):
        start, end = indptr[k], indptr[k + 1]
        one_indptr, one_columns, one_values = rows.counted_rows(*grams.counted([text]))
        assert list(one_indptr) == [0, end - start]
        assert list(one_columns) == columns[start:end].tolist() and list(one_values) == values[start:end].tolist()
        expected = dict(zip(want.indices[want.indptr[k]: want.indptr[k + 1]].tolist(),
                            want.data[want.indptr[k]: want.indptr[k + 1]].tolist()))
        assert sorted(one_columns) == sorted(expected)
        np.testing.assert_allclose(one_values, [expected[c] for c in one_columns], rtol=0, atol=1e-12)


@pytest.mark.parametrize("ngram_range, every", [((1, 2), 1), ((1, 3), 3), ((2, 3), 3)])
def test_char_gram_columns_are_the_vectorizers_on_every_bundled_text(ngram_range, every):
    """Every bundled text (every third for the ranges the router does not use by default), fitted on every other
    one (some grams out of the vocabulary), as scikit-learn's ``analyzer="char"`` computes it."""
    texts = sorted(bundled_texts())[::every]
    vectorizer = TfidfVectorizer(analyzer="char", ngram_range=ngram_range, sublinear_tf=True, lowercase=False)
    assert_char_columns_are_the_vectorizers(vectorizer.fit(texts[::2]), texts)


UNICODE_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # any code point but surrogates


@settings(max_examples=60, deadline=None)
@given(st.lists(UNICODE_TEXT | st.text("ab 12好的", max_size=12) | st.just("") | st.just("好的9a" * 400),
                min_size=1, max_size=8), st.sampled_from([(1, 2), (1, 3), (3, 3)]))
def test_char_gram_columns_are_the_vectorizers_on_any_text(texts, ngram_range):
    """Any unicode (astral planes included), Latin, digits, runs of spaces, empty and very long texts."""
    vectorizer = TfidfVectorizer(analyzer="char", ngram_range=ngram_range, sublinear_tf=True, lowercase=False)
    fitted_on = [t for t in texts[: max(1, len(texts) // 2)] if len(t) >= ngram_range[1]] or ["好的好的"]
    assert_char_columns_are_the_vectorizers(vectorizer.fit(fitted_on), texts)


def test_char_gram_columns_refuse_grams_longer_than_three():
    with pytest.raises(ValueError, match="ngram_range"):
        CharGramColumns({"abcd": 0}, 1, 4)
