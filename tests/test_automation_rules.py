"""The automation rules (spec automation-tasks.md) on hand-marked spans: one test per spec example,
the spec line in a comment, plus the rules the spec states without an example. No model here: the
spans are given, so a failure is a rule's fault."""

import pytest

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation.intents import follow_named_device, resolve_intent
from fastslow.models.automation.rules import analyse, join_split_object
from fastslow.models.automation.rules import (
    DEFAULT, add_missing_verb, assemble, automation_text, duration_condition, inherit_location,
    inheritance_mode, is_builtin, is_memo_management, is_super_task_mention, keep_negation, memo_edit_group,
    once_condition,
    parse_markup,
    plain_groups, remind_say, reminder_from_noun, rewrite_reminder, shared_verb_split, spans_to_tags,
    super_task_clause,
    tags_to_spans, to_markup, unconditional_kind,
)

LEX = load_automation_lexicons()


def groups(markup: str) -> list[tuple]:
    """(condition, [subqueries], builtin) of every group the rules build from the marked spans."""
    text, spans = parse_markup(markup)
    return [(g["condition"], [q["subquery"] for q in g["querys"]], bool(g.get("builtin")))
            for g in assemble(analyse(text, LEX), spans)]


# ---------------------------------------------------------------- spec examples, one test each

def test_output_target_example():
    # 输出目标: {"condition": "上车时", "querys": [{"subquery": "打开空调", "intent": "设备控制"}]}
    assert groups("[C:上车时][A:打开空调]") == [("上车时", ["打开空调"], False)]


def test_everything_before_jiu_is_the_condition():
    # 复合条件完整性: 晚饭前20分钟后转向灯关闭就风量调高 → condition = 晚饭前20分钟后转向灯关闭, action = 风量调高
    assert groups("[C:晚饭前20分钟后转向灯关闭]就[A:风量调高]") == [("晚饭前20分钟后转向灯关闭", ["风量调高"], False)]


def test_every_qie_part_stays_in_the_condition():
    # 复合条件完整性: 关闭后排空调且副驾座椅加热开启时打开副驾座椅通风 → condition = 关闭后排空调且副驾座椅加热开启时
    assert groups("[C:关闭后排空调且副驾座椅加热开启时][A:打开副驾座椅通风]") == \
        [("关闭后排空调且副驾座椅加热开启时", ["打开副驾座椅通风"], False)]


def test_condition_never_binds_left():
    # 不向左回溯: 播放音乐上车时打开空调 → [null: 播放音乐], [上车时: 打开空调]
    assert groups("[A:播放音乐][C:上车时][A:打开空调]") == [(None, ["播放音乐"], False), ("上车时", ["打开空调"], False)]


def test_several_conditions_each_have_their_scope():
    # 多个条件各自作用域: 上车时打开空调下车时关闭空调
    assert groups("[C:上车时][A:打开空调][C:下车时][A:关闭空调]") == \
        [("上车时", ["打开空调"], False), ("下车时", ["关闭空调"], False)]


def test_or_joined_triggers_stay_one_condition():
    # 或连接多个触发条件: 主驾有人上车时或车内温度低于10度时或主驾系上安全带时打开空调 → one group, 打开主驾空调
    assert groups("[C:主驾有人上车时或车内温度低于10度时或主驾系上安全带时][A:打开空调]") == \
        [("主驾有人上车时或车内温度低于10度时或主驾系上安全带时", ["打开主驾空调"], False)]


def test_or_joined_triggers_marked_separately_are_merged():
    # same rule when the tagger marks each trigger on its own: the actions are not repeated
    assert groups("[C:上车时]或[C:车内温度低于10度时][A:打开空调]") == [("上车时或车内温度低于10度时", ["打开空调"], False)]


def test_deleting_a_custom_habit_is_default():
    # default 场景: {"condition": "default", "querys": [{"subquery": "删除自定义习惯", "intent": "系统控制"}]}
    text, spans = parse_markup("[A:删除自定义习惯]")
    assert assemble(analyse(text, LEX), spans) == [{"condition": "default",
                                           "querys": [{"subquery": "删除自定义习惯", "intent": "系统控制"}]}]


