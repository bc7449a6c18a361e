"""Built-in vehicle behaviours as a class: "the condition is a situation the car senses itself"
combined with "the action is something the car does itself", each read from
features/lexicons/builtin_functions.txt (automation view). The phrasings here are new (none is in a data
file); each lexicon test removes one word class and shows the decision it made flips."""

from __future__ import annotations

import dataclasses

import pytest

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.features.spoken import strip_disfluencies
from fastslow.models.automation.rules import analyse, join_split_object
from fastslow.models.automation.rules import (
    builtin_domain, is_builtin, reminder_from_noun, strip_fillers, vehicle_situation,
)

LEX = load_automation_lexicons()


def without_category(lex, *categories: str):
    """``lex`` whose builtin_functions matcher lacks every term of ``categories``."""
    functions = lex.builtin_functions
    kept = [(t, c) for t, c in functions.category.items() if c not in categories]
    return dataclasses.replace(lex, builtin_functions=type(functions).build("builtin_functions", kept))


def without_terms(lex, *terms: str):
    functions = lex.builtin_functions
    kept = [(t, c) for t, c in functions.category.items() if t not in terms]
    return dataclasses.replace(lex, builtin_functions=type(functions).build("builtin_functions", kept))


@pytest.mark.parametrize("condition, actions", [
    ("开太快了", ["警告我"]),                       # speed, a warning
    ("驾驶员闭眼的时候", ["发出警报"]),             # driver state
    ("压线的时候", ["方向盘抖一下"]),               # lane, a signal to the driver
    ("安全带没系好就开车的时候", ["一直响"]),       # belts
    ("后备箱没盖严的时候", ["提醒我"]),             # doors
    ("快撞上前车的时候", ["自动刹车"]),             # distance, driver assistance
    ("有人靠近车的时候", ["开启哨兵录像"]),         # security
    ("锁车的时候", ["自动升起车窗"]),               # a part worked by the car itself
    ("下车以后", ["车辆自动上锁"]),                 # a state the user also uses, said with 自动
    ("挂倒档的时候", ["打开360全景"]),              # gear
    ("进隧道时", ["空调自动切到内循环"]),           # light sensor, climate by itself
    ("人离开车以后", ["自动锁车", "关窗"]),         # 自动 said once covers both actions
    ("打哈欠的时候", ["提醒我注意安全"]),           # advice
    ("锁车的时候", ["把车窗都给我关上"]),           # 都给我 said between changes nothing
    ("一上车", ["打开车载冰箱"]),                   # the car's fridge is a 冰箱
    ("热水器水烧好了", ["保温"]),
    ("门锁密码连续输错五次", ["锁住"]),             # the lock's own
    ("开门的时候后面来电动车了", ["报警"]),         # the car's door-opening warning
    ("车门没关好的时候", ["仪表上亮红灯"]),
])
def test_new_phrasings_of_the_class_are_built_in(condition, actions):
    assert is_builtin(condition, actions, LEX)


@pytest.mark.parametrize("condition, actions", [
    ("下雨的时候", ["关上车窗"]),                   # a part, not said to be by itself
    ("天黑的时候", ["自动打开氛围灯"]),             # comfort is never built-in
    ("熄火以后", ["自动关闭座椅加热"]),
    ("一熄火", ["启动扫地机"]),                     # a home device
    ("一下车", ["关闭日间行车灯"]),                 # a state the user sets tasks on, no 自动
    ("车速超过一百二的时候", ["提醒我当前车速"]),   # the user's own threshold
    ("胎压低于2.0的时候", ["提醒我"]),
    ("锁车以后", ["提醒我看一下车窗"]),             # a moment and a personal reminder
    ("车门没锁", ["提醒我车内温度"]),               # an event, but a reminder that is no advice
    ("进隧道的时候", ["打开车窗"]),                 # 开车 inside 打开车窗 is no situation
    ("洗衣机洗完了", ["自动打开烘干机"]),           # 烘干 of 烘干机: another appliance switched on
    ("水烧开的时候", ["提醒我"]),                   # a kettle tells no one: the user's own reminder
])
def test_user_tasks_near_the_class_stay_user_tasks(condition, actions):
    assert not is_builtin(condition, actions, LEX)


def test_situation_grades():
    assert vehicle_situation("车辆超速的时候", LEX) == "event"
    assert vehicle_situation("熄火以后", LEX) == "moment"
    assert vehicle_situation("上车的时候", LEX) == "state"
    assert vehicle_situation("胎压低于2.0的时候", LEX) == "state"  # a number the user sets
    assert vehicle_situation("车速超过120的时候", LEX) == "alarm"  # ... on the speed the car's own alarm takes
    assert vehicle_situation("车速超过的时候", LEX) == "moment"
    assert vehicle_situation("到家以后", LEX) is None


