"""The automation rules on spoken-style queries: no punctuation, fillers,
wake words and polite tails, seats said as one word (主副驾, 前排), spoken clock times, 执行一次 said
in other words. Spans are given (no model), so a failure is a rule's fault; the queries are new,
none is in the training, dev or fixture data."""

import pytest

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation.parser import surface_of
from fastslow.models.automation.rules import analyse, join_split_object
from fastslow.models.automation.rules import (
    DEFAULT, Span, assemble, clock_times, command_cuts, demote_signalless_conditions, has_condition_signal,
    inheritance_mode, parse_markup, plain_groups, repair_spans, time_prefix,
)

LEX = load_automation_lexicons()


def groups(markup: str) -> list[tuple]:
    text, spans = parse_markup(markup)
    return [(g["condition"], [q["subquery"] for q in g["querys"]]) for g in assemble(analyse(text, LEX), spans)]


# ---------------------------------------------------------------- 带 trigger 的位置继承: one word, two seats

def test_one_word_for_both_front_seats_inherits_both():
    # 继承 trigger 全部位置：动作语义上作用于所有位置时拆分 (主副驾 / 前排 name 主驾 and 副驾 together)
    assert inheritance_mode("主副驾都有人的时候", LEX) == ("all", ["主驾", "副驾"])
    assert inheritance_mode("前排乘客都下车以后", LEX) == ("all", ["主驾", "副驾"])
    assert groups("[C:主副驾都系好安全带后][A:打开空调]") == \
        [("主副驾都系好安全带后", ["打开主驾空调", "打开副驾空调"])]
    assert groups("[C:前排有人坐下的时候][A:打开座椅通风]") == \
        [("前排有人坐下的时候", ["打开主驾座椅通风", "打开副驾座椅通风"])]


def test_a_front_row_word_before_another_seat_is_not_the_nearest_seat():
    # 就近继承: the seat nearest to the action (后排) wins over an earlier 前排 in another state
    assert inheritance_mode("关闭前排空调且后排有人时", LEX) == ("nearest", ["后排"])


# ---------------------------------------------------------------- 执行一次 said in other words

def test_once_variants_become_the_execute_once_prefix():
    # 执行一次: 限定词拼接到条件中，格式为 执行一次+原始条件 (the marker tagged as an N span)
    assert groups("[C:明天早上八点][A:打开空调][N:仅此一次]") == [("执行一次明天早上八点", ["打开空调"])]
    assert groups("[N:只执行这一次][C:明天七点][A:叫我起床]") == [("执行一次明天七点", ["提醒我起床"])]


def test_once_variant_inside_a_condition_or_action_span_moves_to_the_condition():
    # the marker left inside a span is still no part of the condition or the subquery
    assert groups("[C:只执行这一次明天七点][A:叫我起床]") == [("执行一次明天七点", ["提醒我起床"])]
    assert groups("[C:到家的时候][A:打开客厅灯只要一次]") == [("执行一次到家的时候", ["打开客厅灯"])]
    assert groups("[C:下班的时候][A:放点音乐就一次]") == [("执行一次下班的时候", ["放点音乐"])]
    assert groups("[C:上车时][A:打开座椅加热一次就好]") == [("执行一次上车时", ["打开座椅加热"])]


def test_a_once_word_inside_an_action_is_kept():
    # only a marker at an edge is one: 一次性 in the middle of a request stays
    assert groups("[C:到家时][A:把一次性杯子扔掉]") == [("到家时", ["把一次性杯子扔掉"])]


# ---------------------------------------------------------------- plain commands with a seat or window position

def test_seats_directions_and_device_names_are_no_condition_signal():
    # 条件定义: a condition needs a trigger, time or event; the 后 / 前 of 后排, 左后, 往后, 后视镜 is none
    for plain in ("副驾座椅往后调一点", "后排左边窗户关上", "左后车窗打开一半", "后排座椅加热调到最高",
                  "主驾后视镜往下调一点", "副驾座椅往前挪一点", "把主驾车窗打开一半"):
        assert not has_condition_signal(plain, LEX), plain
    for conditional in ("后排有人的时候打开空调", "上车后打开主驾座椅加热", "到家前十分钟打开空调"):
        assert has_condition_signal(conditional, LEX), conditional


def test_waiting_for_someone_is_a_condition_signal_and_waiting_a_moment_is_not():
    # 等我洗完澡|把浴霸关掉: 等 is too common a character to signal alone, 等我 / 等宝宝 / 等孩子 are not
    for conditional in ("等我洗完澡把浴霸关掉", "你等宝宝睡熟了再把音乐关了", "等孩子睡了把灯关掉"):
        assert has_condition_signal(conditional, LEX), conditional
    assert not has_condition_signal("等一下把空调关了", LEX)


def test_a_situation_with_le_running_on_into_what_acts_by_itself_is_a_condition_signal():
    # no trigger word, yet a condition: 洗衣机洗完了|自动断电 (an appliance's own behaviour, 条件负例's kin)
    for conditional in ("洗衣机洗完了自动断电", "电饭煲饭煮好了自动保温", "水开了自己断电", "扫地机扫完自动集尘",
                        "洗碗机洗完了，自动烘干", "人走远了车门自己锁上", "走远了车门自动落锁"):
        assert has_condition_signal(conditional, LEX), conditional
    assert not has_condition_signal("把洗衣机设成自动模式", LEX)


def test_a_seat_condition_span_without_a_signal_becomes_part_of_the_action():
    # a tagger's condition over a seat / direction (主驾座椅靠背往后|放一点) is the plain command it cuts
    text = "主驾座椅靠背往后放一点"
    spans = [Span("C", 0, 8, text[:8]), Span("A", 8, 11, text[8:])]
    assert demote_signalless_conditions(analyse(text, LEX), spans) == [Span("A", 0, 11, text)]
    text = "主驾后视镜往下调一点"
    spans = [Span("C", 0, 3, text[:3]), Span("A", 3, 10, text[3:])]
    assert demote_signalless_conditions(analyse(text, LEX), spans) == [Span("A", 0, 10, text)]


def test_a_real_seat_condition_stays():
    text = "后排有人的时候打开空调"
    spans = [Span("C", 0, 7, text[:7]), Span("A", 7, 11, text[7:])]
    assert demote_signalless_conditions(analyse(text, LEX), spans) == spans
    text = "副驾座椅往后就打开座椅通风"  # a condition before 就 is kept whole (复合条件完整性)
    spans = [Span("C", 0, 6, text[:6]), Span("A", 7, 13, text[7:])]
    assert demote_signalless_conditions(analyse(text, LEX), spans) == spans


# ---------------------------------------------------------------- spoken noise around the request

def test_wake_words_fillers_and_polite_tails_are_not_read():
    # what the parser reads: the spoken layer's strip_disfluencies of the query
    # 那个 before a time is not the spoken layer's hesitation; the condition's edge strip drops it
    assert surface_of("小爱同学那个明天早上七点叫我起床好吗") == "那个明天早上七点叫我起床"  # 好吗 after a whole request
    assert surface_of("小爱同学那个明天早上七点叫我起床，好吗") == "那个明天早上七点叫我起床"
    assert groups("[C:那个明天早上七点][A:叫我起床好吗]") == [("明天早上七点", ["提醒我起床"])]
    assert surface_of("你好小鹏下雨的时候关闭天窗") == "下雨的时候关闭天窗"
    assert surface_of("嗯嗯下班以后打开导航回家谢谢") == "下班以后打开导航回家"
    assert surface_of("呃，到家时打开空调，谢谢你") == "到家时打开空调"