def test_unconditional_reminder_is_default():
    # default 场景: {"condition": "default", "querys": [{"subquery": "提醒我去买菜", "intent": "提醒"}]}
    text, spans = parse_markup("[A:提醒我去买菜]")
    assert assemble(analyse(text, LEX), spans) == [{"condition": "default",
                                           "querys": [{"subquery": "提醒我去买菜", "intent": "提醒"}]}]


def test_turning_reminders_on_is_null_not_default():
    # 反例: 打开提醒：普通无条件单意图，condition=null，intent 为提醒，不属于 default
    assert groups("[A:打开提醒]") == [(None, ["打开提醒"], False)]


@pytest.mark.parametrize("subquery", ["把提醒打开", "把所有提醒关掉", "提醒功能先关了", "关闭全部提醒"])
def test_reminders_switched_on_or_off_are_reminder_intent_whatever_the_classifier_says(subquery):
    # 反例: 打开提醒 ... intent 为提醒 (a toggle of reminders, not of a device)
    assert resolve_intent(subquery, "设备控制", LEX) == "提醒"
    assert resolve_intent(subquery, "车载控制", LEX) == "提醒"


def intents_after(groups):
    return [q["intent"] for g in follow_named_device(groups, LEX) for q in g["querys"]]


def test_a_control_that_names_no_device_acts_on_the_device_named_before_it():
    def group(condition, *pairs):
        return {"condition": condition, "querys": [{"subquery": s, "intent": i} for s, i in pairs]}

    assert intents_after([group("烘干机门没关上的时候", ("别让它转", "车载控制"))]) == ["设备控制"]  # its condition's
    assert intents_after([group(None, ("把卧室灯打开", "设备控制")),
                          group("十一点以后", ("把它关了", "车载控制"))]) == ["设备控制", "设备控制"]  # the last one named
    assert intents_after([group("主驾车窗打开的时候", ("自动关上", "设备控制"))]) == ["车载控制"]
    assert intents_after([group("下雨的时候", ("关上", "车载控制"))]) == ["车载控制"]  # nothing named: the classifier's
    assert intents_after([group("烘干机门没关上的时候", ("提醒我", "提醒"))]) == ["提醒"]  # no control: as it is
    # a fridge is a home's unless said as the car's (车载冰箱); a gas stove is a home's
    assert intents_after([group("冰箱门没关好的时候", ("响铃报警", "车载控制"))]) == ["设备控制"]
    assert intents_after([group("燃气灶火灭了", ("自动关气", "车载控制"))]) == ["设备控制"]
    assert resolve_intent("打开车载冰箱", "设备控制", LEX) == "车载控制"
    assert resolve_intent("把窗户关了", "车载控制", LEX) == "设备控制"  # a home has windows too
    assert resolve_intent("后排左边窗户关上", "设备控制", LEX) == "车载控制"  # a seat makes it the car's
    # a built-in behaviour keeps the intent its rule gave it (the car's), and still names its device for later
    builtin = {**group("电池温度太低的时候", ("自动限制充电功率", "车载控制")), "builtin": True}
    assert intents_after([builtin]) == ["车载控制"]
    cooker = {**group("扫地机器人没电了", ("自己回去充电", "设备控制")), "builtin": True}
    assert intents_after([cooker, group("每天早上十点", ("开始扫地", "车载控制"))]) == ["设备控制", "设备控制"]


@pytest.mark.parametrize("action", ["那个提醒先关一下", "把所有提醒关掉", "打开提醒"])
def test_reminders_switched_on_or_off_are_no_memo_item(action):
    # 反例: 打开提醒：普通无条件单意图，condition=null — said object first too
    assert not is_memo_management(action, LEX)


def test_a_device_named_after_reminders_keeps_the_device_rule():
    assert resolve_intent("把提醒灯打开", "车载控制", LEX) == "设备控制"  # 灯, named without a seat