@pytest.mark.parametrize("category, condition, actions", [
    ("event", "驾驶员闭眼的时候", ["发出警报"]),     # the situations the car watches
    ("moment", "熄火后", ["自动关大灯"]),
    ("state", "下车以后", ["车辆自动上锁"]),
    ("adas", "挂倒挡的时候", ["打开360全景"]),        # the functions
    ("part", "下车以后", ["自动升起车窗"]),           # (under a state: under a moment 自动 alone says it)
    ("self", "锁车的时候", ["自动升起车窗"]),
    ("signal", "压线的时候", ["方向盘抖一下"]),
    ("advice", "打哈欠的时候", ["提醒我注意安全"]),
])
def test_each_word_class_of_the_lexicon_decides(category, condition, actions):
    assert is_builtin(condition, actions, LEX)
    assert not is_builtin(condition, actions, without_category(LEX, category))


def test_comfort_words_keep_their_part_from_counting():
    assert not is_builtin("天黑的时候", ["自动打开氛围灯"], LEX)
    assert is_builtin("天黑的时候", ["自动打开氛围灯"], without_category(LEX, "comfort"))  # 灯 is then a part


def test_one_situation_word_decides():
    assert is_builtin("后备箱没盖严的时候", ["提醒我"], LEX)
    assert not is_builtin("后备箱没盖严的时候", ["提醒我"], without_terms(LEX, "没盖严"))


def test_the_way_the_car_signals_is_no_noun_reminder():
    assert reminder_from_noun("语音提醒", LEX) == "语音提醒"
    assert reminder_from_noun("方向盘震动提醒", LEX) == "方向盘震动提醒"
    assert reminder_from_noun("检查水和食物的提醒", LEX) == "提醒我检查水和食物"


@pytest.mark.parametrize("said, quoted", [
    ("导航去附近的超充站一下", "导航去附近的超充站"),
    ("把后备箱打开一下", "把后备箱打开"),
    ("鸣笛一下", "鸣笛一下"),                       # a bare verb keeps its 一下
    ("提醒我休息一下", "提醒我休息一下"),           # so does a reminder
    ("关闭氛围灯呗", "关闭氛围灯"),
    ("打开空调行不行", "打开空调"),
])
def test_polite_tails_without_a_pause_leave_the_subquery(said, quoted):
    assert strip_fillers(said, LEX) == quoted


@pytest.mark.parametrize("said, quoted", [
    ("给我关上车窗", "关上车窗"),                   # before a verb 给我 is politeness
    ("给我妈打个电话", "给我妈打个电话"),           # before a person and a call it names whom to call
    ("给我老婆发个微信说我到了", "给我老婆发个微信说我到了"),
    ("帮我给我爸打视频电话", "给我爸打视频电话"),
])
def test_gei_wo_goes_as_politeness_and_stays_before_the_one_called(said, quoted):
    assert strip_fillers(said, LEX) == quoted


@pytest.mark.parametrize("said, heard", [
    ("你好小途音箱声音小一点", "音箱声音小一点"),
    ("嘿小舟副驾车窗开一条缝", "副驾车窗开一条缝"),
    ("小悠帮我把后备箱打开", "帮我把后备箱打开"),
    ("小途小途查下还剩多少电", "查下还剩多少电"),
    ("嘿小V后排空调关掉", "后排空调关掉"),  # a letter for a name
    ("小P小P 订张机票", "订张机票"),
    ("小声一点", "小声一点"),
    ("小米任务打开", "小米任务打开"),
    ("小区门口停车", "小区门口停车"),
])
def test_an_unknown_assistant_name_is_a_wake_word(said, heard):
    assert strip_disfluencies(said) == heard


def run_on(markup: str) -> list[tuple[str, str]]:
    from fastslow.models.automation.rules import parse_markup, split_run_on
    text, spans = parse_markup(markup)
    return [(sp.kind, sp.text) for sp in split_run_on(analyse(text, LEX), join_split_object(analyse(text, LEX), spans))]


@pytest.mark.parametrize("markup, expected", [
    # a spoken condition starts at 进 / 到 / 我 after a whole command (condition_subjects.txt, category start)
    ("[C:关掉音响进地下车库的时候][A:打开大灯]", [("A", "关掉音响"), ("C", "进地下车库的时候"), ("A", "打开大灯")]),
    ("[A:关掉台灯我躺下以后][A:把空调调成睡眠模式]", [("A", "关掉台灯"), ("C", "我躺下以后"), ("A", "把空调调成睡眠模式")]),
    # never inside a state (快到, 不到) or after a verb whose complement it is (调到, 导航回家)
    ("[C:导航去东站快到的时候][A:给小李打电话]", [("A", "导航去东站"), ("C", "快到的时候"), ("A", "给小李打电话")]),
    ("[C:把空调调到二十度电量不到三十的时候][A:关闭空调]",
     [("A", "把空调调到二十度"), ("C", "电量不到三十的时候"), ("A", "关闭空调")]),
])
def test_spoken_condition_starts_in_a_run_on(markup, expected):
    assert run_on(markup) == expected