def test_a_space_is_the_pause_it_stands_for():
    # as the router reads it: two requests, a request before a condition, a hesitation between pauses dropped
    assert surface_of("打开座椅通风 放点轻音乐") == "打开座椅通风，放点轻音乐"
    assert surface_of("打开后排空调 后排没人的时候关掉") == "打开后排空调，后排没人的时候关掉"
    assert surface_of("车内温度低于五度的时候 呃 打开方向盘加热") == "车内温度低于五度的时候，打开方向盘加热"
    assert surface_of("Wi-Fi 打开") == "Wi-Fi打开"  # a space next to a letter stays nothing


def test_a_pause_before_jiu_or_a_memos_content_parts_nothing():
    # 复合条件完整性: 就之前的所有内容整体构成 condition, a pause or a hesitation before 就 included
    assert surface_of("副驾坐了人 呃 就打开副驾空调") == "副驾坐了人就打开副驾空调"
    assert surface_of("我一到家 你就把客厅灯打开") == "我一到家你就把客厅灯打开"  # 你 spoken to before 就
    assert surface_of("新建一个便签 写上买牛奶") == "新建一个便签写上买牛奶"
    assert surface_of("帮我加个待办 给车买保险") == "帮我加个待办给车买保险"  # after a memo's item or verb
    assert surface_of("备忘录里加一条 给车做保养") == "备忘录里加一条给车做保养"
    assert surface_of("记一下 车停在B2 036") == "记一下车停在B2 036"
    assert surface_of("打开空调 记得关窗") == "打开空调，记得关窗"  # 记得 is no memo verb


def test_a_false_start_is_not_read():
    assert surface_of("打开 打开座椅通风") == "打开座椅通风"


def test_a_polite_tail_span_is_no_subquery():
    assert groups("[C:进入隧道的时候][A:关上车窗][A:好吗]") == [("进入隧道的时候", ["关上车窗"])]
    assert groups("[A:谢谢]") == [(None, ["谢谢"])]  # said alone it is the request (闲聊)


# ---------------------------------------------------------------- 持续时间: the spec's rewrite, not the raw verb

def test_duration_action_is_the_device_switched_on():
    # 持续时间: 座椅加热十分钟 → condition 持续十分钟, subquery 打开座椅加热
    assert groups("[A:加湿器开][D:一小时]") == [("持续一小时", ["打开加湿器"])]
    assert groups("[A:空调就开着][D:一个小时]") == [("持续一个小时", ["打开空调"])]
    assert groups("[A:开着座椅加热][D:二十分钟]") == [("持续二十分钟", ["打开座椅加热"])]
    assert groups("[A:座椅通风再开][D:半个小时]") == [("持续半个小时", ["打开座椅通风"])]
    assert groups("[A:空调先开][D:十五分钟]") == [("持续十五分钟", ["打开空调"])]
    assert groups("[A:空调关][D:十分钟]") == [("持续十分钟", ["关闭空调"])]
    # 若同时存在触发事件，则改写为 触发条件+持续+时间
    assert groups("[C:上车后][A:座椅加热开][D:10分钟]") == [("上车后持续10分钟", ["打开座椅加热"])]


def test_duration_action_with_its_own_request_is_left_as_said():
    assert groups("[A:空调调到26度][D:半小时]") == [("持续半小时", ["空调调到26度"])]
    assert groups("[A:开启空气净化][D:二十分钟]") == [("持续二十分钟", ["开启空气净化"])]  # verb first


def test_duration_action_said_with_ba_or_an_unlisted_thing_is_switched_on():
    # 加湿器开一小时 → 打开加湿器, also with 把, a room, or a thing no lexicon lists
    assert groups("[A:把书房加湿器开][D:一刻钟]") == [("持续一刻钟", ["打开书房加湿器"])]
    assert groups("[A:把香氛打开][D:二十分钟]") == [("持续二十分钟", ["打开香氛"])]
    assert groups("[A:阳台晾衣架烘干开][D:两小时]") == [("持续两小时", ["打开阳台晾衣架烘干"])]
    assert groups("[A:灯的开关][D:两小时]") == [("持续两小时", ["灯的开关"])]


def test_a_once_span_gives_back_what_it_took_from_the_condition():
    from fastslow.models.automation.rules import snap_once_spans
    text = "只执行这一次明天七点叫我起床"
    spans = [Span("N", 0, 7, text[:7]), Span("C", 7, 10, text[7:10]), Span("A", 10, 14, text[10:])]
    assert snap_once_spans(analyse(text, LEX), spans) == [
        Span("N", 0, 6, "只执行这一次"), Span("C", 6, 10, "明天七点"), Span("A", 10, 14, "叫我起床")]


# ---------------------------------------------------------------- 不向左回溯 on an unpunctuated run-on

def _run_on(text: str, cuts: list[tuple[str, int, int]]) -> list[tuple[str, str]]:
    from fastslow.models.automation.rules import split_run_on
    spans = [Span(kind, a, b, text[a:b]) for kind, a, b in cuts]
    return [(sp.kind, sp.text) for sp in split_run_on(analyse(text, LEX), join_split_object(analyse(text, LEX), spans))]


def test_a_word_in_letters_said_right_before_a_condition_is_part_of_it():
    assert repaired("CarPlay[C:连上以后][A:播放我的歌单]") == [("CarPlay连上以后", ["播放我的歌单"])]
    assert repaired("wifi[C:连上的时候][A:打开热点]") == [("wifi连上的时候", ["打开热点"])]
    assert repaired("小P[C:在公司的时候][A:提醒我打卡]") == [("在公司的时候", ["提醒我打卡"])]  # one letter: a name's
    assert repaired("[A:打开AC][C:上车的时候]") == [(None, ["打开AC"]), ("上车的时候", [])]   # held by a span already


def test_a_device_named_right_before_a_condition_is_what_the_condition_is_about():
    assert repaired("[A:除湿机][C:检测到湿度太高时][A:自动加大档位]") == [("除湿机检测到湿度太高时", ["自动加大档位"])]
    assert repaired("[A:打开除湿机][C:湿度太高时][A:加大档位]") == \
        [(None, ["打开除湿机"]), ("湿度太高时", ["加大档位"])]  # a command, not a name alone
    assert repaired("[A:除湿机]，[C:湿度太高时][A:加大档位]") == \
        [(None, ["打开除湿机"]), ("湿度太高时", ["加大档位"])]  # after a pause: said apart


def test_a_span_never_starts_inside_a_word_that_ends_a_condition_scope():
    assert repaired("现[C:在打开车窗等会儿到家的时候][A:关上车窗]") == \
        [(None, ["打开车窗"]), ("等会儿到家的时候", ["关上车窗"])]


