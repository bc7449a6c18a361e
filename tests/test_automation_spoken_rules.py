"""The automation rules on spoken-style queries (issue 12, "Automation:"): no punctuation, fillers,
wake words and polite tails, seats said as one word (主副驾, 前排), spoken clock times, 执行一次 said
in other words. Spans are given (no model), so a failure is a rule's fault; the queries are new,
none is in the training, dev or fixture data."""

from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation.rules import assemble, inheritance_mode, parse_markup

LEX = load_automation_lexicons()


def groups(markup: str) -> list[tuple]:
    text, spans = parse_markup(markup)
    return [(g["condition"], [q["subquery"] for q in g["querys"]]) for g in assemble(text, spans, LEX)]


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