def test_reminder_with_a_trigger_is_not_default():
    # 反例: 创建长途驾驶前检查水和食物的提醒：condition 应为 长途驾驶前，不属于 default
    assert groups("创建[C:长途驾驶前][A:检查水和食物的提醒]") == [("长途驾驶前", ["提醒我检查水和食物"], False)]


def test_duration_becomes_chixu_and_the_verb_is_added():
    # 持续时间: 座椅加热十分钟 → {"condition": "持续十分钟", "querys": [{"subquery": "打开座椅加热"}]}
    assert groups("[A:座椅加热][D:十分钟]") == [("持续十分钟", ["打开座椅加热"], False)]


def test_notify_me_becomes_remind_me_under_a_condition():
    # 提醒改写: 电量低于20%时通知我立刻充电 → 电量低于20%时: 提醒我立刻充电
    assert groups("[C:电量低于20%时][A:通知我立刻充电]") == [("电量低于20%时", ["提醒我立刻充电"], False)]


def test_no_management_clause_without_a_super_task_keyword():
    # 超级任务反例: 学校放学时段开启警示灯 → no management agent is added
    assert groups("[C:学校放学时段][A:开启警示灯]") == [("学校放学时段", ["开启警示灯"], False)]


def test_time_words_in_reminder_content_become_remind_say():
    # 提醒我说: 明天八点提醒我后天晚上去露营 → 明天八点: 提醒我说后天晚上去露营
    assert groups("[C:明天八点][A:提醒我后天晚上去露营]") == [("明天八点", ["提醒我说后天晚上去露营"], False)]


def test_pure_condition_gets_empty_querys():
    # 纯条件句: [{"condition": "停车超过90分钟时", "querys": []}]
    text, spans = parse_markup("[C:停车超过90分钟时]")
    assert assemble(analyse(text, LEX), spans) == [{"condition": "停车超过90分钟时", "querys": []}]


@pytest.mark.parametrize("condition, action", [
    # 条件负例: the spec's negative list, every one flagged builtin
    ("走远时", "车门上锁"), ("锁车时", "关闭车窗"), ("车辆解锁时", "鸣笛"), ("倒车时", "后视镜自动下翻"),
    ("停车时", "后视镜自动折叠"), ("离车时", "打开哨兵模式"), ("车辆超速时", "提醒我"), ("并线时", "打开后向来车辅助"),
    ("低速行驶时", "提示我"), ("红绿灯时", "提醒我"), ("车道偏离时", "打开辅助"), ("上车时", "打开冰箱"),
    ("雨天时", "打开雾灯建议"), ("安全带未系时", "提醒我"), ("超速时", "打开告警限速"),
])
def test_builtin_vehicle_behaviours_are_flagged(condition, action):
    [(cond, subs, builtin)] = groups(f"[C:{condition}][A:{action}]")
    assert (cond, builtin) == (condition, True)
    assert subs == ["提醒我" if action == "提示我" else action]


# ---------------------------------------------------------------- rules the spec states without an example

def test_ordinary_automation_is_not_builtin():
    assert not is_builtin("上车时", ["打开空调"], LEX)
    assert not is_builtin("上车时", ["打开冰箱", "播放音乐"], LEX)  # every action must be built-in


def test_duration_with_a_trigger_is_trigger_plus_chixu():
    # 若同时存在触发事件，则改写为 触发条件+持续+时间
    assert groups("[C:上车后][A:座椅加热][D:十分钟]") == [("上车后持续十分钟", ["打开座椅加热"], False)]
    assert duration_condition(None, ["持续半小时"]) == "持续半小时"


