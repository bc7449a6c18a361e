"""The hard rules of XA4.1 as pure functions: aggregation, default route, review, fast_system_pending."""

import pytest

from fastslow.models.routing.rules import (
    Route, aggregate, asked_again, controls_several, default_route, device_controls, fast_system_pending, is_follow_up,
    missing_slot, review_required, routed_parts, subrequest_context,
)


def r(text, label, code, device=False, confidence=0.9):
    return Route(text=text, label=label, primary_reason_code=code, reason_codes=(code,),
                 confidence=confidence, device_control=device)


def test_all_explicit_device_controls_aggregate_to_fast_multi_action():
    # spec 快的规则/多个明确设备控制: 把空调调到 24 度，然后打开座椅加热。
    route = aggregate([r("把空调调到24度", "快", "DIRECT_ACTION", device=True),
                       r("打开座椅加热", "快", "DIRECT_ACTION", device=True)], text="把空调调到24度,然后打开座椅加热")
    assert (route.label, route.primary_reason_code) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION")
    assert route.reason_codes == ("EXPLICIT_DEVICE_MULTI_ACTION", "DIRECT_ACTION")
    assert route.text == "把空调调到24度,然后打开座椅加热"


def test_home_devices_count_as_explicit_device_control():
    # spec 快的规则/多个明确设备控制: 关客厅灯并打开空调。
    route = aggregate([r("关客厅灯", "快", "DIRECT_ACTION", device=True),
                       r("打开空调", "快", "DIRECT_ACTION", device=True)], text="关客厅灯并打开空调")
    assert (route.label, route.primary_reason_code) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION")


def test_multi_stop_navigation_plan_is_slow():
    # spec 慢的规则/规划: 导航到主目的地，路上找充电站，再看看终点附近哪里好停车。
    route = aggregate([r("导航到主目的地", "快", "DIRECT_ACTION"),
                       r("路上找充电站", "快", "DIRECT_ACTION"),
                       r("再看看终点附近哪里好停车", "慢", "MULTI_STEP_PLANNING")], text="q")
    assert (route.label, route.primary_reason_code) == ("慢", "MULTI_STEP_PLANNING")
    assert route.reason_codes == ("MULTI_STEP_PLANNING", "DIRECT_ACTION")


def test_song_search_then_play_in_app_is_slow():
    # spec 慢的规则/规划: 找王菲在春晚与别人合唱的歌，再用网易云播放。
    route = aggregate([r("找王菲在春晚与别人合唱的歌", "慢", "COMPLEX_REASONING"),
                       r("再用网易云播放", "快", "DIRECT_ACTION")], text="q")
    assert (route.label, route.primary_reason_code) == ("慢", "COMPLEX_REASONING")


def test_query_then_decide_is_slow_even_with_a_device_control():
    # spec 慢的规则/规划: 查天气再决定要不要开窗 — a device control beside a query is not the 快 special case.
    route = aggregate([r("查天气", "快", "DIRECT_DETERMINISTIC_QUERY"),
                       r("决定要不要开窗", "慢", "MULTI_STEP_PLANNING", device=True)], text="q")
    assert (route.label, route.primary_reason_code) == ("慢", "MULTI_STEP_PLANNING")


def test_slow_beats_ambiguous_beats_fast():
    # spec 聚合: 慢 > 模糊 > 快
    fast, vague, slow = (r("a", "快", "DIRECT_ACTION"), r("b", "模糊", "PRODUCT_KNOWLEDGE"),
                         r("c", "慢", "INTENT_INFERENCE"))
    assert aggregate([fast, vague], text="q").label == "模糊"
    assert aggregate([vague, fast, slow], text="q").primary_reason_code == "INTENT_INFERENCE"
    assert aggregate([fast, r("d", "快", "DIRECT_OPERATION_FLOW")], text="q").primary_reason_code == "DIRECT_ACTION"


def test_fast_special_case_needs_every_part_to_be_device_control():
    # spec 多个明确设备控制: 跨工具编排 … 不适用该特例 — media playback is not device control.
    route = aggregate([r("打开空调", "快", "DIRECT_ACTION", device=True),
                       r("播放周杰伦的歌", "快", "DIRECT_ACTION", device=False)], text="q")
    assert (route.label, route.primary_reason_code) == ("快", "DIRECT_ACTION")


def test_aggregate_confidence_is_the_weakest_deciding_part():
    route = aggregate([r("a", "慢", "INTENT_INFERENCE", confidence=0.7),
                       r("b", "慢", "SCENE_GOAL_MAPPING", confidence=0.6), r("c", "快", "DIRECT_ACTION", confidence=0.2)],
                      text="q")
    assert route.confidence == 0.6


def test_single_subrequest_is_returned_unchanged():
    only = r("开空调", "快", "DIRECT_ACTION", device=True)
    assert aggregate([only]) == only


@pytest.mark.parametrize("text", ["前后除雾都打开", "左右后视镜加热都开了", "把四个窗户都降到一半", "后排座椅加热左右两边都开"])
def test_one_control_said_of_several_places_at_once_is_multi_action(text):
    # 多个明确设备控制: the places are named one by one
    route = aggregate([r(text, "快", "DIRECT_ACTION", device=True)])
    assert (route.label, route.primary_reason_code) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION")
    assert route.reason_codes == ("EXPLICIT_DEVICE_MULTI_ACTION", "DIRECT_ACTION")


