"""Lexicon terms heard by sound (features/sound.py): ASR slips on devices and functions put back before
segmentation, real words left as they are, and the ``asr`` spoken variant that says such slips."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from pypinyin import Style, lazy_pinyin

from conftest import ALL_FILES, bundled_queries
from fastslow.features.normalise import normalise
from fastslow.features.spoken import asr, spoken_lexicon, spoken_variants, strip_disfluencies


def put_back(text: str) -> str:
    return spoken_lexicon().sound.put_back(text)


@pytest.mark.parametrize("said, meant", [
    ("坐椅加热", "座椅加热"),                     # 坐椅 is a dictionary word, but not beside 加热
    ("恐调开到二十度", "空调开到二十度"),         # 调 of 空调 is tiao there, though most often diao
    ("篮芽耳机断开", "蓝牙耳机断开"),             # no character kept, the very same sound
    ("到航去机场", "导航去机场"),                 # 到 is grammatical, but 航 is kept
    ("把氛围等打开", "把氛围灯打开"),
    ("把座椅家热开到最高档", "把座椅加热开到最高档"),
    ("后事镜折叠", "后视镜折叠"),                 # 后事 is a word, but inside the slip
    ("打开粗雾", "打开除雾"),                     # a near sound: ch heard as c
    ("把闹总关掉", "把闹钟关掉"),                 # zh heard as z
    ("稳度调高一点", "温度调高一点"),             # 稳度 is in the dictionary, but rare
    ("空掉开到二十二度", "空调开到二十二度"),     # 调 heard by its common reading, diao
    ("到公司的时候踢心我买咖啡", "到公司的时候提醒我买咖啡"),  # a reminder's verb: ing heard as in
])
def test_a_device_or_function_said_with_other_characters_of_its_sound_is_put_back(said, meant):
    assert put_back(said) == meant
    assert strip_disfluencies(said) == meant


@pytest.mark.parametrize("text", [
    "打开车床",                   # a lathe: a common word that sounds like 车窗
    "这个分量够不够",             # 分量 sounds like 风量
    "帮我做一个蛋糕",             # 做一 sounds like 座椅, but 一个 is a word
    "带我去评分最高的火锅店",     # 高的 sounds like 高德, but 最高 is a word and 的 grammatical
    "把屋里搞得温馨一点",         # 搞得 sounds like 高德: a grammatical character and no rare one kept
    "手机来电时打开氛围灯",       # 电时 sounds like 电视, but 来电 is a word
    "关掉取暖器",                 # 暖器 sounds like 暖气, but 取暖器 is a word
    "删除洗车提醒这条规则",       # 消洗 sounds like 消息, but 洗车 is a word
    "这段路限速多少",             # 路限 sounds like 路线, but 限速 is a word
    "你觉得我今天穿得好看吗",     # 天穿 sounds like 天窗, but 今天 is a word
    "加湿器不出雾了",             # 出雾 sounds like 除雾, but 不出 is a word
    "推荐几个沿途景点",           # 途景点 sounds like 途经点, but 沿途 is a word
    "最近常听的歌",               # 常听 is 餐厅 only with near sounds, and keeps no character of it
    "门锁一关就关掉全屋灯",       # 屋灯 sounds like 雾灯, but 全屋 is a place of the home
    "大开眼界",
    "电池空掉了",                 # 空掉 sounds like 空调 read diao, but 了 after it makes it a verb
    "播放歌当找到加油站时打开收音机",  # 歌当 sounds like 歌单, but 当 opens the 当…时 the text closes
    "这个题型有点难",             # 题型 sounds like 提醒, and is a word
    "明天上午久点叫我",           # 久点 sounds like 酒店, but a place is never put back by sound (a clock time: 九点)
])
def test_real_words_that_sound_like_a_term_stay_themselves(text):
    assert put_back(text) == text


def test_a_pickled_lexicon_puts_back_the_same():
    bundled = spoken_lexicon()
    copy = pickle.loads(pickle.dumps(bundled))  # as a model's frozen copy comes back
    assert copy.identity == bundled.identity
    texts = ["恐调开到二十度", "篮芽耳机断开", "打开车床", "帮我做一个蛋糕", *bundled_queries(ALL_FILES)[:2000]]
    assert [copy.sound.put_back(t) for t in texts] == [bundled.sound.put_back(t) for t in texts]


def test_every_bundled_query_is_left_as_it_is_unless_it_holds_a_slip():
    """The stripper with the sound matcher against the stripper without it, on every bundled query: only slips
    change (the exact list of asr_corrections.txt no longer holds those the matcher puts back)."""
    bundled = spoken_lexicon()
    without = dataclasses.replace(bundled, sound=None)
    changed = {}
    for query in bundled_queries(ALL_FILES):
        before = strip_disfluencies(normalise(query), without)
        after = strip_disfluencies(normalise(query), bundled)
        if after != before:
            changed[before] = after
    assert changed == {
        "删除图经点": "删除途经点",
        "后市镜加热打开": "后视镜加热打开",
        "开一下前挡除雾再开后视境加热": "开一下前挡除雾再开后视镜加热",
        "打开分围灯调成蓝色": "打开氛围灯调成蓝色",
        "把分围灯换成蓝色的": "把氛围灯换成蓝色的",
        "打开天创": "打开天窗",
        "打开雨瓜": "打开雨刮",
        "打开香芬": "打开香氛",
        "找个最近的加由站": "找个最近的加油站",
        "把分为灯换成紫色的": "把氛围灯换成紫色的",
        "把座椅家热开到最高档": "把座椅加热开到最高档",
        "设一个明天早上7点的闹中": "设一个明天早上7点的闹钟",
        "麻烦导航去附近的加由站": "麻烦导航去附近的加油站",
        "上车的时候打开分为灯": "上车的时候打开氛围灯",
        "香风打开": "香氛打开",
        "分为灯调成紫色": "氛围灯调成紫色",
        "分为灯调成蓝色": "氛围灯调成蓝色",
        "打开哨兵魔式": "打开哨兵模式",
        "打开天床,空调关掉": "打开天窗,空调关掉",
        "打开做椅加热": "打开座椅加热",
        "把空调和家湿器都打开": "把空调和加湿器都打开",
        "打开天窗和遮阳莲": "打开天窗和遮阳帘",
        "扫地鸡器人回去充电": "扫地机器人回去充电",
        "每天七点让扫地鸡器人打扫客厅": "每天七点让扫地机器人打扫客厅",
        "打开三百六十度全景影响": "打开三百六十度全景影像",
        "打开做椅通风跟氛围灯": "打开座椅通风跟氛围灯",
        "晚上十点关上穿帘": "晚上十点关上窗帘",
        "湿度低于百分之四十时打开家湿器": "湿度低于百分之四十时打开加湿器",
        "玻璃起雾了快开前挡出雾": "玻璃起雾了快开前挡除雾",
        "空气静化器开睡眠模式": "空气净化器开睡眠模式",
        "连上手机蓝雅的时候播放我的歌单": "连上手机蓝牙的时候播放我的歌单",
        "那个雨刮打开的时候把空调切到内寻环": "那个雨刮打开的时候把空调切到内循环",
        "把恐调开一下": "把空调开一下",
        "屋里超过二十八度就开恐调": "屋里超过二十八度就开空调",
        "恐调怎么一直吹热风啊": "空调怎么一直吹热风啊",
        "打开恐调,座椅加热也开一下": "打开空调,座椅加热也开一下",
        "一表盘上有个黄色感叹号亮了": "仪表盘上有个黄色感叹号亮了",
        "倒车时后视境往下翻": "倒车时后视镜往下翻",
        "分为灯关掉,屏幕亮度调低一点": "氛围灯关掉,屏幕亮度调低一点",
        "分围灯换成蓝色": "氛围灯换成蓝色",
        "分围灯调成红色,亮度调到最高": "氛围灯调成红色,亮度调到最高",
        "前挡风除务打开,快点看不清了": "前挡风除雾打开,快点看不清了",
        "后被箱关好了吗": "后备箱关好了吗",
        "后被箱打开一下": "后备箱打开一下",
        "后视境折叠一下": "后视镜折叠一下",
        "音亮调到十五": "音量调到十五",
        "开一下哨冰模式": "开一下哨兵模式",
        "空气净化气打开": "空气净化器打开",
        "大登打开,开近光": "大灯打开,开近光",
        "天床关上吧,要下雨了": "天窗关上吧,要下雨了",
        "天黑了床帘自动拉上": "天黑了窗帘自动拉上",
        "家湿器打开持续两个小时": "加湿器打开持续两个小时",
        "家湿器没水了就自动停机": "加湿器没水了就自动停机",
        "开下扫地鸡,哎楼上楼下两台呢": "开下扫地机,哎楼上楼下两台呢",
        "打开分围灯颜色换成紫色": "打开氛围灯颜色换成紫色",
        "打开蓝呀": "打开蓝牙",
        "打开车门的时候把分围灯打开": "打开车门的时候把氛围灯打开",
        "方向盘假热开一下": "方向盘加热开一下",
        "明早六点半打开热水气": "明早六点半打开热水器",
        "湿度低于百分之四十就把家湿器打开": "湿度低于百分之四十就把加湿器打开",
        "热水气预约一下": "热水器预约一下",
        "调一个浪漫点的分为灯": "调一个浪漫点的氛围灯",
        "雨挂开到最快档": "雨刮开到最快档",
        "下午两点到四点之间上车就打开遮阳连": "下午两点到四点之间上车就打开遮阳帘",
        "打开少兵模式": "打开哨兵模式",
        "充电扣打开一下": "充电口打开一下",
        "兰牙怎么老是断啊": "蓝牙怎么老是断啊",
        "关空跳,开窗": "关空调,开窗",
        "内寻环打开": "内循环打开",
        "后事镜折起来": "后视镜折起来",
        "后被箱关好了没": "后备箱关好了没",
        "主驾车窗关上,天创也关上": "主驾车窗关上,天窗也关上",
        "开上高架的时候把天创关了": "开上高架的时候把天窗关了",
        "客厅窗连拉上": "客厅窗帘拉上",
        "家湿器打开": "加湿器打开",
        "家里湿度低于百分之三十或者开暖气的时候打开家湿器": "家里湿度低于百分之三十或者开暖气的时候打开加湿器",
        "导航结束的时候把分为灯关掉": "导航结束的时候把氛围灯关掉",
        "开分为灯": "开氛围灯",
        "开启少兵模式": "开启哨兵模式",
        "手机连上兰牙的时候播放我的收藏歌单": "手机连上蓝牙的时候播放我的收藏歌单",
        "打开后被箱": "打开后备箱",
        "打开鱼刮和大灯": "打开雨刮和大灯",
        "扫地鸡开始扫地": "扫地机开始扫地",
        "扫地鸡扫完以后自己回充电座": "扫地机扫完以后自己回充电座",
        "把分为灯关掉,屏幕调暗一点": "把氛围灯关掉,屏幕调暗一点",
        "把副驾的越读灯关掉": "把副驾的阅读灯关掉",
        "把扫地鸡打开": "把扫地机打开",
        "把车到保持关了": "把车道保持关了",
        "早上七点拉开卧室窗连": "早上七点拉开卧室窗帘",
        "早上出门之前十五分钟就把热水气关了": "早上出门之前十五分钟就把热水器关了",
        "下车离开的时候打开哨兵魔世": "下车离开的时候打开哨兵模式",
        "到家的时候关掉座椅家热": "到家的时候关掉座椅加热",
        "座椅家热打开": "座椅加热打开",
        "把扫地鸡器人叫回去充电": "把扫地机器人叫回去充电",
        "把蓝呀打开": "把蓝牙打开",
        "早上七点打开窗练": "早上七点打开窗帘",
        "窗练拉上": "窗帘拉上",
        "天创打开": "天窗打开",
        "电动委门打开": "电动尾门打开",
        "退出倒航": "退出导航",
        "音亮调到二十": "音量调到二十",
        "鱼刮开起来的时候把车窗关上": "雨刮开起来的时候把车窗关上",
        "连一下我手机的蓝雅": "连一下我手机的蓝牙",
        "后事镜折叠一下": "后视镜折叠一下",
        "我一坐上车就,就打开座椅按摩,顺便把空跳调到二十四度": "我一坐上车就,就打开座椅按摩,顺便把空调调到二十四度",
        "打开空气进化器,睡觉的时候把净化器调成睡眠模式": "打开空气净化器,睡觉的时候把净化器调成睡眠模式",
        "空跳温度调到二十二度": "空调温度调到二十二度",
        "前挡出雾打开": "前挡除雾打开",
        "把天床打开一条缝": "把天窗打开一条缝",
        "下雨的时候雨瓜自动打开": "下雨的时候雨刮自动打开",
        "雨瓜开到最快那档": "雨刮开到最快那档",
        "空掉开到二十五度风量开大": "空调开到二十五度风量开大",
        "雨瓜开到最快": "雨刮开到最快",
        "扫地鸡去扫一下厨房": "扫地机去扫一下厨房",
        "空掉开一下": "空调开一下",
        "音亮小一点": "音量小一点",
        "下一个服务去还有多远": "下一个服务区还有多远",
        "主驾座椅安摩打开,用波浪那个模式": "主驾座椅按摩打开,用波浪那个模式",
        "倒车影响突然黑屏了": "倒车影像突然黑屏了",
        "做椅加热开到三档,屁股冰凉的": "座椅加热开到三档,屁股冰凉的",
        "天床现在开着没": "天窗现在开着没",
        "太压报警了怎么办": "胎压报警了怎么办",
        "手机连上车机兰牙的时候播放我收藏的歌": "手机连上车机蓝牙的时候播放我收藏的歌",
        "打开充电扣盖": "打开充电口盖",
        "打开兰牙,我要连手机": "打开蓝牙,我要连手机",
        "打开前后除双,再把外循环打开": "打开前后除霜,再把外循环打开",
        "打开少兵模式,我要去商场逛一会儿": "打开哨兵模式,我要去商场逛一会儿",
        "打开雨刮,再开一下打灯": "打开雨刮,再开一下大灯",
        "打开雨挂": "打开雨刮",
        "扫地鸡扫完了自动回座充": "扫地机扫完了自动回座充",
        "把两边后视静折起来": "把两边后视镜折起来",
        "把分为灯调成粉色": "把氛围灯调成粉色",
        "把加湿气打开,嗓子有点干": "把加湿器打开,嗓子有点干",
        "把天床遮阳帘拉上,太晒了": "把天窗遮阳帘拉上,太晒了",
        "每天早上七点半打开主驾做椅加热": "每天早上七点半打开主驾座椅加热",
        "沿途找三个充电战,按我的电量安排在哪充": "沿途找三个充电站,按我的电量安排在哪充",
        "熄火以后后视境自动折叠": "熄火以后后视镜自动折叠",
        "起床以后打开窗连烧一壶热水播放早间新闻": "起床以后打开窗帘烧一壶热水播放早间新闻",
        "雨挂开到最大,雨太大了": "雨刮开到最大,雨太大了",
        "香芬打开,换成森林那个味道": "香氛打开,换成森林那个味道",
        "冰厢冷藏调到四度": "冰箱冷藏调到四度",
        "加是器调到三档": "加湿器调到三档",
        "快到家的时候,打开热水气": "快到家的时候,打开热水器",
        "打开蓝雅": "打开蓝牙",
        "把加是器关了": "把加湿器关了",
        "氛围等调成蓝色的": "氛围灯调成蓝色的",
        "热水气打不着火了怎么办": "热水器打不着火了怎么办",
        "冲电口打开": "充电口打开",
        "加湿气开两个小时": "加湿器开两个小时",
        "后世镜加热打开": "后视镜加热打开",
        "座椅安摩十分钟": "座椅按摩十分钟",
        "座椅安摩打开": "座椅按摩打开",
        "把卧室窗连拉上": "把卧室窗帘拉上",
        "那个后背箱帮我打开一下": "那个后备箱帮我打开一下",
        "打开哨冰模式": "打开哨兵模式",
        "打开雾灯雨瓜开到最快": "打开雾灯雨刮开到最快",
        "把加湿气打开": "把加湿器打开",
        "把客厅灯关了再把窗连拉上": "把客厅灯关了再把窗帘拉上",
        "晚上七点以后上车把分为灯调成紫色": "晚上七点以后上车把氛围灯调成紫色",
        "蓝呀打开": "蓝牙打开",
        "车外温度低于零度的时候打开后世镜加热和方向盘加热": "车外温度低于零度的时候打开后视镜加热和方向盘加热",
        "进光灯打开": "近光灯打开",
        "遮阳连拉上": "遮阳帘拉上",
        "那个雨瓜开着的时候把车速提醒打开": "那个雨刮开着的时候把车速提醒打开",
        # 调 of 空调 heard by its common reading (diao)
        "明天早上七点打开空掉": "明天早上七点打开空调",
        "空掉开二十分钟": "空调开二十分钟",
        "空掉调到二十二度吧": "空调调到二十二度吧",
        "把空掉关了,车窗开条缝": "把空调关了,车窗开条缝",
        "把空掉关了,车窗降个缝": "把空调关了,车窗降个缝",
        "把空掉打开": "把空调打开",
        "把空掉打开,顺便问一下,那个ac键跟自动空调有啥区别": "把空调打开,顺便问一下,那个ac键跟自动空调有啥区别",
        "把空掉调到二十四度": "把空调调到二十四度",
        "现在这个电量,一直开着空掉能不能撑到苏州": "现在这个电量,一直开着空调能不能撑到苏州",
        "空掉开到二十二度": "空调开到二十二度",
        "空掉温度调到二十四度": "空调温度调到二十四度",
        "空掉风量调到三档": "空调风量调到三档",
        "车内温度高于二十八度或者湿度高于百分之七十时打开空掉": "车内温度高于二十八度或者湿度高于百分之七十时打开空调",
        '打开恐调,再开一下座椅加热': '打开空调,再开一下座椅加热',
        '倒车的时候后视镜下翻,然后,上车的时候打开恐调': '倒车的时候后视镜下翻,然后,上车的时候打开空调',
        '前挡风玻璃出雾打开': '前挡风玻璃除雾打开',
        '打开恐调': '打开空调',
        '好热啊,把空掉开大点,空调': '好热啊,把空调开大点,空调',
        '打开做椅加热,副驾的': '打开座椅加热,副驾的',
        '打开做椅加热和方向盘加热': '打开座椅加热和方向盘加热',
        '打开哨病模式': '打开哨兵模式',
        '打开空调,然后打开做椅加热': '打开空调,然后打开座椅加热',
        '打开哨病模式吧': '打开哨兵模式吧',
        '把头顶上那个玻璃,打开,就是那个天穿,天窗': '把头顶上那个玻璃,打开,就是那个天窗',
        '胎呀报警了,该怎么办': '胎压报警了,该怎么办',
        '蓝呀,蓝牙打开一下': '蓝牙打开一下',
        '那个后视境折叠一下': '那个后视镜折叠一下',
        '雨挂开到最快': '雨刮开到最快',
    }


def test_the_asr_variant_is_seeded_and_swaps_one_or_two_characters_of_a_same_or_near_sound():
    near = spoken_lexicon().sound.near
    text = "把空调调到二十四度然后打开座椅加热"
    plain, toned = lazy_pinyin(text, style=Style.NORMAL), lazy_pinyin(text, style=Style.TONE3)  # 调 of 空调: tiao
    variants = [asr(text, seed) for seed in range(40)]
    assert variants == [asr(text, seed) for seed in range(40)]
    assert asr("12345", 0) == "12345"
    tone_only = near_only = outside_terms = 0
    for variant in variants:
        swaps = [k for k, (a, b) in enumerate(zip(text, variant)) if a != b]
        assert len(variant) == len(text) and 1 <= len(swaps) <= 2
        for k in swaps:
            said, said_toned = lazy_pinyin(variant[k], style=Style.NORMAL)[0], lazy_pinyin(variant[k], style=Style.TONE3)[0]
            assert near.fold(said) == near.fold(plain[k])
            tone_only += said == plain[k] and said_toned != toned[k]
            near_only += said != plain[k]
        outside_terms += any(not (1 <= k < 3 or 13 <= k < 17) for k in swaps)  # 空调, 座椅加热
    assert tone_only and near_only and outside_terms


def test_the_asr_variant_is_a_spoken_variant_kind_and_leaves_what_an_engine_writes_right():
    assert [kind for kind, _ in spoken_variants("打开空调", 3, kinds=("asr",))] == ["asr"]
    for seed in range(20):
        assert asr("上一首", seed) == "上一首"  # an action of the lexicon, and common characters
        assert sum(a != b for a, b in zip("打开空调", asr("打开空调", seed))) == 1  # only 空调 can slip