@pytest.mark.parametrize("said, rewritten", [
    ("播报电量", "提醒我电量"), ("提示我关窗", "提醒我关窗"), ("叫我起床", "提醒我起床"), ("喊我充电", "提醒我充电"),
    ("通知我挪车", "提醒我挪车"), ("告诉我路况", "提醒我路况"), ("报告车速", "提醒我车速"), ("念一下新闻", "提醒我新闻"),
    ("提醒买牛奶", "提醒我买牛奶"), ("打开空调", "打开空调"),
    ("提前叫我", "提前提醒我"), ("准时通知我出发", "准时提醒我出发"),  # when it is to come stays before it
    ("提前打开空调", "提前打开空调"),
])
def test_every_reminder_verb_becomes_remind_me(said, rewritten):
    # 提醒改写: 播报、提示、叫我、喊我、通知我、告诉我、报告、念一下等表述统一改写为 提醒我
    assert rewrite_reminder(said, LEX) == rewritten


def test_reminder_rewrite_only_with_a_condition():
    assert groups("[A:通知我明天开会]") == [(None, ["通知我明天开会"], False)]


def test_remind_say_needs_a_time_word_in_the_content():
    assert remind_say("提醒我带伞", LEX) == "提醒我带伞"
    assert remind_say("提醒我周五去体检", LEX) == "提醒我说周五去体检"
    assert remind_say("提醒我喝一点水", LEX) == "提醒我喝一点水"  # 一点 = a bit, not one o'clock
    assert remind_say("提醒我说明天开会", LEX) == "提醒我说明天开会"


def test_execute_once_is_prefixed_to_the_condition():
    # 执行一次: 执行一次+原始条件
    assert groups("[C:明天早上八点][A:打开空调]，[N:只执行一次]") == [("执行一次明天早上八点", ["打开空调"], False)]
    assert groups("[N:仅一次]，[C:到家后][A:打开热水器]") == [("执行一次到家后", ["打开热水器"], False)]
    assert once_condition("执行一次上车时") == "执行一次上车时"


def test_location_inheritance_all_seats_listed_together():
    # 继承 trigger 全部位置：动作语义上作用于所有位置时拆分
    assert inheritance_mode("主驾和副驾都有人时", LEX) == ("all", ["主驾", "副驾"])
    assert inheritance_mode("主驾副驾后排都有人的时候", LEX) == ("all", ["主驾", "副驾", "后排"])  # listed, no 和
    assert groups("[C:主驾和副驾都有人时][A:打开座椅加热]") == \
        [("主驾和副驾都有人时", ["打开主驾座椅加热", "打开副驾座椅加热"], False)]


def test_location_inheritance_nearest_seat():
    # 就近继承：动作更适合绑定最近位置时只继承最近位置
    assert inheritance_mode("副驾座椅加热开启且后排有人时", LEX) == ("nearest", ["后排"])
    assert groups("[C:后排有人上车时][A:把空调调到24度]") == [("后排有人上车时", ["把后排空调调到24度"], False)]


def test_no_location_inheritance_for_own_seat_reminders_and_seatless_actions():
    # 不继承：动作本身已有位置、提醒类动作、或动作语义不区分位置
    assert inherit_location("副驾有人时", ["打开主驾座椅加热", "提醒我系好安全带", "导航回家", "打开大灯"], LEX) == \
        ["打开主驾座椅加热", "提醒我系好安全带", "导航回家", "打开大灯"]


def test_super_task_keyword_adds_a_management_clause():
    # 超级任务: 包含超级任务相关关键词 → 新增管理动作子句, intent 系统控制
    text, spans = parse_markup("[A:创建一个智能场景]：[C:上车时][A:打开空调]")
    out = assemble(analyse(text, LEX), spans)
    assert out[0] == {"condition": DEFAULT, "querys": [{"subquery": "创建一个智能场景", "intent": "系统控制"}]}
    assert (out[1]["condition"], out[1]["querys"][0]["subquery"]) == ("上车时", "打开空调")


def test_a_management_clause_is_quoted_as_said_minus_fillers():
    # 一个 / 我的 are what was said; 我想 / 帮我 are fillers; a verb said after the keyword is its verb
    assert super_task_clause("删除我的智能场景", LEX) == "删除我的智能场景"
    assert groups("[A:我想编辑一下周末露营智能习惯]") == [(DEFAULT, ["编辑一下周末露营智能习惯"], False)]
    assert super_task_clause("把叫午休的智能场景停掉", LEX) == "把叫午休的智能场景停掉"
    assert super_task_clause("弄个自动化", LEX) == "弄个自动化"  # a verb in everyday words is its verb too
    assert super_task_clause("自动化", LEX) == "创建自动化"  # a bare keyword: the spec's added clause
    # a named rule is super-task management, not a memo, even when its name holds 提醒
    assert memo_edit_group("删掉喝水提醒那条规则", LEX) is None