def test_the_start_words_come_from_the_lexicon():
    subjects = LEX.condition_subjects
    kept = [(t, c) for t, c in subjects.category.items() if c != "start"]
    lex = dataclasses.replace(LEX, condition_subjects=type(subjects).build("condition_subjects", kept))
    from fastslow.models.automation.rules import parse_markup, split_run_on
    text, spans = parse_markup("[C:关掉收音机到学校门口的时候][A:提醒我]")
    assert [sp.kind for sp in split_run_on(analyse(text, LEX), join_split_object(analyse(text, LEX), spans))] == ["A", "C", "A"]
    assert [sp.kind for sp in split_run_on(analyse(text, lex), join_split_object(analyse(text, lex), spans))] == ["C", "A"]


@pytest.mark.parametrize("said, cut", [
    ("额导航去东站", 1), ("那啥，熄火以后关大灯", 3), ("额度用完的时候提醒我", 0), ("额外加一个提醒", 0), ("额", 0),
])
def test_leading_hesitations_the_parser_drops(said, cut):
    from fastslow.models.automation.rules import leading_hesitation
    assert leading_hesitation(said, LEX) == cut


def test_a_wake_word_after_a_hesitation_is_dropped_too():
    from fastslow.models.automation.parser import surface_of
    assert surface_of("额你好小鹏主驾车窗关上", LEX) == "主驾车窗关上"
    assert surface_of("额你好小鹏主驾车窗关上") == "额你好小鹏主驾车窗关上"  # the spoken layer alone keeps 额


def repaired(markup: str) -> list[tuple[str, str]]:
    from fastslow.models.automation.rules import parse_markup, repair_spans
    text, spans = parse_markup(markup)
    return [(sp.kind, sp.text) for sp in repair_spans(analyse(text, LEX), spans)]


@pytest.mark.parametrize("markup, expected", [
    # what the car does by itself, said subject first: the subject is the action's, not the condition's
    ("[C:锁车以后天窗][A:自动关上]", [("C", "锁车以后"), ("A", "天窗自动关上")]),
    ("[C:人离开以后后视镜自己][A:折起来]", [("C", "人离开以后"), ("A", "后视镜自己折起来")]),
    ("[C:车门打开时][A:亮起氛围灯]", [("C", "车门打开时"), ("A", "亮起氛围灯")]),  # a state with its verb stays
    # a verb with two objects is one action; two verbs are two
    ("[C:上车以后][A:打开座椅加热]和[A:后视镜加热]", [("C", "上车以后"), ("A", "打开座椅加热和后视镜加热")]),
    ("[C:上车以后][A:打开氛围灯]和[A:解锁车门]", [("C", "上车以后"), ("A", "打开氛围灯"), ("A", "解锁车门")]),
])
def test_spans_made_whole(markup, expected):
    assert repaired(markup) == expected


@pytest.mark.parametrize("markup, expected", [
    ("[C:要是下午五点以后][A:关上车库门]", None),  # nothing after: unchanged
    ("[C:要是车库门还开着]的话就[A:关上车库门]", [("C", "要是车库门还开着的话"), ("A", "关上车库门")]),
    ("[C:早上七点半让][A:音箱放新闻]", [("C", "早上七点半"), ("A", "让音箱放新闻")]),
    ("[C:如果堵车][A:把会议提前][D:二十分钟]", [("C", "如果堵车"), ("A", "把会议提前二十分钟")]),
    ("[A:座椅加热][D:二十分钟]", [("A", "座椅加热"), ("D", "二十分钟")]),  # a real duration stays
    # the 一下 of a managing verb before it (设置一下) is no part of the situation; 一下车 is one
    ("用超级任务设置[C:一下到家时][A:打开客厅灯]", [("C", "到家时"), ("A", "打开客厅灯")]),
    ("[C:一下车][A:打开空调]", None),
])
def test_condition_edges(markup, expected):
    from fastslow.models.automation.rules import parse_markup
    text, spans = parse_markup(markup)
    assert repaired(markup) == (expected or [(sp.kind, sp.text) for sp in spans])


def test_a_scope_end_between_spans_ends_the_condition():
    from fastslow.models.automation.rules import parse_markup, plan_groups
    for said, groups in [
        ("[C:晚上九点][A:提醒我收衣服]对了[A:把灯关了]", [("晚上九点", ["提醒我收衣服"]), (None, ["把灯关了"])]),
        ("[C:到机场的时候][A:提醒我拿行李]顺便[A:查一下航班]", [("到机场的时候", ["提醒我拿行李", "查一下航班"])]),
    ]:
        text, spans = parse_markup(said)
        assert [(g.condition, g.subqueries) for g in plan_groups(analyse(text, LEX), spans)] == groups


