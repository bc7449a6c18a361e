"""Spoken style (features/spoken.py): the variant kinds, the filler stripper, augmentation and its leak guard."""

from __future__ import annotations

import pytest

from fastslow.features.spoken import (
    VARIANT_KINDS, amounts_as_said, augment_rows, chinese_to_int, filler, homophone, int_to_chinese, no_punct, numerals,
    slips, spoken_lexicon, spoken_variants, strip_disfluencies, stutter, tail, wake, without_false_starts,
)
from fastslow.features.text import Segmenter


@pytest.mark.parametrize("n, text", [(0, "零"), (7, "七"), (10, "十"), (15, "十五"), (24, "二十四"), (45, "四十五"),
                                     (100, "一百"), (105, "一百零五"), (1010, "一千零一十")])
def test_numbers_are_said_as_chinese_numerals_and_read_back(n, text):
    assert int_to_chinese(n) == text
    assert chinese_to_int(text) == n


def test_numerals_turn_digits_into_spoken_numbers_and_back():
    assert numerals("把温度调到24度", 0) == "把温度调到二十四度"
    assert numerals("7点45叫我起床", 0) == "七点四十五叫我起床"
    assert numerals("现在电还有百分之多少", 0) == "现在电还有百分之多少"  # 百分之 is no 100分
    assert numerals("电量低于20%时提醒我", 0) == "电量低于百分之二十时提醒我"
    assert numerals("把空调调到二十四度", 0) == "把空调调到24度"
    assert numerals("明天七点四十五提醒我开会", 0) == "明天7点45提醒我开会"


def test_numerals_leave_words_made_of_numerals_alone():
    assert numerals("调低一点", 0) == "调低一点"
    assert numerals("开一下空调", 0) == "开一下空调"


def test_each_kind_is_seeded_and_pure():
    lex = spoken_lexicon()
    text = "把空调调到二十四度，然后打开座椅加热"
    for kind in VARIANT_KINDS:
        first = spoken_variants(text, 5, kinds=(kind,))
        assert first == spoken_variants(text, 5, kinds=(kind,))
    assert filler(text, 1)[: -len(text)].rstrip("，") in lex.augment_fillers
    assert wake(text, 1)[: -len(text)].rstrip("，") in lex.wake_words
    assert tail("打开空调", 1)[len("打开空调"):].lstrip("，") in lex.tails + lex.pause_tails
    assert tail("空调开了吗", 2)[len("空调开了吗"):].lstrip("，") in lex.tails  # a question is only thanked
    assert stutter("空调开一下", 0) in ("空空调开一下", "空调空调开一下")
    assert no_punct(text) == "把空调调到二十四度然后打开座椅加热"
    assert no_punct("导航去评分4.5以上的川菜，7:45出发") == "导航去评分4.5以上的川菜7:45出发"
    assert homophone("打开座椅加热", 0) in {"打开" + w for w in ("坐椅加热", "座椅加惹")} | {"大开座椅加热"}
    assert homophone("今天几号", 0) == "今天几号"  # no word of the lexicon: unchanged


def test_unknown_kind_is_refused_by_name():
    with pytest.raises(ValueError, match="whisper"):
        spoken_variants("打开空调", 0, kinds=("whisper",))