def test_a_keyword_the_tagger_missed_still_gets_its_clause():
    assert groups("用自动化[C:上车时][A:打开空调]")[0] == (DEFAULT, ["创建自动化"], False)
    assert super_task_clause("用小米任务", LEX) == "创建小米任务"


@pytest.mark.parametrize("alias", ["自定义习惯", "智能习惯", "智能场景", "自动化", "小米任务", "超级任务", "HyperTask",
                                   "HyperMind", "小米任务大师", "智能任务", "任务大师", "自动化任务", "自动化场景",
                                   "自定义场景"])
def test_every_super_task_alias_is_default(alias):
    # 超级任务别称 / 关键词: 无条件管理 → default
    assert unconditional_kind("关闭" + alias, LEX) == DEFAULT


def test_changing_a_named_habit_is_super_task_management():
    # 明确修改/删除/取消某个已命名习惯或规则
    assert is_super_task_mention("删除回家习惯", LEX)
    assert is_super_task_mention("把下班规则关掉", LEX)
    assert not is_super_task_mention("打开空调", LEX)


@pytest.mark.parametrize("action, kind", [
    ("提醒我去买菜", DEFAULT), ("查看明天的日程", DEFAULT), ("我今天有什么安排", DEFAULT), ("删除周五的会议", DEFAULT),
    ("新建一个便签", DEFAULT), ("记一下车停在B2", DEFAULT), ("打开提醒", None), ("关闭备忘录", None),
    ("给张三发消息说会议推迟", None), ("打开空调", None),
])
def test_memo_management_is_default_and_everything_else_null(action, kind):
    # default: 无条件创建、修改、查询、删除备忘录类信息 (日程, 提醒, 备忘录, 便签, 安排, 事项)
    assert unconditional_kind(action, LEX) == kind
    assert is_memo_management(action, LEX) == (kind == DEFAULT)


def test_missing_verb_is_added_only_to_a_bare_device():
    assert add_missing_verb("座椅加热", LEX) == "打开座椅加热"
    # a plain command said with its verb is quoted (后排空调关掉 stays): only a duration's action is rewritten
    assert add_missing_verb("空调开", LEX) == "空调开"
    assert add_missing_verb("后排空调关掉", LEX) == "后排空调关掉"
    assert groups("[A:右后车窗关上]") == [(None, ["右后车窗关上"], False)]
    assert add_missing_verb("把空调打开", LEX) == "把空调打开"
    assert add_missing_verb("切回外循环", LEX) == "切回外循环"
    assert reminder_from_noun("打开提醒") == "打开提醒"


def test_scope_ends_at_a_scope_marker_and_at_a_sentence_end():
    assert groups("[C:上车时][A:播放音乐]，[E:另外][A:查一下天气]") == \
        [("上车时", ["播放音乐"], False), (None, ["查一下天气"], False)]
    assert groups("[C:下雨时][A:关天窗]。[A:播放一首晴天]") == [("下雨时", ["关天窗"], False), (None, ["播放一首晴天"], False)]
    assert groups("[C:上车时][A:打开空调]，[A:播放音乐]") == [("上车时", ["打开空调", "播放音乐"], False)]