def test_about_to_and_a_verb_complement():
    assert repaired("快[C:放学的时候][A:提醒我去接孩子]") == [("C", "快放学的时候"), ("A", "提醒我去接孩子")]
    assert repaired("[A:把座椅调][C:到三档续航低于五十的时候][A:关闭座椅加热]") == \
        [("A", "把座椅调到三档"), ("C", "续航低于五十的时候"), ("A", "关闭座椅加热")]


@pytest.mark.parametrize("condition, actions", [
    ("车窗上升时夹到手", ["车窗自动停下"]), ("车辆溜坡的时候", ["自动刹住"]), ("前方有测速的时候", ["提醒我"]),
    ("检测到驾驶员没握方向盘时", ["发出警告"]), ("车速过快的时候", ["座椅震一下"]),
])
def test_more_situations_of_the_class(condition, actions):
    assert is_builtin(condition, actions, LEX)


def test_a_device_said_last_goes_to_an_action_said_to_happen_by_itself():
    assert repaired("[C:我一碰门把手车门][A:自动解锁]") == [("C", "我一碰门把手"), ("A", "车门自动解锁")]
    assert repaired("[C:我一碰门把手车门][A:解锁]") == [("C", "我一碰门把手车门"), ("A", "解锁")]


@pytest.mark.parametrize("condition, actions", [
    ("压着黄线开的时候", ["方向盘震一下"]),         # lane markings
    ("发动机过热的时候", ["警告我"]),               # engine and cooling
    ("车停着被人刮了的时候", ["开始录视频"]),       # the body knocked while parked, security
    ("宠物留在车里的时候", ["提醒我"]),             # someone left in the car
    ("过弯的时候", ["自动打开辅助照明"]),           # turning, lighting
    ("打转向灯的时候", ["打开盲区监测"]),
    ("天一亮", ["自动关大灯"]),                     # 一 inside the moment
    ("车身跑偏的时候", ["打开车道保持辅助"]),       # 开车 read first: the object after the verb is read again
    ("天窗夹住东西的时候", ["自动往回退"]),         # 自动 with no object: the part the condition names
    ("时速超过一百三的时候", ["提醒我"]),           # the car's speed alarm, set to a number
    ("车速超过九十的时候", ["报警"]),
    ("车道偏了的时候", ["打开车道辅助"]),           # the spec's 条件负例 said in other words
    ("变道的时候", ["把后方来车辅助打开"]),
    ("锁车的时候", ["把车窗关了"]),
    ("有人坐到马桶上的时候", ["坐圈自动加热"]),
])
def test_the_class_widened_by_category(condition, actions):
    assert is_builtin(condition, actions, LEX)


@pytest.mark.parametrize("condition, actions", [
    ("时速超过一百三的时候", ["提醒我别开太快"]),   # a reminder of the user's own words under a speed
    ("车速超过九十的时候", ["关上天窗"]),
    ("每天早上八点如果车门没锁", ["提醒我"]),       # a time the user sets: the user's task
    ("周五晚上九点胎压过低的话", ["提醒我"]),
    ("天窗夹住东西的时候", ["往回退"]),             # no 自动: the user's wish
])
def test_near_the_widened_class_the_user_keeps_the_task(condition, actions):
    assert not is_builtin(condition, actions, LEX)


def test_the_speed_alarm_is_a_word_class_of_the_lexicon():
    assert is_builtin("时速超过一百三的时候", ["提醒我"], LEX)
    assert not is_builtin("时速超过一百三的时候", ["提醒我"], without_category(LEX, "alarm"))


@pytest.mark.parametrize("action, rewritten", [
    ("打开车距提醒", "打开车距提醒"),               # a reminder function switched on
    ("关闭疲劳驾驶提醒", "关闭疲劳驾驶提醒"),
    ("打开空调的提醒", "提醒我打开空调"),           # a reminder whose content is a command
    ("开会提醒", "提醒我开会"),                     # 开 alone is too short to be the switch
])
def test_a_reminder_function_switched_is_no_reminder(action, rewritten):
    assert reminder_from_noun(action, LEX) == rewritten


