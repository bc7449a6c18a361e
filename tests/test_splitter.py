"""The subrequest splitter on the spec's multi-instruction examples and its near misses."""

import pytest

from fastslow.features.text import Segmenter
from fastslow.models.routing.splitter import SplitLexicon, split_subrequests


@pytest.fixture(scope="module")
def split():
    segmenter, lexicon = Segmenter().fit(), SplitLexicon.from_lexicons()

    def run(query):
        tokens = segmenter.utterance(query).tokens
        return ["".join(tokens[a:b]) for a, b in split_subrequests(tokens, lexicon)]

    return run


@pytest.mark.parametrize("query, parts", [
    # spec 快的规则/多个明确设备控制
    ("把空调调到 24 度，然后打开座椅加热", ["把空调调到二十四度", "打开座椅加热"]),  # amounts read as said
    ("关客厅灯并打开空调", ["关客厅灯", "打开空调"]),
    ("副驾座椅往前挪 靠背放平一点", ["副驾座椅往前挪", "靠背放平一点"]),  # a seat moved, a backrest laid down
    ("关电视 关灯", ["关电视", "关灯"]),  # a verb jieba keeps with its device (关灯) is still a verb
    ("关掉卧室灯 窗帘合上", ["关掉卧室灯", "窗帘合上"]),  # ... and one it cuts in two (合|上)
])
def test_independent_device_controls_are_split(split, query, parts):
    assert split(query) == parts


@pytest.mark.parametrize("query", [
    "查天气再决定要不要开窗",  # spec 慢的规则/规划: the second step depends on the first
    "导航到主目的地，路上找充电站，再看看终点附近哪里好停车",
    "太冷了，调一下空调",  # spec 感受词不覆盖明确目标: the feeling belongs to the request
    "把副驾座椅往后挪一点 腿伸不开",  # a negated verb is the reason said after it, no request
    "我感觉好冷快冻死了，帮我调一下",
    "上车时打开空调，下车时关闭空调",  # an automation is one request
    "再低两度",  # 再 at the start is not a connector
    "开空调",
    "一千美元换成人民币再换成日元是多少",  # the same operation asked again of its result: one chain
])
def test_dependent_chains_feelings_and_automations_stay_whole(split, query):
    assert len(split(query)) == 1


@pytest.mark.parametrize("query, parts", [
    # a question after a connector is a request of its own (XA4.1 多指令: each part routed, labels aggregated)
    ("关上车窗顺便告诉我为什么玻璃会起雾", ["关上车窗", "告诉我为什么玻璃会起雾"]),
    ("把座椅加热打开另外哨兵模式是干嘛的", ["把座椅加热打开", "哨兵模式是干嘛的"]),
    ("下一首 顺便问下哨兵模式是啥", ["下一首", "问下哨兵模式是啥"]),
    # ... and so is one before a connector, its question word inside a longer word too (几号, 多少度)
    ("后天几号 顺便把天窗关上", ["后天几号", "把天窗关上"]),
    ("车里多少度，另外打开座椅通风", ["车里多少度", "打开座椅通风"]),
    # ... also one that starts with the verb before it, when it names a device (not the same operation again)
    ("把空调打开再打开座椅加热是多少度", ["把空调打开", "打开座椅加热是多少度"]),
    # after a pause it stays with the request: a feeling said as a question
    ("打开空调，怎么这么热", ["打开空调,怎么这么热"]),  # (the segmenter folds ， to ,)
    ("怎么这么冷，把空调打开", ["怎么这么冷,把空调打开"]),
])
def test_a_question_next_to_a_connector_is_routed_apart(split, query, parts):
    assert split(query) == parts


@pytest.mark.parametrize("query, parts", [
    # device controls said one after another with no pause written, as ASR delivers them
    ("后视镜折叠车门锁上", ["后视镜折叠", "车门锁上"]),
    ("主驾调到22度副驾调到25度", ["主驾调到二十二度", "副驾调到二十五度"]),
    ("打开空调关闭车窗", ["打开空调", "关闭车窗"]),
    ("把空调调到二十四度风量调成三档", ["把空调调到二十四度", "风量调成三档"]),
    ("关闭主驾车窗打开副驾车窗", ["关闭主驾车窗", "打开副驾车窗"]),
    ("后备箱关上 车门锁好", ["后备箱关上", "车门锁好"]),  # a space between Chinese is a pause
])
def test_unpunctuated_runs_of_device_controls_are_split(split, query, parts):
    assert split(query) == parts


@pytest.mark.parametrize("query", [
    "把客厅的灯和卧室的灯关掉",  # joined by 和: one command with two objects
    "打开座椅加热调到三档",  # the second part names no device: one command
    "调高空调温度",  # two nouns of one phrase
    "空调开着车窗能开吗",  # a question is not a run of commands
    "上车时打开空调关闭车窗",  # an automation is one request
])
def test_runs_that_are_one_request_stay_whole(split, query):
    assert len(split(query)) == 1


@pytest.mark.parametrize("query, parts", [
    ("打开车窗，不对，关上车窗", ["打开车窗,不对,关上车窗"]),  # one command is left: the whole is one request
    ("打开车窗不对关上车窗", ["打开车窗不对关上车窗"]),
    ("打开空调说错了关掉空调然后打开座椅加热", ["关掉空调", "打开座椅加热"]),
])
def test_a_self_correction_cancels_what_was_said_before_it(split, query, parts):
    assert split(query) == parts


def test_split_spans_cover_only_request_tokens(split):
    assert split("打开车窗，然后，播放周杰伦的歌") == ["打开车窗", "播放周杰伦的歌"]


def test_pieces_between_cuts_drop_the_cuts_and_empty_pieces():
    from fastslow.features.split import pieces_between

    assert pieces_between(10, [(0, 1), (4, 6), (6, 7)]) == [(1, 4), (7, 10)]
    assert pieces_between(3, []) == [(0, 3)]
    assert pieces_between(2, [(0, 2)]) == []


def test_pieces_without_an_action_join_the_next_and_trailing_ones_the_last():
    from fastslow.features.split import join_actionless

    pieces = [(0, 2), (3, 5), (6, 8), (9, 10)]
    assert join_actionless(pieces, [False, True, True, False]) == [(0, 5), (6, 10)]
    assert join_actionless(pieces, [False, False, False, False]) == [(0, 10)]
    assert join_actionless([], []) == []