def test_plain_queries_split_at_connectors_and_keep_context_with_the_request():
    assert [g.subqueries for g in plain_groups("打开空调然后播放音乐", LEX)] == [["打开空调", "播放音乐"]]
    assert [g.subqueries for g in plain_groups("打开空调和座椅加热", LEX)] == [["打开空调", "打开座椅加热"]]
    assert [g.subqueries for g in plain_groups("打开氛围灯和解锁车门", LEX)] == [["打开氛围灯", "解锁车门"]]
    # 再 before someone other than 我 starts a request of its own; 再给我 goes on with the one before
    assert [g.subqueries for g in plain_groups("后排车窗降一半再给老婆打个电话", LEX)] == [["后排车窗降一半", "给老婆打个电话"]]
    assert [g.subqueries for g in plain_groups("音量再给我调小一点", LEX)] == [["音量再给我调小一点"]]
    assert [g.subqueries for g in plain_groups(automation_text("无聊死了，放首歌"), LEX)] == [["无聊死了，放首歌"]]
    assert plain_groups("，，，", LEX) == []


def test_markup_and_tags_round_trip():
    text, spans = parse_markup("帮我[C:上车时][A:打开空调][D:十分钟]")
    assert text == "帮我上车时打开空调十分钟"
    assert to_markup(text, spans) == "帮我[C:上车时][A:打开空调][D:十分钟]"
    assert tags_to_spans(text, spans_to_tags(text, spans)) == spans
    assert automation_text("  把温度调到 24 度。") == "把温度调到24度"
    assert automation_text("ＨｙｐｅｒＴａｓｋ，上车时") == "HyperTask，上车时"


# ---------------------------------------------------------------- negation stays with its action

@pytest.mark.parametrize("markup, condition, action", [
    ("[C:开会的时候]别给我[A:打电话]", "开会的时候", "别给我打电话"),
    ("[C:下雨时]不要[A:打开天窗]", "下雨时", "不要打开天窗"),
    ("[C:到家时千万别]再帮我[A:开空调]", "到家时", "千万别再帮我开空调"),  # swallowed by the condition
    ("[C:上车时][A:打开空调]", "上车时", "打开空调"),  # nothing to keep
])
def test_a_negation_before_an_action_is_kept_in_the_action(markup, condition, action):
    text, spans = parse_markup(markup)
    kept = keep_negation(analyse(text, LEX), spans)
    assert [sp.text for sp in kept if sp.kind == "C"] == [condition]
    assert [sp.text for sp in kept if sp.kind == "A"] == [action]
    assert all(text[sp.start: sp.end] == sp.text for sp in kept)


# ---------------------------------------------------------------- default: editing a memo item is one request

@pytest.mark.parametrize("query, subquery", [
    ("帮我删掉昨天建的那个提醒", "删掉昨天建的那个提醒"),  # 那个 splits nothing, 建 is not a new memo
    ("把下午那个提醒删了", "把下午那个提醒删了"),  # 把下午 is no 把…就 trigger
    ("把会议推迟到下午三点", "把会议推迟到下午三点"),
    ("查一下我明天有什么安排", "查一下我明天有什么安排"),
    ("念一下明天的日程", "念一下明天的日程"),  # read out now: the time dates the item
])
def test_deleting_changing_or_looking_up_a_memo_item_is_one_default_request(query, subquery):
    group = memo_edit_group(query, LEX)
    assert (group.condition, group.subqueries) == ("default", [subquery])


@pytest.mark.parametrize("query", [
    "十分钟后提醒我看一下烤箱",  # a new reminder with a delay
    "长途驾驶前提醒我检查胎压",  # spec: 长途驾驶前 is a condition
    "给张经理发消息说会议推迟",  # a message, not a memo
    "如果明天下雨就取消提醒",  # a trigger
    "提前十分钟提醒我开会",  # a reminder's lead time
    "打开提醒",  # spec 反例: the reminder function, null
    "每天早上八点念一下今天的日程",  # read out at a time said first: a reminder with its condition
])
def test_memo_edit_rule_leaves_new_reminders_messages_and_triggers_alone(query):
    assert memo_edit_group(query, LEX) is None


# ---------------------------------------------------------------- built-in behaviours phrased anew