@pytest.mark.parametrize("markup, expected", [
    # the object of a verb that takes a place goes back to it (导航|去公司到停车场的时候)
    ("[A:导航][C:去公司到停车场的时候][A:提醒我拿电脑]",
     [("A", "导航去公司"), ("C", "到停车场的时候"), ("A", "提醒我拿电脑")]),
    # the word a spoken condition starts with goes to the condition (关掉收音机进|地库的时候)
    ("[A:关掉收音机进][C:地库的时候][A:打开大灯]", [("A", "关掉收音机"), ("C", "进地库的时候"), ("A", "打开大灯")]),
    # nothing moves when no later condition start is left (导航|回家的时候)
    ("[A:导航][C:回家的时候][A:打开空调]", [("A", "导航"), ("C", "回家的时候"), ("A", "打开空调")]),
])
def test_a_run_on_cut_at_the_wrong_place_is_moved(markup, expected):
    assert run_on(markup) == expected


@pytest.mark.parametrize("markup, expected", [
    # a habit named by the request said before it (把…那个习惯, 把…的智能场景) is one management clause
    ("[A:把下雨关天窗]那个[A:习惯删掉]", [("A", "把下雨关天窗那个习惯删掉")]),
    ("[A:把下班放电台的][A:智能场景停掉]", [("A", "把下班放电台的智能场景停掉")]),
    ("[A:把空调打开][A:创建一个智能场景]", [("A", "把空调打开"), ("A", "创建一个智能场景")]),  # no 那个, no 的
    # a device or function said first and what it does by itself after it: one action
    ("[C:熄火以后][A:天窗][A:自动合上]", [("C", "熄火以后"), ("A", "天窗自动合上")]),
    ("[C:熄火以后][A:天窗][A:合上]", [("C", "熄火以后"), ("A", "天窗合上")]),  # its verb after it, as 关上
    ("[C:熄火以后][A:天窗][A:播放音乐]", [("C", "熄火以后"), ("A", "天窗"), ("A", "播放音乐")]),  # a request of its own
    # the second object starts after the joiner, not inside its word (和玄|关灯)
    ("[C:到家以后][A:打开车库门]和玄[A:关灯]", [("C", "到家以后"), ("A", "打开车库门和玄关灯")]),
    # a duration is its whole amount of time
    ("[A:把电暖器开一个][D:半小时]", [("A", "把电暖器开"), ("D", "一个半小时")]),
    ("[A:座椅通风开两个][D:钟头]", [("A", "座椅通风开"), ("D", "两个钟头")]),
    # a time point said after a whole command starts the condition (不向左回溯)
    ("[C:关掉氛围灯八点一刻][A:提醒我给花浇水]", [("A", "关掉氛围灯"), ("C", "八点一刻"), ("A", "提醒我给花浇水")]),
    ("[C:把音乐暂停明天早上][A:叫我起床]", [("A", "把音乐暂停"), ("C", "明天早上"), ("A", "叫我起床")]),
])
def test_more_spans_made_whole(markup, expected):
    assert repaired(markup) == expected


def test_a_second_object_cut_inside_its_word_is_the_whole_word():
    from fastslow.models.automation.metrics import rules_output
    from fastslow.models.automation.rules import parse_markup, repair_spans
    text, spans = parse_markup("[C:到家以后][A:打开车库门]和玄[A:关灯]")
    assert rules_output(text, repair_spans(analyse(text, LEX), spans), LEX) == [
        {"condition": "到家以后", "builtin": False, "querys": [{"subquery": "打开车库门"}, {"subquery": "打开玄关灯"}]}]


def test_a_duration_lasts_the_action_it_is_said_with():
    from fastslow.models.automation.metrics import rules_output
    from fastslow.models.automation.rules import parse_markup
    text, spans = parse_markup("[A:关掉阅读灯]然后[A:方向盘加热开][D:二十分钟]")
    assert rules_output(text, spans, LEX) == [
        {"condition": None, "builtin": False, "querys": [{"subquery": "关掉阅读灯"}]},
        {"condition": "持续二十分钟", "builtin": False, "querys": [{"subquery": "打开方向盘加热"}]}]


@pytest.mark.parametrize("content, said", [
    ("提醒我加九十八号的油", "提醒我加九十八号的油"),  # a grade of fuel, no day of the month
    ("提醒我五号交房租", "提醒我说五号交房租"),       # a day of the month
])
def test_a_number_beyond_a_month_is_no_date(content, said):
    from fastslow.models.automation.rules import remind_say
    assert remind_say(content, LEX) == said


@pytest.mark.parametrize("condition, actions, built_in", [
    # said to happen by itself in a situation the car senses: the car's, whatever it names
    ("前车突然切进来的时候", ["自动降低车速"], True),
    ("急刹车的时候", ["自动收紧安全带"], True),
    # ... but not what no car does by itself, nor a device a home has too, nor comfort
    ("熄火以后", ["自动播放音乐"], False),
    ("熄火以后", ["自动导航回家"], False),
    ("熄火以后", ["自动关空调"], False),
    ("天黑的时候", ["自动打开氛围灯"], False),
])
def test_what_the_car_is_said_to_do_by_itself(condition, actions, built_in):
    assert is_builtin(condition, actions, LEX) is built_in