@pytest.mark.parametrize("said, meant", [
    ("那个打开空调", "打开空调"),                 # 那个 before a command with its own object: a hesitation
    ("那个，打开空调", "打开空调"),               # ... after a pause: a hesitation
    ("小爱同学嗯那个把把空调打开谢谢", "把空调打开"),
    ("空调空调开一下", "空调开一下"),
    ("打开车车窗", "打开车窗"),                   # a character said twice is said once
    ("把边上那个开关关闭", "把边上那个开关关闭"),  # ... unless it ends one word and starts the next
    ("一上车车载冰箱就开始制冷", "一上车车载冰箱就开始制冷"),
    ("打开空调，好吗", "打开空调"),
    ("你好小鹏，导航回家", "导航回家"),
    ("那个灯打开", "那个灯打开"),                 # 那个 before a noun points at it
    ("那个打开", "那个打开"),                     # ... and is the object of a bare verb
    ("把那个关了", "把那个关了"),
    ("今天天气好吗", "今天天气好吗"),             # 好吗 without a pause is the question itself
    ("额度还有多少", "额度还有多少"),
    ("打开开关", "打开开关"),
    ("嗯", "嗯"),                                 # never emptied
    ("打开坐椅加热", "打开座椅加热"),             # a misrecognition that is no word is put back
    ("打开车床", "打开车床"),                     # ... but one that is a word (a lathe) is not
    # after a hesitation, 那个 is one too
    ("呃那个开大点", "开大点"),
    ("然后那个暂停一下", "暂停一下"),
    ("嗯那个关一下天窗", "关一下天窗"),           # ... a verb with its object after it: a hesitation
    ("嗯嗯那个关一下天窗", "关一下天窗"),
    ("那个拉开窗帘", "拉开窗帘"),
    ("那个关一下", "那个关一下"),                 # ... the object of a bare verb stays
    ("那个啥，雨刮开一下", "雨刮开一下"),
    # a wake word said three times, or with a stutter on its first character
    ("小爱小爱小爱同学，停", "停"),
    ("小小爱同学，客厅灯关了", "客厅灯关了"),
    ("你你好小鹏，今天杭州下不下雨", "今天杭州下不下雨"),
    ("小理小理，呃，导航一下", "导航一下"),
    ("嗨，理想同学，开一下宠物模式", "开一下宠物模式"),
    # a polite tail after a whole statement needs no pause; after a question or a short topic it is the question
    ("快进三十秒好不好", "快进三十秒"),
    ("后面小孩一直喊热行不行", "后面小孩一直喊热"),
    ("这首歌好不好听", "这首歌好不好听"),
    ("那盏灯关一下呗", "那盏灯关一下"),
    ("帮我定个明天六点半的闹钟呗", "帮我定个明天六点半的闹钟"),
    ("这首不喜欢，跳过好吗", "这首不喜欢，跳过"),
    ("开一下宠物模式好吗", "开一下宠物模式"),
    ("你好吗", "你好吗"),
    ("先把空调调到二十三度再把座椅加热打开就这样", "先把空调调到二十三度再把座椅加热打开"),  # "that is all"
    ("对就这样", "对就这样"),                     # ... said alone it is the answer itself
    ("空调开一下", "空调开一下"),                 # 一下 ends the command itself
    ("来点轻音乐吧小爱同学", "来点轻音乐吧"),     # a wake word said last
    ("打开空调，小度", "打开空调"),
    ("你好小鹏", "你好小鹏"),                     # ... but never the greeting of a bare wake word
    # a hesitation after a pause at the end: the query is what came before it, a cut-off one included
    ("带我去，呃", "带我去"),
    ("把车窗关上，嗯", "把车窗关上"),
    ("带我去呃", "带我去呃"),                     # ... without a pause it is left to the model
    ("那个什么，座椅通风打开", "座椅通风打开"),   # 那个什么 searches for a word
    ("把天创关上", "把天窗关上"),                 # device names ASR spells as no word are put back
    ("雨括开到最快", "雨刮开到最快"),
    # an assistant's name no list knows, 小X or 阿X (maybe with 同学), after a greeting or before a pause
    ("嘿阿豆，车窗关上", "车窗关上"),
    ("小橙同学，暂停一下", "暂停一下"),
    ("阿里巴巴股价多少", "阿里巴巴股价多少"),     # a word that starts with 阿 stays
    ("小明同学", "小明同学"),                     # ... and so does a bare name
    # the word lists are lower case; a wake word said in capitals is one too
    ("NOMI 打开车窗", "打开车窗"),
    ("嗨NOMI，下一首", "下一首"),
    # a statement's polite tail goes, but not a tail that is the end of a word (限行, 银行)
    ("帮我打开空调行吗", "帮我打开空调"),
    ("打开空调今天限行吗", "打开空调今天限行吗"),
    ("打开空调，顺便问一下周五限不限行好吗", "打开空调，顺便问一下周五限不限行好吗"),  # after 问一下: a question
    ("导航去最近的银行吗", "导航去最近的银行吗"),
    # a hesitation alone between two pauses inside the query goes with the pause before it
    ("先打开空调然后，呃，再把座椅加热打开", "先打开空调然后，再把座椅加热打开"),
    ("打开空调，就是，座椅加热也开", "打开空调，座椅加热也开"),
    ("开空调，嗯嗯嗯，好", "开空调，嗯嗯嗯，好"),  # 嗯嗯嗯 is no hesitation of the list
    # words said again after such a hesitation are a restart: said once, with no pause
    ("导航到，呃，到浦东机场", "导航到浦东机场"),
    ("把座椅加热 嗯 座椅加热关了", "把座椅加热关了"),
    ("打开，呃，打开后备箱", "打开后备箱"),
    ("把灯关掉，嗯，关掉空调", "把灯关掉，关掉空调"),     # a verb after a whole command starts the next one
    ("打开车窗，呃，窗户开一半", "打开车窗，窗户开一半"),  # 窗 alone is no word said again
    ("帮我打给，呃，打给老周", "帮我打给老周"),       # only a command's start before the verb: a restart
    # a character said twice at the start is said once, unless the two are a word (看看, 天天)
    ("现现在电还有百分之多少", "现在电还有百分之多少"),
    ("总总结一下今天的未读消息", "总结一下今天的未读消息"),
    ("看看看家里现在多少度", "看看家里现在多少度"),
    ("看看家里现在多少度", "看看家里现在多少度"),
    ("天天都要提醒我吃药", "天天都要提醒我吃药"),
])
def test_the_stripper_removes_hesitations_but_keeps_determiners(said, meant):
    assert strip_disfluencies(said) == meant