def test_a_duration_takes_the_lasting_said_right_before_it():
    assert repaired("[A:座椅通风开一下持续][D:十分钟]") == [("持续十分钟", ["打开座椅通风"])]


def test_the_assistant_spoken_to_before_jiu_is_no_part_of_the_condition():
    # 等我上车了你就…: 你 is who the user speaks to, not what has to happen
    assert repaired("[C:等我洗完澡了你]就[A:打开卧室空调]") == [("等我洗完澡了", ["打开卧室空调"])]
    assert repaired("[C:孩子一睡着你]就[A:把电视关了]") == [("孩子一睡着", ["把电视关了"])]
    assert repaired("[C:我一叫你][A:打开空调]") == [("我一叫你", ["打开空调"])]  # no 就 after it: what is said


def test_an_event_word_hidden_by_a_verb_still_starts_the_condition_after_a_command():
    # 打开到家: the event list's 开到 (开到服务区) overlaps 到家; 开 ends the verb 打开, so 到家 starts the condition
    assert repaired("[C:把氛围灯打开到家的时候][A:提醒我拿快递]") == \
        [(None, ["把氛围灯打开"]), ("到家的时候", ["提醒我拿快递"])]
    assert repaired("[C:熄火的时候][A:暂停播客][C:回到家以后][A:打开电视]") == \
        [("熄火的时候", ["暂停播客"]), ("回到家以后", ["打开电视"])]  # no verb ends at 回: 回到家 stays whole
    # and no condition starts inside an event word with no verb before it: 设定|温度 is one word
    assert repaired("[A:热水器水烧到设定][C:温度的时候][A:自动停止加热]") == [("热水器水烧到设定温度的时候", ["自动停止加热"])]


def test_a_time_point_a_command_and_another_time_point_run_on_are_two_groups():
    # 不向左回溯 with no pause: the second time binds the command after it, the first the one before it
    assert repaired("[C:早上六点开加湿器晚上九点][A:关加湿器]") == [("早上六点", ["开加湿器"]), ("晚上九点", ["关加湿器"])]
    assert repaired("[C:每天下午五点半开地暖七点][A:放新闻联播]") == \
        [("每天下午五点半", ["开地暖"]), ("七点", ["放新闻联播"])]


def test_a_change_of_state_run_on_after_a_command_is_a_condition_of_its_own():
    assert repaired("[C:天冷了][A:开电热毯天热了关电热毯]") == [("天冷了", ["开电热毯"]), ("天热了", ["关电热毯"])]
    assert repaired("[C:下雨了][A:把车窗关了]") == [("下雨了", ["把车窗关了"])]  # 关了 ends the command itself


def test_a_seat_said_before_an_event_belongs_to_that_condition():
    assert repaired("[C:主驾有人坐下时][A:打开主驾座椅按摩][C:副驾有人坐下时][A:打开副驾座椅按摩]") == \
        [("主驾有人坐下时", ["打开主驾座椅按摩"]), ("副驾有人坐下时", ["打开副驾座椅按摩"])]


def test_a_state_compared_with_an_amount_and_said_first_is_a_condition_without_a_trigger():
    assert repaired("[A:客厅湿度低于百分之三十开加湿器高于百分之六十关加湿器]") == \
        [("客厅湿度低于百分之三十", ["开加湿器"]), ("高于百分之六十", ["关加湿器"])]
    assert repaired("[A:车内温度超过三十度打开空调]") == [("车内温度超过三十度", ["打开空调"])]
    assert repaired("[A:把车内温度调到二十度]") == [(None, ["把车内温度调到二十度"])]  # the amount is the setting


def test_a_condition_span_starting_with_a_plain_command_is_split():
    # 不向左回溯: 播放音乐上车时打开空调 → [null: 播放音乐] [上车时: 打开空调]
    assert _run_on("关闭车窗到公司的时候提醒我打卡", [("C", 0, 10), ("A", 10, 15)]) == \
        [("A", "关闭车窗"), ("C", "到公司的时候"), ("A", "提醒我打卡")]
    assert _run_on("导航去公司快到的时候提醒我买早餐", [("C", 0, 10), ("A", 10, 16)]) == \
        [("A", "导航去公司"), ("C", "快到的时候"), ("A", "提醒我买早餐")]
    # a command said object first, ending in 打开 (no place follows it, as one may after 开 or 调)
    assert _run_on("窗帘打开八点的时候打开电视", [("C", 0, 9), ("A", 9, 13)]) == \
        [("A", "窗帘打开"), ("C", "八点的时候"), ("A", "打开电视")]


def test_an_action_span_ending_in_a_condition_before_another_action_is_split():
    text = "先放首歌等我上车了再打开座椅加热"
    assert _run_on(text, [("A", 0, 9), ("A", 10, 16)]) == [("A", "先放首歌"), ("C", "等我上车了"), ("A", "打开座椅加热")]
    text, spans = parse_markup("[A:先放首歌][C:等我上车了]再[A:打开座椅加热]")
    assert [(g["condition"], [q["subquery"] for q in g["querys"]]) for g in assemble(analyse(text, LEX), spans)] == \
        [(None, ["放首歌"]), ("等我上车了", ["打开座椅加热"])]


def test_a_compound_condition_or_a_reminder_is_not_cut():
    # 复合条件完整性: 关闭后排空调且副驾座椅加热开启时 is one condition (且)
    text = "关闭后排空调且副驾座椅加热开启时打开副驾座椅通风"
    assert _run_on(text, [("C", 0, 16), ("A", 16, 24)]) == [("C", text[:16]), ("A", text[16:])]
    # a reminder's content is not a condition: 提醒我等雨停了收衣服 stays one action
    text = "提醒我等雨停了收衣服然后关窗"
    assert _run_on(text, [("A", 0, 10), ("A", 12, 14)]) == [("A", "提醒我等雨停了收衣服"), ("A", "关窗")]
    # 开车到公司: too short to be a command of its own
    assert _run_on("开车到公司的时候提醒我打卡", [("C", 0, 8), ("A", 8, 13)]) == \
        [("C", "开车到公司的时候"), ("A", "提醒我打卡")]


# ---------------------------------------------------------------- 时间点: a spoken clock time is one span

def test_a_condition_cut_inside_a_clock_time_takes_the_rest_of_it():
    from fastslow.models.automation.rules import whole_clock_times
    text = "七点四十五打开空调"
    spans = [Span("C", 0, 2, "七点"), Span("A", 2, 9, text[2:])]
    assert whole_clock_times(analyse(text, LEX), spans) == [Span("C", 0, 5, "七点四十五"), Span("A", 5, 9, "打开空调")]
    text = "下午三点一刻提醒我喝水"
    spans = [Span("C", 0, 4, "下午三点"), Span("A", 4, 6, "一刻"), Span("A", 6, 11, "提醒我喝水")]
    assert whole_clock_times(analyse(text, LEX), spans) == [Span("C", 0, 6, "下午三点一刻"), Span("A", 6, 11, "提醒我喝水")]


def test_clock_times_with_minutes_and_what_is_no_clock():
    from fastslow.models.automation.rules import clock_times
    found = lambda t: [t[a:b] for a, b in clock_times(t)]
    assert found("十二点零五播放音乐") == ["十二点零五"]
    assert found("明天8点40打开空调") == ["8点40"]
    assert found("八点半和九点一刻") == ["八点半", "九点一刻"]
    assert found("把空调温度调高一点五度") == []
    assert found("七点钟叫我") == []  # no minutes: nothing to keep together