@pytest.mark.parametrize("markup, expected", [
    # 然后 never joins two conditions: a whole command before it is a command (开到 read as a state)
    ("[C:座椅加热开到三档]然后[C:到公司前五分钟][A:关掉座椅加热]",
     [("A", "座椅加热开到三档"), ("C", "到公司前五分钟"), ("A", "关掉座椅加热")]),
    # a scope end said inside an action span ends it
    ("[C:油量不足的时候][A:提醒我加油此外明天限行吗]",
     [("C", "油量不足的时候"), ("A", "提醒我加油"), ("E", "此外"), ("A", "明天限行吗")]),
    # a super-task clause after a whole command said verb first is its own request
    ("[C:早上七点][A:打开卧室窗帘][A:把这个设成智能场景]",
     [("C", "早上七点"), ("A", "打开卧室窗帘"), ("A", "把这个设成智能场景")]),
    # the word the tagger gave the condition completes the command before it (关掉收音|机我下车以后)
    ("[A:关掉收音][C:机我下车以后][A:锁好车门]", [("A", "关掉收音机"), ("C", "我下车以后"), ("A", "锁好车门")]),
    # what a state is about, left at the end of the command before it, goes to the condition
    ("[A:关掉座椅通风车外温度降][C:到十度以下的时候][A:打开座椅加热]",
     [("A", "关掉座椅通风"), ("C", "车外温度降到十度以下的时候"), ("A", "打开座椅加热")]),
    # a time point and the command after it, tagged as one condition with nothing after (but a once marker)
    ("[C:后天晚上八点半关闭客厅空调][N:就这一次]", [("C", "后天晚上八点半"), ("A", "关闭客厅空调"), ("N", "就这一次")]),
])
def test_run_ons_and_clauses_the_tagger_left_joined(markup, expected):
    assert repaired(markup) == expected


def test_a_device_name_is_no_verb_that_takes_a_place():
    from fastslow.models.automation.rules import takes_place
    assert takes_place("打开导航", LEX) and takes_place("把温度调", LEX)
    assert not takes_place("打开空调", LEX)  # 调 ends 空调


@pytest.mark.parametrize("said, quoted", [
    ("副驾座椅往前挪一下", "副驾座椅往前挪一下"),   # 挪一下: the verb's own measure after a direction
    ("方向盘往上抬一下", "方向盘往上抬一下"),
    ("把尾门打开一下", "把尾门打开"),               # a polite tail after a request with an object
])
def test_one_verb_after_a_direction_keeps_its_measure(said, quoted):
    assert strip_fillers(said, LEX) == quoted


@pytest.mark.parametrize("markup, expected", [
    # a reminder after a sequence connector is its own request, whatever the action before it
    ("[C:机油压力过低的时候][A:仪表闪红灯并且提醒我]",
     [("C", "机油压力过低的时候"), ("A", "仪表闪红灯"), ("A", "提醒我")]),
    # a question with no request in it: its time is what it asks about (questions.txt)
    ("[C:这周六][A:有什么好玩的展览]", [("A", "这周六有什么好玩的展览")]),
    ("[C:后天][A:会下雪吗]", [("A", "后天会下雪吗")]),
    # ... but a request verb, a reminder or a memo item keeps the time a condition
    ("[C:这周六早上][A:查一下有什么好玩的展览]", [("C", "这周六早上"), ("A", "查一下有什么好玩的展览")]),
    ("[C:后天][A:有什么安排]", [("C", "后天"), ("A", "有什么安排")]),
])
def test_reminders_after_a_connector_and_questions(markup, expected):
    assert repaired(markup) == expected


def test_a_question_needs_the_question_lexicon():
    from fastslow.models.automation.rules import parse_markup, repair_spans
    text, spans = parse_markup("[C:后天][A:会下雪吗]")
    lex = dataclasses.replace(LEX, questions=None)
    assert [sp.kind for sp in repair_spans(analyse(text, lex), spans)] == ["C", "A"]


@pytest.mark.parametrize("said, cut", [
    ("座椅加热开二十分钟就行", 2),   # "that will do" after a request is no 就 of a condition
    ("把天窗关上就好了", 3),
    ("到家就行", 0),                 # too short to be a request with a tail
    ("打开空调就行了吗", 0),         # not at the end
    ("上车时打开座椅加热一次就好", 0),  # a once marker of its own
])
def test_that_will_do_is_dropped_after_a_request(said, cut):
    from fastslow.models.automation.rules import done_tail
    assert done_tail(said, LEX) == cut