def test_a_chunk_the_next_one_says_again_from_its_start_is_dropped_and_nothing_else():
    assert without_false_starts("打开 打开座椅通风") == "打开座椅通风"
    assert without_false_starts("嗯 导航去 导航去公司 谢谢") == "嗯 导航去公司 谢谢"
    assert without_false_starts("打开空调 空调调到二十度") == "打开空调 空调调到二十度"  # two requests
    assert without_false_starts("开 开空调") == "开 开空调"  # one character may be a verb said twice on purpose
    assert without_false_starts("打开空调") == "打开空调"
    assert without_false_starts("车窗关上 关上") == "车窗关上"  # an echo of the end
    assert without_false_starts("打开空调 关上车窗") == "打开空调 关上车窗"
    assert without_false_starts("") == ""


@pytest.mark.parametrize("said, meant", [
    ("打开，打开主驾车窗", "打开主驾车窗"),           # a false start between pauses, as the router reads it
    ("关一下,关一下雾灯", "关一下雾灯"),
    ("打开，打开近光灯，把hud关了", "打开近光灯，把hud关了"),
    ("天窗关上，关上", "天窗关上"),                   # an echo of the end, with the pause before it
    ("把灯打开，打开空调", "把灯打开，打开空调"),     # two commands: 打开 is no chunk of its own
    ("开，开空调", "开，开空调"),                     # one character may be said twice on purpose
    ("打开空调，空调调到二十度", "打开空调，空调调到二十度"),
    ("打开那个，哨兵模式吧", "打开哨兵模式吧"),     # 那个 while searching for the word, then the word
    ("把那个，雷达声音关掉", "把雷达声音关掉"),
    ("打开那个，那个app", "打开那个，那个app"),     # ... but pointing again, or asking for the name, it points
    ("导航去那个，那个啥来着", "导航去那个，那个啥来着"),
    ("幼儿园那个，还是钢琴课那个", "幼儿园那个，还是钢琴课那个"),  # after no command: the one of the kindergarten
    ("打开那个", "打开那个"),
    ("导航去，去，那个，浦东机场", "导航去浦东机场"),  # 去 said again, then 那个 searching after it
    ("导航到，那个，人民广场", "导航到人民广场"),
    ("打开空调，那个，座椅加热也开", "打开空调，那个，座椅加热也开"),  # after a whole command it may point
])
def test_the_stripper_drops_a_false_start_an_echo_or_a_searching_demonstrative_between_pauses(said, meant):
    assert strip_disfluencies(said) == meant


def test_slips_name_each_term_put_back_with_the_characters_around_it():
    [windows] = slips("下雨的时候把天创关上")
    assert windows[0] == ("天窗关", "天创关")        # widest first: the changed character and both neighbours
    assert ("天窗", "天创") in windows
    assert all(len(fixed) == len(said) >= 2 for fixed, said in windows)
    assert slips("下雨的时候把天窗关上") == ()        # nothing put back
    assert slips("") == ()


def test_the_stripper_keeps_each_word_list_apart_and_a_loaded_copy_together():
    import dataclasses
    import pickle

    bundled = spoken_lexicon()
    no_wake = dataclasses.replace(bundled, wake_words=())
    assert strip_disfluencies("天猫精灵打开空调", bundled) == "打开空调"
    assert strip_disfluencies("天猫精灵打开空调", no_wake) == "天猫精灵打开空调"  # not the bundled list's answer
    assert strip_disfluencies("天猫精灵打开空调", bundled) == "打开空调"
    copy = pickle.loads(pickle.dumps(bundled))  # as a model's frozen copy comes back
    assert copy is not bundled and copy.identity == bundled.identity != no_wake.identity
    assert strip_disfluencies("嗯天猫精灵把车窗关上谢谢", copy) == "把车窗关上"