@pytest.mark.parametrize("route", [
    r("把车里所有的灯都关了", "快", "DIRECT_ACTION", device=True),  # no place named: one control
    r("左右两边的车窗都关了吗", "快", "DIRECT_DETERMINISTIC_QUERY", device=True),  # a question controls nothing
    r("四个窗户都关严了没", "快", "DIRECT_ACTION", device=True),  # ... even where the model reads a command
    r("左右后视镜都有点歪", "慢", "INTENT_INFERENCE", device=True),
    r("前后都有车", "快", "DIRECT_ACTION"),  # no device
])
def test_other_single_requests_are_not_several_controls(route):
    assert not controls_several(route)
    assert aggregate([route]) == route


def test_aggregate_refuses_nothing():
    with pytest.raises(ValueError):
        aggregate([])


@pytest.mark.parametrize("label, route", [("快", "快系统"), ("慢", "慢系统"), ("模糊", "慢系统")])
def test_default_route_is_fixed_by_label(label, route):
    # spec 能力与默认路由
    assert default_route(label) == route


def test_policy_uncertain_always_needs_review():
    # spec 决策树 3: 模糊, default_route=慢系统, review_required=true
    assert review_required(r("q", "模糊", "POLICY_UNCERTAIN", confidence=0.99), has_context=False, threshold=0.0)


def test_context_required_without_context_needs_review():
    # spec 上下文: 缺少前轮而当前短句不可独立理解时，标慢并复核
    route = r("帮我开启", "慢", "CONTEXT_REQUIRED", confidence=0.99)
    assert review_required(route, has_context=False, threshold=0.0)
    assert not review_required(route, has_context=True, threshold=0.0)


def test_low_confidence_needs_review_only_below_threshold():
    assert review_required(r("q", "快", "DIRECT_ACTION", confidence=0.49), False, threshold=0.5)
    assert not review_required(r("q", "快", "DIRECT_ACTION", confidence=0.5), False, threshold=0.5)


def test_fast_system_pending_defaults_to_null():
    # spec 能力与默认路由: null：未评估能力；默认使用该值
    assert fast_system_pending() is None


def test_device_control_continuations_still_count_as_explicit_device_control():
    # 开内循环，再把AC打开: the second part may be routed as an operation-flow continuation
    route = aggregate([r("开内循环", "快", "DIRECT_ACTION", device=True),
                       r("再把ac打开", "快", "DIRECT_OPERATION_FLOW", device=True)], text="q")
    assert route.primary_reason_code == "EXPLICIT_DEVICE_MULTI_ACTION"


def test_a_state_query_is_not_device_control():
    route = aggregate([r("打开空调", "快", "DIRECT_ACTION", device=True),
                       r("空调几度", "快", "DIRECT_DETERMINISTIC_QUERY", device=True)], text="q")
    assert route.primary_reason_code == "DIRECT_ACTION"


def test_a_dependent_chain_is_never_split():
    # spec 多指令: only independently routable parts are split; 查天气再决定要不要开窗 is one request
    whole = r("查天气再决定要不要开窗", "慢", "MULTI_STEP_PLANNING")
    parts = [r("查天气", "快", "DIRECT_DETERMINISTIC_QUERY"), r("决定要不要开窗", "模糊", "AMBIGUOUS_INTENT")]
    assert routed_parts(whole, parts) == [whole]


def test_independent_parts_are_routed_apart_and_a_single_part_is_the_whole():
    whole = r("打开空调然后打开座椅加热", "快", "DIRECT_ACTION", device=True)
    parts = [r("打开空调", "快", "DIRECT_ACTION", device=True), r("打开座椅加热", "快", "DIRECT_ACTION", device=True)]
    assert routed_parts(whole, parts) == parts
    assert routed_parts(whole, []) == [whole]
    assert routed_parts(whole, parts[:1]) == [whole]


@pytest.mark.parametrize("context", ["none", "prev_slow", "slow_question"])
def test_a_later_subrequest_continues_a_fast_flow_and_the_first_keeps_the_query_context(context):
    # spec 上下文: 上一轮快时，当前简单直接动作可继续快 (把座椅通风打开，副驾的也打开)
    assert subrequest_context(context, 0) == context
    assert subrequest_context(context, 1) == subrequest_context(context, 2) == "prev_fast"
    assert subrequest_context(context, 1, "副驾的也打开") == "prev_fast"
    # a later one that asks a question is no step of that flow: routed as said alone
    assert subrequest_context(context, 1, "对了胎压灯为啥一直亮") == "none"
    assert subrequest_context(context, 0, "胎压灯为啥一直亮") == context