@pytest.mark.parametrize("condition, action", [
    # the class behind 条件负例 (builtin_functions.txt, automation view): a situation the car watches, and
    # a built-in function, a warning or a reminder under it
    ("紧急刹车时", "打开危险警示灯"), ("挂倒档以后", "打开360影像"), ("前方有障碍物的时候", "发出警报声"),
    ("跟车太近时", "座椅震动"), ("出现疲劳的时候", "提醒我"),
    # under a plain moment of the car (熄火, 天黑) only a built-in function counts
    ("天色变暗天黑以后", "自动开启近光灯"), ("熄火以后", "车门自动落锁"),
])
def test_builtin_behaviours_phrased_anew_are_flagged(condition, action):
    [(cond, subs, builtin)] = groups(f"[C:{condition}][A:{action}]")
    assert (cond, subs, builtin) == (condition, [action], True)


@pytest.mark.parametrize("condition, action", [
    ("到幼儿园门口的时候", "打开双闪"),  # the user's own place: the user's task
    ("熄火以后", "提醒我拿钥匙"),  # a moment of the car and a personal reminder
    ("天黑以后", "打开氛围灯"),  # a moment and no built-in function
    ("车速超过一百的时候", "提醒我看一下油耗"),
])
def test_user_tasks_near_the_builtin_class_are_not_flagged(condition, action):
    assert not is_builtin(condition, [action], LEX)


def test_a_builtin_behaviour_is_vehicle_control_and_keeps_its_zidong():
    # what the car does by itself is 车载控制; 自动 is quoted as said (data/automation/README.md)
    text, spans = parse_markup("[C:紧急刹车时][A:自动打开双闪]")
    assert assemble(analyse(text, LEX), spans) == [{"condition": "紧急刹车时", "builtin": True,
                                           "querys": [{"subquery": "自动打开双闪", "intent": "车载控制"}]}]
    assert groups("[C:到家以后][A:自动打开客厅空调]") == [("到家以后", ["自动打开客厅空调"], False)]


def test_whole_words_at_edges_takes_the_longest_prefix_trigger_whatever_the_set_order(monkeypatch):
    """每当 and its 当 both end 放首歌每当: the condition takes 每当, in whatever order the process's string
    hashing lists the prefix triggers (a ``frozenset``); the first found would depend on it."""
    from fastslow.models.automation.rules import Span, whole_words_at_edges

    lex = LEX
    text = "放首歌每当上车了"
    spans = [Span("A", 0, 5, "放首歌每当", None), Span("C", 5, 8, "上车了", None)]
    prefixes = lex.triggers.terms("prefix")
    assert {"每当", "当"} <= prefixes
    for order in (("当", "每当"), ("每当", "当")):
        listed = order + tuple(sorted(prefixes - set(order)))
        monkeypatch.setattr(type(lex.triggers), "terms", lambda self, *categories, listed=listed: listed)
        action, condition = whole_words_at_edges(analyse(text, lex), spans)
        assert (action.text, condition.text) == ("放首歌", "每当上车了"), order


# ---------------------------------------------------------------- one verb, several devices: one subquery each

def test_one_verb_before_several_devices_is_one_subquery_per_device():
    assert groups("[C:上车的时候][A:打开空调和座椅加热]") == [("上车的时候", ["打开空调", "打开座椅加热"], False)]
    assert groups("[A:关掉客厅灯、卧室灯和台灯]") == [(None, ["关掉客厅灯", "关掉卧室灯", "关掉台灯"], False)]
    assert shared_verb_split("关掉所有的灯和空调", LEX) == ["关掉所有的灯", "关掉空调"]


def test_the_seat_said_with_the_first_device_goes_with_another_device_a_seat_has():
    assert shared_verb_split("打开副驾空调和座椅加热", LEX) == ["打开副驾空调", "打开副驾座椅加热"]
    assert shared_verb_split("打开主驾座椅通风和方向盘加热", LEX) == ["打开主驾座椅通风", "打开方向盘加热"]


@pytest.mark.parametrize("action", ["打开氛围灯和解锁车门", "把空调和座椅加热打开", "提醒我检查水和食物", "打开空调"])
def test_anything_but_one_verb_before_bare_devices_is_left_as_said(action):
    assert shared_verb_split(action, LEX) == [action]