def test_stripping_and_chinese_marks_can_come_in_either_order():
    """The parser strips a query's clean text, then makes its marks Chinese (``surface_of``), so that it shares
    the router's strip: the same as stripping the surface itself, on every bundled query said with a wake word,
    a hesitation or a tail and half- or full-width marks around it."""
    from conftest import ALL_FILES, bundled_queries
    from fastslow.features.normalise import chinese_punctuation, clean
    from fastslow.models.automation.rules import automation_text

    starts = ("", "嗯，", "那个，", "小爱，", "你好，", "嗯,", "呃 ", "小爱同学！")
    ends = ("", "，快点", "谢谢", ",好吗", "？", "吧!", "，谢谢。")
    queries = bundled_queries(ALL_FILES)
    said = [starts[k % len(starts)] + q + ends[k % len(ends)] for k, q in enumerate(queries)]
    differ = [q for q in queries + said
              if chinese_punctuation(strip_disfluencies(clean(q))) != strip_disfluencies(automation_text(q))]
    assert len(said) > 10_000 and differ == []


def test_a_spoken_segmenter_strips_before_segmenting():
    plain = Segmenter(hmm=False).fit()
    spoken = Segmenter(hmm=False, spoken=True).fit()
    assert spoken.utterance("那个，打开空调").text == "打开空调"
    assert plain.utterance("那个，打开空调").text == "那个,打开空调"  # NFKC: a half-width comma


def test_augmented_rows_keep_their_label_and_never_equal_a_held_out_query():
    rows = [{"query": "把温度调到24度", "label": "快", "primary_reason_code": "DIRECT_ACTION", "source": "core"},
            {"query": "脚底下好冷", "label": "慢", "primary_reason_code": "INTENT_INFERENCE", "source": "core"}]
    out = augment_rows(rows, 3, seed=13)
    assert out == augment_rows(rows, 3, seed=13)
    assert len(out) == 6
    for row in out:
        source = next(r for r in rows if row["source"].startswith(r["source"]) and row["label"] == r["label"])
        assert row["primary_reason_code"] == source["primary_reason_code"]
        assert row["source"].split("+spoken:")[1] in VARIANT_KINDS
    assert augment_rows(rows, 0, seed=13) == []
    # the leak guard: a held-out query (normalised) is never produced
    numerals_variant = "把温度调到二十四度"
    guarded = augment_rows(rows[:1], len(VARIANT_KINDS), seed=13, held_out={numerals_variant})
    assert numerals_variant not in {r["query"] for r in guarded}
    assert numerals_variant in {r["query"] for r in augment_rows(rows[:1], len(VARIANT_KINDS), seed=13)}


def test_a_punctuated_row_always_gets_its_unpunctuated_twin():
    rows = [{"query": f"把温度调到{t}度，然后打开座椅加热", "label": "快", "primary_reason_code": "EXPLICIT_DEVICE_MULTI_ACTION",
             "source": "core"} for t in range(18, 30)]
    out = augment_rows(rows, 1, seed=13)
    assert [r["source"] for r in out] == ["core+spoken:no_punct"] * len(rows)
    assert [r["query"] for r in out] == [f"把温度调到{t}度然后打开座椅加热" for t in range(18, 30)]
    unpunctuated = augment_rows([{**rows[0], "query": "把温度调到24度"}], 1, seed=13)
    assert unpunctuated[0]["source"] != "core+spoken:no_punct"  # nothing to drop: another kind


@pytest.mark.parametrize("written, said", [
    ("晚上8点提醒我看球赛", "晚上八点提醒我看球赛"), ("10分钟以后提醒我", "十分钟以后提醒我"), ("再加一个7点10的", "再加一个七点十的"),
    ("4个窗户都关严了没", "四个窗户都关严了没"), ("空调调到24度", "空调调到二十四度"), ("7:45叫我", "七点四十五叫我"),
    ("亮度调到30%", "亮度调到百分之三十"), ("2点叫我", "两点叫我"), ("2个", "两个"),
    # other digits are names or terms: left as written
    ("7天酒店", "7天酒店"), ("5G网络", "5G网络"), ("打开360影像", "打开360影像"), ("92号汽油", "92号汽油"),
    ("PM2.5多少", "PM2.5多少"), ("调到2.5度", "调到2.5度"), ("执行1次", "执行1次"),
])
def test_the_router_reads_amounts_in_digits_as_said(written, said):
    assert amounts_as_said(written) == said