@pytest.mark.parametrize("markup, expected", [
    # a sentence ends a request said inside one action span, and with it the condition's scope
    ("[C:出门的时候][A:关掉扫地机。播放新闻]", [("C", "出门的时候"), ("A", "关掉扫地机"), ("A", "播放新闻")]),
    # a condition said first and its command, tagged as one action (的路上: triggers.txt)
    ("[A:下班的路上打开座椅按摩]", [("C", "下班的路上"), ("A", "打开座椅按摩")]),
    ("[A:提醒我下班的路上买牛奶]", [("A", "提醒我下班的路上买牛奶")]),  # a reminder's time is its content
])
def test_one_action_span_holding_a_scope(markup, expected):
    assert repaired(markup) == expected


def test_a_duration_after_a_fragment_keeps_the_request_whole():
    from fastslow.models.automation.metrics import rules_output
    from fastslow.models.automation.rules import parse_markup
    text, spans = parse_markup("[A:卧室风扇]再[A:吹][D:二十分钟]")
    assert [g["condition"] for g in rules_output(text, spans, LEX)] == ["持续二十分钟"]


@pytest.mark.parametrize("condition, actions", [
    ("冰箱结霜的时候", ["自动化霜"]),              # a fridge defrosts itself
    ("洗衣服的时候", ["自动投放洗衣液"]),          # a washing machine doses itself
    ("空气变差了", ["净化器自动切换到自动模式"]),  # a purifier goes to auto
    ("门关好后", ["门锁自动反锁"]),                # a door lock locks itself
    ("扫完地以后", ["自动回基站"]),                # a robot goes back to its dock
    ("燃气泄漏的时候", ["自动关掉燃气阀"]),        # a gas detector shuts its valve
    ("门锁密码输错五次时", ["自动锁定"]),          # a lock locks itself after wrong codes
    ("洗衣机洗完以后", ["自动烘干"]),              # a washer-dryer dries by itself
    ("扫地机器人被困住的时候", ["提醒我"]),        # a robot's own alert: it is stuck
    ("加湿器滤芯该换了", ["提醒我"]),              # an appliance's own service alert
    ("智能锁被撬的时候", ["提醒我"]),              # a lock's own alarm
    ("大门门锁电量低的时候", ["提醒我换电池"]),    # a lock warns of its own battery
    ("冰箱冷冻温度过高时", ["提醒我"]),            # a fridge's own alarm
    ("烘干机门没关上的时候", ["不让它启动"]),      # a machine refuses to start with its door open
    ("净化器水箱空了", ["自动停止工作"]),          # an appliance stops when it runs dry
    ("取暖器被碰倒的时候", ["自动断电"]),          # a heater's tip-over switch
    ("拖地机器人到台阶边的时候", ["停下"]),        # a robot's cliff sensor
    ("暖风机刚开热风的时候", ["不吹冷风"]),        # a heater's own warm-up
    ("家里门锁被撬开的时候", ["发出警报"]),        # 警报 is an alarm as 报警 is
    ("扫地机没电的时候", ["回去充电"]),            # a robot docks itself
    ("加湿器没水的时候", ["自动停机"]),            # 没水 said without 了
    ("空气质量变差的时候", ["空气净化器自动调高风速"]),
    ("检测到烟雾的时候", ["烟雾报警器响"]),        # the alarm sounding, though 报警 is inside its name
    ("门没反锁的时候", ["提醒我"]),                # a lock's own reminder
    ("门锁密码连续输错五次", ["报警"]),            # wrong codes said with 连续
    ("净化器检测到空气变差", ["自动调大风量"]),
    ("燃气灶火灭了", ["自动关气"]),                # a stove's flame-out valve
    ("关门以后", ["门锁自动上锁"]),
    ("洗衣机洗完的时候", ["提醒我"]),              # an appliance tells that its work is done
    ("热水器烧好了", ["提醒我一声"]),
    ("净水器滤芯快到期的时候", ["提醒我"]),
    ("灶台干烧的时候", ["自动关火"]),              # a stove's dry-boil guard
    ("燃气灶一打开", ["油烟机跟着开"]),            # a hood linked to its stove
    ("洗衣机洗好了", ["自己断电"]),                # 自己 said for 自动
    ("冰箱温度高的时候", ["加大制冷"]),
    ("空调关掉以后", ["自动吹干"]),                # an air conditioner dries its coil
    ("除湿机水箱满了", ["自动停机"]),
])
def test_a_home_appliances_own_behaviour_is_built_in_and_the_homes(condition, actions):
    assert builtin_domain(condition, actions, LEX) == "home"