def test_an_elliptical_control_after_a_device_control_is_a_device_control_too():
    # 多个明确设备控制 with the device said once: 主驾座椅通风打开，副驾的也打开
    first = r("主驾座椅通风打开", "快", "DIRECT_ACTION", device=True)
    second = Route(text="副驾的也打开", label="快", primary_reason_code="DIRECT_OPERATION_FLOW",
                   reason_codes=("DIRECT_OPERATION_FLOW",), confidence=0.9, elliptical_control=True)
    route = aggregate([first, second], text="主驾座椅通风打开,副驾的也打开")
    assert (route.label, route.primary_reason_code) == ("快", "EXPLICIT_DEVICE_MULTI_ACTION")
    assert device_controls([first, second, second]) == [True, True, True]


def test_an_elliptical_control_needs_a_device_control_before_it():
    # nothing to go on with: 下一首 after a song, or an elliptical part first, stays what it is
    song = r("放首周杰伦的歌", "快", "DIRECT_ACTION")
    ellipsis = Route(text="开到三档", label="快", primary_reason_code="DIRECT_OPERATION_FLOW",
                     reason_codes=("DIRECT_OPERATION_FLOW",), confidence=0.9, elliptical_control=True)
    assert device_controls([song, ellipsis]) == [False, False]
    assert device_controls([ellipsis, r("打开空调", "快", "DIRECT_ACTION", device=True)]) == [False, True]
    route = aggregate([song, ellipsis], text="q")
    assert route.primary_reason_code == "DIRECT_ACTION"
    # a slow part is never a device control, elliptical or not
    slow = Route(text="调一下", label="慢", primary_reason_code="MISSING_REQUIRED_SLOT",
                 reason_codes=("MISSING_REQUIRED_SLOT",), confidence=0.9, elliptical_control=True)
    assert device_controls([r("打开空调", "快", "DIRECT_ACTION", device=True), slow]) == [True, False]


@pytest.mark.parametrize("code, label", [("MULTI_STEP_PLANNING", "慢"), ("AUTOMATION_SLOW_POLICY", "慢")])
def test_a_whole_read_as_one_request_is_not_split_into_its_parts(code, label):
    whole = r("下雨了就把窗帘和窗户都关上", label, code)
    parts = [r("下雨了就把窗帘", "快", "DIRECT_ACTION", device=True), r("窗户都关上", "快", "DIRECT_ACTION", device=True)]
    assert routed_parts(whole, parts) == [whole]


def test_independent_parts_are_routed_apart():
    whole = r("打开空调然后播放音乐", "快", "DIRECT_ACTION", device=True)
    parts = [r("打开空调", "快", "DIRECT_ACTION", device=True), r("播放音乐", "快", "DIRECT_ACTION")]
    assert routed_parts(whole, parts) == parts


@pytest.mark.parametrize("text", ["空调温度调到", "音量调成,呃", "打个电话,打给", "导航,去", "帮我录段语音发给", "把空调温度调到呃",
                                  "导航", "帮我导航"])
def test_a_request_that_stops_at_the_verb_taking_its_value_misses_its_slot(text):
    # spec 真实消歧、补槽: 缺少执行所必需且不能稳定默认的槽位 → 慢, whatever the model read in the device
    route = missing_slot(r(text, "快", "DIRECT_OPERATION_FLOW", device=True, confidence=0.8))
    assert (route.label, route.primary_reason_code, route.device_control) == ("慢", "MISSING_REQUIRED_SLOT", False)
    assert route.reason_codes[0] == "MISSING_REQUIRED_SLOT" and route.confidence == 1.0


@pytest.mark.parametrize("text", ["空调温度调到二十二度", "导航去机场", "打给老王", "退出导航", "开始导航", "还有多久能到", "导航过去"])
def test_a_request_with_its_value_keeps_its_route(text):
    route = r(text, "快", "DIRECT_ACTION", device=True)
    assert missing_slot(route) is route


@pytest.mark.parametrize("text", ["后排呢", "那电动窗帘呢", "那个卧室呢", "后来呢", "再来一个"])
def test_a_follow_up_of_an_information_question_asks_the_same_kind_of_question(text):
    # spec 上下文: 前排温度多少 → 后排呢 is a state query too; 讲个笑话 → 再来一个 chat
    assert is_follow_up(text)
    earlier = r("前排温度多少", "模糊", "DEVICE_OR_ENV_STATE_QUERY", confidence=0.8)
    route = asked_again(r(text, "慢", "CONTEXT_REQUIRED"), earlier)
    assert (route.label, route.primary_reason_code, route.confidence, route.text) == \
        ("模糊", "DEVICE_OR_ENV_STATE_QUERY", 0.8, text)


def test_a_follow_up_of_any_other_request_stays_the_models():
    follow_up = r("那后天呢", "慢", "CONTEXT_REQUIRED")
    assert asked_again(follow_up, r("明天会下雨吗", "快", "DIRECT_DETERMINISTIC_QUERY")) is follow_up
    assert asked_again(follow_up, r("明天八点提醒我", "模糊", "POLICY_UNCERTAIN")) is follow_up


@pytest.mark.parametrize("text", ["再便宜点的呢", "打开后排空调", "后排空调现在是多少度呢你告诉我", "好的"])
def test_a_request_of_its_own_or_a_narrowing_is_no_follow_up(text):
    assert not is_follow_up(text)