def test_a_clock_time_between_two_commands_is_their_condition():
    from fastslow.models.automation.rules import split_run_on
    text = "打开空调七点四十五关掉空调"
    assert [(sp.kind, sp.text) for sp in split_run_on(analyse(text, LEX), join_split_object(analyse(text, LEX), [Span("A", 0, 13, text)]))] == \
        [("A", "打开空调"), ("C", "七点四十五"), ("A", "关掉空调")]


def test_an_event_as_the_object_of_the_first_command_does_not_stop_the_split():
    # 导航回家: 回家 is where to go, not a trigger; the condition starts at 等
    text = "先导航回家等我进小区了再打开车库门"
    assert _run_on(text, [("A", 0, 11), ("A", 12, 17)]) == \
        [("A", "先导航回家"), ("C", "等我进小区了"), ("A", "打开车库门")]


# ---------------------------------------------------------------- span repairs, each on its own

def repaired(markup: str) -> list[tuple]:
    """(condition, [subqueries]) after the span repairs the parser applies to the tagger's spans."""
    text, spans = parse_markup(markup)
    return [(g["condition"], [q["subquery"] for q in g["querys"]])
            for g in assemble(analyse(text, LEX), repair_spans(analyse(text, LEX), spans))]


def pieces(text: str) -> list[str]:
    bounds = [0] + command_cuts(text, LEX) + [len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


def test_an_unpunctuated_run_of_commands_is_cut_at_each_command():
    assert pieces("关上卧室的窗帘打开扫地机") == ["关上卧室的窗帘", "打开扫地机"]
    assert pieces("导航去体育馆播放相声") == ["导航去体育馆", "播放相声"]
    assert pieces("后排车窗关上主驾座椅往后调") == ["后排车窗关上", "主驾座椅往后调"]  # object first: a seat starts one
    assert pieces("打开近光灯开氛围灯") == ["打开近光灯", "开氛围灯"]  # 开 right before a device starts one
    assert pieces("打开雾灯音量调到八") == ["打开雾灯", "音量调到八"]  # a name with a verb of its own
    assert pieces("关上主卧空调打开空气净化器") == ["关上主卧空调", "打开空气净化器"]  # 空调 ends the first object
    assert pieces("关掉空调提醒我找地方充电") == ["关掉空调", "提醒我找地方充电"]  # a reminder after a whole command
    assert pieces("开灯开空调") == ["开灯", "开空调"]  # a verb and a device is a whole command
    assert pieces("关掉客厅灯拉上窗帘") == ["关掉客厅灯", "拉上窗帘"]  # a verb of adjusting right before a device
    assert pieces("把窗帘打开放点轻音乐") == ["把窗帘打开", "放点轻音乐"]
    assert pieces("打开空调") == ["打开空调"]


@pytest.mark.parametrize("text", ["打开副驾车窗调到一半", "打开车窗开一半", "打开天窗遮阳帘", "打开座椅加热方向盘加热"])
def test_a_name_inside_a_verbs_object_starts_no_command(text):
    assert pieces(text) == [text]


@pytest.mark.parametrize("text", ["打开导航回家", "打开天窗遮阳帘", "关闭主驾和副驾的座椅加热", "提醒我打开空调关闭车窗",
                                  "修改我的回家习惯", "给老婆发消息说我到了打开空调", "打开空调和座椅加热"])
def test_one_command_is_never_cut(text):
    assert pieces(text) == [text]


def test_joined_commands_under_a_condition_are_two_actions():
    assert repaired("[C:到单位的时候][A:关掉电台打开车窗]") == [("到单位的时候", ["关掉电台", "打开车窗"])]
    assert [g.subqueries for g in plain_groups("后排车窗关上主驾座椅往后调", LEX)] == [["后排车窗关上", "主驾座椅往后调"]]


def test_a_plain_command_before_a_state_condition_is_split_off():
    # 不向左回溯: the command said first is unconditional, also before a state (车速, 电量)
    assert repaired("[C:把音量调到十二车速高于一百的时候][A:关闭车窗]") == \
        [(None, ["把音量调到十二"]), ("车速高于一百的时候", ["关闭车窗"])]
    assert repaired("[C:查一下明天的航班到了机场的时候][A:提醒我取登机牌]") == \
        [(None, ["查一下明天的航班"]), ("到了机场的时候", ["提醒我取登机牌"])]


def test_a_condition_never_starts_inside_an_event_word_or_an_amount_of_time():
    assert repaired("[A:关掉电台回][C:到家以后][A:打开加湿器]") == [(None, ["关掉电台"]), ("回到家以后", ["打开加湿器"])]
    assert repaired("两个[C:半小时以后][A:打开热水器]") == [("两个半小时以后", ["打开热水器"])]


def test_a_time_point_said_first_is_the_condition_of_the_command_after_it():
    assert repaired("[A:国庆节上午九点三刻打开热水器]") == [("国庆节上午九点三刻", ["打开热水器"])]
    assert repaired("[A:六点半叫我出门]") == [("六点半", ["提醒我出门"])]
    assert repaired("[A:查看明天的日程]") == [(DEFAULT, ["查看明天的日程"])]  # a time in the content stays
    assert time_prefix("明晚十点整关灯", LEX) == 5 and time_prefix("一点五度", LEX) == 0
    assert (4, 7) in clock_times("今天晚上十点整关灯")  # 整 is part of the clock time


def test_a_schedule_of_times_run_on_binds_each_command_to_the_time_before_it():
    # spec 不向左回溯: the tagger's one condition over time, command and time is cut at each time point
    assert repaired("[C:早上八点导航去公司晚上六点][A:导航回家]") == \
        [("早上八点", ["导航去公司"]), ("晚上六点", ["导航回家"])]
    assert repaired("[C:周一到周五早上八点导航去公司周末早上九点][A:导航去健身房]") == \
        [("周一到周五早上八点", ["导航去公司"]), ("周末早上九点", ["导航去健身房"])]
    assert repaired("[C:早上七点开灯七点半][A:开窗帘]") == [("早上七点", ["开灯"]), ("七点半", ["开窗帘"])]
    assert time_prefix("周一到周五早上八点", LEX) == 9 and time_prefix("周一到公司的时候", LEX) == 2


def test_a_known_situation_said_with_le_running_on_into_what_works_by_itself_is_its_condition():
    # no trigger word, and the tagger read one action: 了 before 自动 or 自己 ends a known behaviour's situation
    assert repaired("[A:洗衣机洗完了自动断电]") == [("洗衣机洗完了", ["自动断电"])]
    assert repaired("[A:水开了自己断电]") == [("水开了", ["自己断电"])]
    assert repaired("[A:电热水壶水开了][A:自动断电]") == [("电热水壶水开了", ["自动断电"])]
    # ... after a pause, or after the part that works by itself
    assert repaired("[A:洗碗机洗完了，自动烘干]") == [("洗碗机洗完了", ["自动烘干"])]
    assert repaired("[A:人走远了车门自己锁上]") == [("人走远了", ["车门自己锁上"])]
    assert [c for c, _ in repaired("[A:打开空调了车窗自己关上]")] == [None]  # no known situation: no condition
    # a state compared with an amount read as an action of its own, before a pause and a command, is its condition
    assert repaired("[A:卧室温度低于十八度]，[A:开电暖器]") == [("卧室温度低于十八度", ["开电暖器"])]
    assert repaired("[A:打开空调了自动调温]") == [(None, ["打开空调了自动调温"])]  # a command said first stays one
    # words after a pause that ask nothing, right before a condition, start it (and never go back over the pause)
    assert repaired("[A:打开空调，车里降][C:到二十四度的时候][A:把风量调小]") == \
        [(None, ["打开空调"]), ("车里降到二十四度的时候", ["把风量调小"])]
    assert repaired("[A:打开空调，关上车窗][C:到家的时候][A:关掉]")[0] == (None, ["打开空调", "关上车窗"])
    # an event word said right before another time is the object of the action before it (吃早饭), no condition
    assert repaired("[C:每天早上八点][A:提醒我吃][C:早饭中午十二点][A:提醒我午休]") == \
        [("每天早上八点", ["提醒我吃早饭"]), ("中午十二点", ["提醒我午休"])]
    assert repaired("[C:早饭后][A:提醒我吃药]") == [("早饭后", ["提醒我吃药"])]
    # 把 and an object with no verb right before a condition is that condition's object (the spec's 把……就)
    assert repaired("[A:把音乐][C:暂停了就][A:把音量调回二十]") == [("把音乐暂停了", ["把音量调回二十"])]
    # a finished work said without 了 runs on the same way (扫完|自动集尘); 设置好自动模式 is a command
    assert repaired("[A:扫地机扫完自动集尘]") == [("扫地机扫完", ["自动集尘"])]
    assert repaired("[A:电饭煲饭煮好自动保温]") == [("电饭煲饭煮好", ["自动保温"])]
    assert repaired("[A:设置好自动模式]") == [(None, ["设置好自动模式"])]
    # or into the appliance's own notice that the situation has come (a reminder of the user's stays one)
    assert repaired("[A:扫地机器人尘盒满了告诉我]") == [("扫地机器人尘盒满了", ["提醒我"])]  # rewritten as a reminder
    assert repaired("[A:到家了提醒我关窗]") == [(None, ["到家了提醒我关窗"])]


def test_who_a_condition_befalls_said_in_the_passive_before_it_is_part_of_it():
    # the tagger starts the condition at 在 and leaves its subject out: 小孩被锁|在车里的时候
    assert repaired("小孩被锁[C:在车里的时候][A:提醒我]") == [("小孩被锁在车里的时候", ["提醒我"])]
    assert repaired("嗯那个小孩[C:被锁在车里的时候][A:提醒我]") == [("小孩被锁在车里的时候", ["提醒我"])]  # from 被 on
    assert repaired("[C:在公司的时候][A:提醒我喝水]") == [("在公司的时候", ["提醒我喝水"])]


def test_a_device_said_right_before_its_condition_is_what_the_condition_is_about():
    # a name alone, or with what of it the condition measures, asks nothing: the tagger cut the subject off
    assert repaired("[A:扫地机器人][C:碰到台阶的时候][A:停下]") == [("扫地机器人碰到台阶的时候", ["停下"])]
    assert repaired("[A:热水器水温][C:到了设定温度]就[A:停止加热]") == [("热水器水温到了设定温度", ["停止加热"])]
    # with a verb it is a command of its own
    assert repaired("[A:空调开到二十度][C:到家时][A:关掉]") == [(None, ["空调开到二十度"]), ("到家时", ["关掉空调"])]


def test_a_change_said_after_a_super_task_named_alone_is_its_management():
    # 超级任务: 明确修改/删除/取消某个已命名习惯 — one request, not a new super task and a bare command
    assert repaired("[A:把睡眠那个自定义场景] [A:重命名成晚安]") == [("default", ["把睡眠那个自定义场景 重命名成晚安"])]
    assert repaired("[A:新建一个自动化] [C:上车时][A:打开空调]") == [("default", ["新建一个自动化"]), ("上车时", ["打开空调"])]


def test_an_amount_cut_in_two_goes_whole_to_its_condition():
    assert repaired("[C:如果车内温度超过三十][A:五度]") == [("如果车内温度超过三十五度", [])]
    assert repaired("[C:车速超过八十][A:打开空调]") == [("车速超过八十", ["打开空调"])]


def test_a_ba_clause_before_jiu_is_the_condition_of_what_follows():
    # spec 条件定义: 把……就 is a trigger; 复合条件完整性: all before 就 is the condition
    assert repaired("[A:把空调打开]就[A:把窗户关上]") == [("把空调打开", ["把窗户关上"])]
    assert repaired("[A:把电视关了] 呃 就[A:打开卧室的灯]") == [("把电视关了", ["打开卧室的灯"])]
    assert repaired("[A:打开空调]就行") == [(None, ["打开空调"])]  # 就行 ends the request
    # a condition said without a trigger the tagger knows, before 就 (no verb first, a signal word in it)
    assert repaired("[A:热水器水烧到设定温度]就[A:保温]") == [("热水器水烧到设定温度", ["保温"])]
    assert repaired("[A:导航回家]就[A:放首歌]")[0][0] is None  # said verb first: a command of its own
    assert repaired("[C:下雨的时候][A:把车窗关上]就[A:打开空调]") == [("下雨的时候", ["把车窗关上", "打开空调"])]


def test_a_place_cut_off_a_condition_of_moving_goes_back_to_it():
    assert repaired("[C:出了][A:地库]再[A:把车窗打开]") == [("出了地库", ["把车窗打开"])]
    assert repaired("[C:电饭煲饭煮好了][A:自动保温]") == [("电饭煲饭煮好了", ["自动保温"])]  # a request of its own
    assert repaired("[C:到了][A:空调]") == [("到了", ["打开空调"])]  # a device is what is done


def test_a_duration_said_after_its_command_is_that_commands_duration():
    # 持续时间 said after the command: one group, 持续 + the command
    assert repaired("[A:方向盘加热打开]，[A:开个][D:五分钟]") == [("持续五分钟", ["打开方向盘加热"])]
    assert repaired("[A:放点白噪音]，[D:放四十分钟]") == [("持续四十分钟", ["放点白噪音"])]
    assert repaired("[A:打开空调] [C:半小时后][A:关掉]") == [(None, ["打开空调"]), ("半小时后", ["关掉空调"])]


def test_a_bare_switch_under_a_condition_says_what_it_switches():
    # the device switched before it in the query, as most dev writers write it; media is 音乐
    assert repaired("[A:把客厅灯打开]，[C:十点以后][A:关掉]") == [(None, ["把客厅灯打开"]), ("十点以后", ["关掉客厅灯"])]
    assert repaired("[C:车速超过八十的时候][A:关天窗][C:车速低于三十的时候][A:再打开]")[1] == \
        ("车速低于三十的时候", ["打开天窗"])
    assert repaired("[A:放点轻音乐]，[C:半小时后][A:关掉]")[1] == ("半小时后", ["关掉音乐"])
    assert repaired("[C:到家的时候][A:关掉]") == [("到家的时候", ["关掉"])]  # nothing switched before: as said
    assert [subs for _, subs in repaired("[A:把客厅灯打开][C:到家的时候][A:提醒我]")] == [["把客厅灯打开"], ["提醒我"]]
    # the object as said, when it is the device with a few words more; each of a group that switched several
    assert repaired("[A:把卧室的灯关了] [C:早上七点][A:再打开]")[1] == ("早上七点", ["打开卧室的灯"])
    assert repaired("[C:离家的时候][A:关掉所有的灯]和[A:空调] [C:回家的时候][A:再打开]")[1] == \
        ("回家的时候", ["打开所有的灯", "打开空调"])


def test_a_condition_that_ran_into_the_subject_of_what_works_by_itself_gives_it_back():
    assert repaired("[C:熄火后车门][A:自动解锁]") == [("熄火后", ["车门自动解锁"])]
    assert repaired("[C:熄火后大灯延时][A:关闭]") == [("熄火后", ["大灯延时关闭"])]  # follow-me-home lights


def test_a_super_task_managed_by_what_it_does_is_one_request():
    # spec 超级任务 (修改/删除/取消某个已命名习惯或规则): the verb, the name and the keyword are one default clause
    assert repaired("[A:编辑一下离家]那个[A:智能场景]") == [(DEFAULT, ["编辑一下离家那个智能场景"])]
    assert repaired("[A:关闭下班回家]那个[A:小米任务]") == [(DEFAULT, ["关闭下班回家那个小米任务"])]
    assert repaired("[A:小米任务里]那个[C:下班][A:回家的先关一下]") == [(DEFAULT, ["小米任务里那个下班回家的先关"])]
    # a whole command, then a super task of its own: two requests
    assert repaired("[A:打开空调][A:智能场景]") == [(None, ["打开空调"]), (DEFAULT, ["创建智能场景"])]
    assert repaired("[A:打开空调]然后[A:把这个存成智能场景]") == [(None, ["打开空调"]), (DEFAULT, ["把这个存成智能场景"])]


def test_a_condition_that_ran_into_its_command_gives_it_back():
    assert repaired("[C:下课的时候播放儿歌][N:只要一次]") == [("执行一次下课的时候", ["播放儿歌"])]
    # a compound before 就 stays whole (复合条件完整性)
    assert repaired("[C:晚饭前20分钟后转向灯关闭]就[A:风量调高]") == [("晚饭前20分钟后转向灯关闭", ["风量调高"])]


def test_dou_after_a_condition_is_not_part_of_it():
    assert repaired("[C:每次下车都][A:关掉氛围灯]") == [("每次下车", ["关掉氛围灯"])]


def test_seats_with_the_same_state_joined_by_qie_are_all_inherited():
    # 继承 trigger 全部位置: 后排有人且副驾有人 lists both seats, as 后排和副驾都有人 does
    assert inheritance_mode("后排有人且副驾有人的时候", LEX) == ("all", ["后排", "副驾"])
    assert inheritance_mode("后排空调打开且主驾座椅通风开启时", LEX) == ("nearest", ["主驾"])


def test_a_command_between_two_conditions_in_one_span_is_cut_out():
    assert repaired("[C:油量低于一半的时候把空调关掉油量低于四分之一的时候][A:导航去加油站]") == \
        [("油量低于一半的时候", ["把空调关掉"]), ("油量低于四分之一的时候", ["导航去加油站"])]


def test_a_second_condition_that_leaves_out_its_subject_is_cut_after_the_command():
    # 不向左回溯: 低于百分之十时 speaks of the 电量 of the first condition; it is a condition of its own
    assert repaired("[C:电量低于百分之二十时关掉空调低于百分之十时][A:提醒我充电]") == \
        [("电量低于百分之二十时", ["关掉空调"]), ("低于百分之十时", ["提醒我充电"])]
    assert repaired("[C:车速超过一百时][A:打开空调超过一百二时提醒我减速]") == \
        [("车速超过一百时", ["打开空调"]), ("超过一百二时", ["提醒我减速"])]
    # the words before a comparison inside a condition are its subject, not the end of the command before it
    assert repaired("[A:打开座椅通风][C:车里超过三十度的时候]") == [(None, ["打开座椅通风"]), ("车里超过三十度的时候", [])]


def test_a_command_of_a_condition_running_on_into_a_bare_event_of_its_own_is_cut_there():
    # 不向左回溯 with no pause and no trigger word: two events side by side, each with its command
    assert repaired("[C:到家][A:开灯离家][A:关灯]") == [("到家", ["开灯"]), ("离家", ["关灯"])]
    assert repaired("[C:下雨][A:关天窗天晴开天窗]") == [("下雨", ["关天窗"]), ("天晴", ["开天窗"])]
    assert repaired("[C:主驾上车][A:开主驾座椅加热副驾上车开副驾座椅加热]") == \
        [("主驾上车", ["开主驾座椅加热"]), ("副驾上车", ["开副驾座椅加热"])]
    # the tagger's cut after the second condition, or a 就 it left out, changes nothing
    assert repaired("[C:温度高于二十八度][A:开空调低于二十度][A:开暖气]") == \
        [("温度高于二十八度", ["开空调"]), ("低于二十度", ["开暖气"])]
    assert repaired("[C:下午三点][A:提醒我开会五点][A:提醒我去接孩子]") == \
        [("下午三点", ["提醒我开会"]), ("五点", ["提醒我去接孩子"])]
    assert repaired("[C:我出门]就[A:打开扫地机我回]来就[A:关掉扫地机]") == \
        [("我出门", ["打开扫地机"]), ("我回来", ["关掉扫地机"])]
    # an event as the object of the command is no condition of its own
    assert repaired("[C:下班的时候][A:导航回家]") == [("下班的时候", ["导航回家"])]


def test_a_day_said_last_before_a_time_belongs_to_the_condition_after_it():
    assert repaired("[C:周一早上][A:提醒我开例会周五][C:下午][A:提醒我写周报]") == \
        [("周一早上", ["提醒我开例会"]), ("周五下午", ["提醒我写周报"])]


def test_a_second_condition_starts_at_the_person_it_happens_to():
    assert repaired("[C:老人上车时打开座椅加热老人下车后][A:提醒我关座椅加热]") == \
        [("老人上车时", ["打开座椅加热"]), ("老人下车后", ["提醒我关座椅加热"])]


def test_a_once_span_gives_back_the_time_it_took():
    assert repaired("[N:只要这一次后天九点][A:喊我出门]") == [("执行一次后天九点", ["提醒我出门"])]


def test_a_day_said_first_is_the_condition_of_a_reminder_or_command_after_it():
    assert repaired("[A:下周三提醒我还书]") == [("下周三", ["提醒我还书"])]
    assert repaired("[A:今天好热，把空调打开]") == [(None, ["今天好热，把空调打开"])]
    assert repaired("[A:今晚有什么好看的电影]") == [(None, ["今晚有什么好看的电影"])]


def test_a_question_after_a_trigger_asks_and_sets_up_nothing():
    # asked how or where, a verb is no request; the trigger is what the question is about
    assert repaired("[C:晚上开车的时候][A:远光灯怎么开]") == [(None, ["晚上开车的时候远光灯怎么开"])]
    assert repaired("[C:周末的时候][A:一般去哪里玩比较好]") == [(None, ["周末的时候一般去哪里玩比较好"])]
    assert repaired("[C:下车的时候][A:要注意点什么]") == [(None, ["下车的时候要注意点什么"])]
    # a request asked as a question stays a task: its verb is asked for, not about
    assert repaired("[C:下雨的时候][A:能不能把天窗关上]") == [("下雨的时候", ["能不能把天窗关上"])]
    assert repaired("[C:到家的时候][A:提醒我明天天气怎么样]")[0][0] == "到家的时候"


def test_an_action_fragment_joins_the_action_it_touches():
    assert repaired("[C:下课的时候][A:打开][A:导航去学校]") == [("下课的时候", ["打开导航去学校"])]
    assert repaired("[C:出门以后][A:把卧室窗帘][A:拉上]") == [("出门以后", ["把卧室窗帘拉上"])]
    assert repaired("[A:把音量调到][C:十二车速高于一百的时候][A:关闭车窗]") == \
        [(None, ["把音量调到十二"]), ("车速高于一百的时候", ["关闭车窗"])]


@pytest.mark.parametrize("said, read", [
    ("打开除雾不对打开后窗加热", "打开后窗加热"),
    ("上车的时候打开空调不对打开座椅加热", "上车的时候打开座椅加热"),   # the condition stays; the command is taken back
    ("关上车窗打开空调不对打开座椅加热", "关上车窗打开座椅加热"),       # of a run of commands, the last one
    ("打开空调，不对，打开座椅加热", "打开座椅加热"),
    ("导航去公司说错了导航去机场", "导航去机场"),
])
def test_a_command_taken_back_by_a_self_correction_is_not_read(said, read):
    assert surface_of(said, LEX) == read


@pytest.mark.parametrize("said", [
    "空调温度不对",                     # no command before the word
    "提醒我胎压不对的时候检查一下",       # no request after it
    "打开主驾座椅加热我是说副驾",         # only a seat after it: a slot corrected, not a command taken back
    "打开空调不对劲",
])
def test_a_correction_word_that_takes_back_no_command_is_read_as_said(said):
    assert surface_of(said, LEX) == said


def test_a_wake_word_said_twice_is_not_read():
    assert surface_of("小鹏小鹏到公司的时候打开空调") == "到公司的时候打开空调"


@pytest.mark.parametrize("said, read", [
    ("小舟 扫地机开始扫地", "扫地机开始扫地"),                    # an assistant's name before a pause
    ("小乐小乐 嗯 那个 胎压低了就亮个灯", "胎压低了就亮个灯"),      # a wake word, hesitations, each before a pause
    ("关窗 开空调", "关窗，开空调"),                              # a pause between commands is read as one
])
def test_words_the_spoken_layer_strips_before_a_spoken_pause_are_not_read(said, read):
    assert surface_of(said) == read


def test_a_condition_takes_back_its_prefix_trigger_and_a_filler_gap_joins_fragments():
    assert repaired("[A:放段评书等我][C:下车了][A:关掉氛围灯]") == [(None, ["放段评书"]), ("等我下车了", ["关掉氛围灯"])]
    # a condition that opens with its own prefix trigger keeps it, after a verb that may take a place (打开)
    assert repaired("[A:把座椅加热打开][C:等我上车的时候]") == [(None, ["把座椅加热打开"]), ("等我上车的时候", [])]
    assert repaired("[A:把露营周末]那个[A:规则删了]") == [(DEFAULT, ["把露营周末那个规则删了"])]


def test_a_first_action_span_holding_its_own_condition_is_split():
    assert repaired("[A:后方有车快速接近时自动打开双闪]") == [("后方有车快速接近时", ["自动打开双闪"])]
    assert repaired("[A:查一下明天什么时候下雨]") == [(None, ["查一下明天什么时候下雨"])]


def test_commands_joined_by_a_connector_in_one_span_are_cut_and_an_event_said_last_goes_to_its_condition():
    assert pieces("关掉电视然后把纱窗拉上") == ["关掉电视", "然后把纱窗拉上"]
    assert repaired("[A:新建一个智能场景放学][C:接到孩子的时候][A:播放儿歌]") == \
        [(DEFAULT, ["新建一个智能场景"]), ("放学接到孩子的时候", ["播放儿歌"])]
    assert repaired("[A:导航回家][C:快到的时候][A:打开空调]") == [(None, ["导航回家"]), ("快到的时候", ["打开空调"])]


def test_a_ba_left_outside_starts_its_action_and_a_condition_keeps_its_events():
    assert repaired("把那个[A:叫午休的智能场景关掉]") == [(DEFAULT, ["把那个叫午休的智能场景关掉"])]
    assert repaired("[A:创建一个智能场景][C:放学接孩子的时候][A:播放儿歌]") == \
        [(DEFAULT, ["创建一个智能场景"]), ("放学接孩子的时候", ["播放儿歌"])]


def test_a_negation_span_joins_its_action_across_fillers():
    assert repaired("[C:下雨时][A:千万别]再帮我[A:开天窗]") == [("下雨时", ["千万别再帮我开天窗"])]


# ---------------------------------------------------------------- run-ons: a second condition with no pause

def test_an_action_running_on_into_its_own_condition_and_command_is_three_spans():
    # 不向左回溯: each condition binds the command after it, the second is not swallowed by the first group
    assert repaired("[C:早上八点][A:提醒我带伞中午十二点提醒我订餐]") == \
        [("早上八点", ["提醒我带伞"]), ("中午十二点", ["提醒我订餐"])]
    assert repaired("[C:车速超过一百二时][A:提醒我减速到公司后关掉空调]") == \
        [("车速超过一百二时", ["提醒我减速"]), ("到公司后", ["关掉空调"])]


def test_a_time_said_first_in_a_reminders_content_stays_content():
    # 提醒我说: 提醒我下午三点开会 keeps its time, and so does a command said after it
    assert repaired("[C:早上八点][A:提醒我下午三点开会]") == [("早上八点", ["提醒我说下午三点开会"])]
    assert repaired("[C:出门的时候][A:提醒我明天早上八点打电话给妈妈]") == \
        [("出门的时候", ["提醒我说明天早上八点打电话给妈妈"])]


def test_a_call_or_a_question_said_before_a_condition_is_its_own_request():
    assert repaired("[C:给王师傅打电话到服务区的时候][A:提醒我加油]") == \
        [(None, ["给王师傅打电话"]), ("到服务区的时候", ["提醒我加油"])]
    assert repaired("[C:今天天气怎么样下午四点][A:提醒我收衣服]") == \
        [(None, ["今天天气怎么样"]), ("下午四点", ["提醒我收衣服"])]
    assert repaired("[C:音量调到十五到公司的时候][A:提醒我打卡]") == \
        [(None, ["音量调到十五"]), ("到公司的时候", ["提醒我打卡"])]  # a setting adjusted is a whole command
    assert repaired("[A:音量]") == [(None, ["音量"])]  # ... but no device to switch on


@pytest.mark.parametrize("query", ["上周设的下班开空调那个场景不要了", "回家开灯那个自动化换成开落地灯",
                                   "暂停早上放新闻的那个规则", "把每天提醒我喝水的那条规则停掉",
                                   "任务大师里那个周末洗车的任务删了", "关闭下班回家那个习惯",
                                   "把早上八点开窗帘的规则删掉", "那个下雨关天窗的智能任务重新打开",
                                   "我那个离家关灯的自动化还在吗", "小米任务里那个到家开空调的先停用",
                                   "取消早上放新闻的习惯", "删除回家开空调的规则",  # the change said first
                                   "把每天早上放新闻那个自动化改到七点半"])
def test_an_automation_described_by_what_it_does_is_managed_as_one_default_request(query):
    from fastslow.models.automation.rules import management_group
    group = management_group(query, LEX)
    assert group is not None and group.condition == DEFAULT and group.subqueries == [query]


@pytest.mark.parametrize("query", ["下班的时候打开空调", "把那个灯关掉", "打开回家那个场景", "这个场景真好看",
                                   "建一个离家关掉所有灯的场景"])  # a new one, whatever its command says
def test_a_task_or_device_that_is_not_being_changed_is_no_management(query):
    from fastslow.models.automation.rules import described_task_group
    assert described_task_group(query, LEX) is None


@pytest.mark.parametrize("markup, condition, subquery", [
    ("[C:来半小时][A:轻音乐]", "持续半小时", "播放轻音乐"),
    ("[C:放一个小时][A:的白噪音]", "持续一个小时", "播放白噪音"),
    ("[A:播放][D:二十分钟][A:新闻]", "持续二十分钟", "播放新闻"),
    ("[A:轻音乐放][D:半小时]", "持续半小时", "播放轻音乐"),
    ("[C:上车以后来半小时][A:轻音乐]", "上车以后持续半小时", "播放轻音乐"),
    ("[A:空调开][D:半小时]", "持续半小时", "打开空调"),  # a device's duration is still switched on
    ("[A:给孩子放一个小时儿歌]", "持续一个小时", "播放儿歌"),  # who it is played for is no request of its own
    ("[C:给宝宝放半小时][A:儿歌]", "持续半小时", "播放儿歌"),  # ... nor a condition
    ("[C:讲半个小时][A:的有声书]", "持续半个小时", "播放有声书"),
    ("[C:晚上十点开始][A:放相声放][D:半个小时]", "晚上十点开始持续半个小时", "播放相声"),  # played before and after
    ("[A:放平座椅][D:十分钟]", "持续十分钟", "放平座椅"),  # 放 of 放平 plays nothing
])
def test_media_with_a_duration_is_played_for_that_long(markup, condition, subquery):
    # 持续时间: 座椅加热十分钟 → 持续十分钟 + 打开座椅加热; 来半小时轻音乐 → 持续半小时 + 播放轻音乐
    assert repaired(markup) == [(condition, [subquery])]


@pytest.mark.parametrize("markup, condition, subqueries", [
    ("仅限一次 [C:快到公司时][A:给张经理打电话]", "执行一次快到公司时", ["给张经理打电话"]),  # left out of every span
    ("[C:下一次上车的时候][A:播放周杰伦的歌]，[A:仅这一次]。", "执行一次下一次上车的时候", ["播放周杰伦的歌"]),  # read as an action
    ("[C:一次性的 电量低于百分之十五时][A:提醒我充电]", "执行一次电量低于百分之十五时", ["提醒我充电"]),
])
def test_a_once_marker_the_tagger_missed_joins_the_condition(markup, condition, subqueries):
    # 执行一次: 执行一次 / 只执行一次 / 仅一次 / 单次执行 … → 执行一次+原始条件
    assert repaired(markup) == [(condition, subqueries)]


def test_a_once_marker_without_a_condition_is_left_alone():
    assert repaired("[A:打开空调]就一次") == [(None, ["打开空调"])]


def test_a_change_of_state_after_a_pause_is_the_next_commands_condition():
    # 不向左回溯, 多条件: 下雨时关闭车窗，雨停了打开车窗 has two conditions, each with its command
    assert repaired("[C:下雨时][A:关闭车窗]，[A:雨停了打开车窗]") == [("下雨时", ["关闭车窗"]), ("雨停了", ["打开车窗"])]
    assert repaired("[C:下雨时][A:关闭车窗]，[A:算了打开车窗]") == [("下雨时", ["关闭车窗", "算了打开车窗"])]  # too short
    assert repaired("[A:打开空调]，[A:雨停了打开车窗]") == [(None, ["打开空调", "雨停了打开车窗"])]  # no condition before


def test_what_a_message_is_to_say_stays_in_it():
    # a duration or a condition said right after 说 is what the message says, not the request's
    assert repaired("[A:给老王发个微信说我晚到][D:二十分钟]再[A:导航去他公司]") == \
        [(None, ["给老王发个微信说我晚到二十分钟", "导航去他公司"])]
    assert repaired("[A:发消息给老婆说][C:我半小时后到家]") == [(None, ["发消息给老婆说我半小时后到家"])]
    # not across a pause, and not after a command that sends nothing
    assert repaired("[A:打开空调]，[D:二十分钟]") == [("持续二十分钟", ["打开空调"])]
    assert repaired("[A:给老婆发消息说我到了]，[C:到家的时候][A:打开空调]") == \
        [(None, ["给老婆发消息说我到了"]), ("到家的时候", ["打开空调"])]


def test_a_number_said_with_dian_that_is_no_hour_is_part_of_the_request():
    # a radio frequency is no clock time: the tagger's condition goes back to the request it belongs to
    assert repaired("[A:打开电台FM][C:一零三点七]") == [(None, ["打开电台FM一零三点七"])]
    assert repaired("[C:收听一零三点九][A:交通台]") == [(None, ["收听一零三点九交通台"])]
    assert repaired("[C:九点半][A:把空调打开]") == [("九点半", ["把空调打开"])]  # an hour stays a condition


def test_a_value_set_is_a_request_and_a_value_reached_a_condition():
    assert repaired("[A:把灯打开] [C:亮度调到百分之五十]") == [(None, ["把灯打开", "亮度调到百分之五十"])]
    assert repaired("[C:电量到百分之二十][A:提醒我]")[0][0] == "电量到百分之二十"
    assert repaired("[C:温度调到二十六度的时候][A:打开风扇]")[0][0] == "温度调到二十六度的时候"


def test_a_percent_sign_stays_with_its_number():
    assert repaired("[A:把灯打开][A:亮度调到50]%") == [(None, ["把灯打开", "亮度调到50%"])]


def test_a_home_appliance_said_with_the_verb_that_starts_it_is_told_to_start():
    assert repaired("[C:洗衣机启动] [A:快洗模式]") == [(None, ["洗衣机启动", "快洗模式"])]
    assert repaired("[C:洗衣机启动的时候][A:关窗]")[0][0] == "洗衣机启动的时候"  # a trigger of its own
    assert repaired("[C:车辆启动以后][A:打开空调]")[0][0] == "车辆启动以后"          # the car's start is an event