@pytest.mark.parametrize("condition, actions", [
    ("洗完衣服", ["提醒我晾衣服"]),                # a reminder of the user's own
    ("洗衣机洗完的时候", ["提醒我晾衣服"]),        # the user's errand, though the machine tells it is done
    ("饭煮好了", ["提醒我叫孩子吃饭"]),
    ("空气质量差的时候", ["打开净化器"]),          # a smart-home task: the user switches the purifier on
    ("到家的时候", ["自动打开客厅灯"]),            # no situation the appliance senses
    ("水浸传感器报警", ["关闭总阀"]),              # the user links a sensor to a valve
    ("洗衣机洗完之后", ["打开烘干机"]),            # another appliance: 烘干 is part of its name
    ("门锁电量低于百分之十的时候", ["提醒我"]),    # a threshold the user sets
    ("开火做饭的时候", ["打开厨房灯"]),            # the stove links its hood, not the user's lights
])
def test_a_task_the_user_sets_at_home_is_not_built_in(condition, actions):
    assert builtin_domain(condition, actions, LEX) is None


def test_the_cars_behaviours_stay_the_cars():
    assert builtin_domain("走远时", ["车门上锁"], LEX) == "car"
    assert builtin_domain("车门关上以后", ["自动上锁"], LEX) != "home"
    assert builtin_domain("压线的时候", ["方向盘抖一下"], LEX) == "car"
    assert builtin_domain("车子一解锁", ["鸣个笛"], LEX) == "car"
    assert builtin_domain("车速超过二十公里", ["把车门锁上"], LEX) == "car"  # the car locks itself as it drives off
    assert builtin_domain("开车门的时候", ["车内灯亮起来"], LEX) == "car"    # its courtesy light
    assert builtin_domain("车速超过一百二的时候", ["提醒我减速"], LEX) is None  # a threshold the user sets
    assert builtin_domain("开车门的时候", ["打开氛围灯"], LEX) is None
    assert builtin_domain("换道的时候", ["打开盲区监测"], LEX) == "car"  # the function named whole, as a device
    assert builtin_domain("车门没关紧", ["禁止起步"], LEX) == "car"
    assert builtin_domain("胎压太低的时候", ["仪表亮灯"], LEX) == "car"
    assert builtin_domain("胎压低于二点零的时候", ["提醒我"], LEX) is None  # a threshold the user sets
    assert builtin_domain("车内太热的时候", ["自动开窗通风"], LEX) == "car"
    assert builtin_domain("车内太热的时候", ["打开空调"], LEX) is None
    assert builtin_domain("车外气温低于零度", ["提醒我小心路滑"], LEX) == "car"  # the car's icy-road warning
    assert builtin_domain("倒车的时候", ["音乐小一点"], LEX) == "car"  # media ducks while reversing
    assert builtin_domain("倒车的时候", ["把导航音量调小"], LEX) is None
    assert builtin_domain("熄火以后", ["大灯延时关闭"], LEX) == "car"  # follow-me-home lights
    assert builtin_domain("跟前车跟太近的时候", ["自动刹车"], LEX) == "car"
    assert builtin_domain("锁车的时候", ["把窗户都关上"], LEX) == "car"  # the spec's 锁车时关闭车窗  # the spec's 车辆解锁时鸣笛 said in other words


def test_a_set_time_makes_a_known_behaviour_the_users_task():
    assert builtin_domain("家门没关好的时候", ["报警"], LEX) == "home"
    assert builtin_domain("每天晚上十点半家门没关好的时候", ["报警"], LEX) is None
    assert builtin_domain("下车后", ["打开哨兵模式"], LEX) == "car"
    assert builtin_domain("下车后持续三个小时", ["打开哨兵模式"], LEX) is None  # how long: the user says
    assert builtin_domain("连续开车超过四小时", ["提醒我"], LEX) == "car"  # a threshold the car watches


@pytest.mark.parametrize("condition, actions, builtin", [
    ("燃气灶火灭了的时候", ["自动断气"], True),          # one home appliance's state, and what it does by itself
    ("热水壶水开了", ["自己跳闸"], True),
    ("洗衣机洗完了", ["自动打开烘干机"], False),         # another appliance switched on: the user's task
    ("洗衣机洗完了", ["断电"], False),                   # not said to happen by itself
    ("每天晚上十点洗衣机洗完了", ["自动断电"], False),    # a clock time the user sets
    ("空调开着的时候", ["自动关窗"], False),              # a window is another device: the user's task
    ("燃气灶开了两个小时以后", ["自动断气"], False),      # an amount of time the user sets
    ("冰箱停电恢复以后", ["自动开始制冷"], True),         # an appliance a car may have too, and no car named
    ("加湿器水箱没水的时候", ["自动关机"], True),
    ("风量调高时", ["自动导航到最近的充电站"], False),    # no appliance navigates by itself
])
def test_a_home_appliance_doing_something_by_itself_in_its_own_state_is_built_in(condition, actions, builtin):
    assert is_builtin(condition, actions, LEX) is builtin
