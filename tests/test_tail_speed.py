"""The cheaper paths after the router (intents, capture) give what their definitions give, on every bundled text."""


import numpy as np

from conftest import AUTOMATION_FILES, bundled_queries, bundled_subqueries
from fastslow.models.automation.rules import devices_in, seat_mentions

def test_control_intent_is_its_rule_over_devices_in_and_seat_mentions(model):
    from fastslow.models.automation.intents import CAR_CONTROL, DEVICE_CONTROL, control_intent

    def definition(text, lex):
        kinds = {kind for *_, kind in devices_in(text, lex)} - {"media"}
        if not kinds:
            return None
        return CAR_CONTROL if seat_mentions(text, lex) or "car" in kinds else DEVICE_CONTROL

    lex = model.automation.lexicons_
    texts = bundled_subqueries() + bundled_queries(AUTOMATION_FILES) + ["打开主驾空调", "打开空调", "播放音乐", "İ打开HUD", ""]
    answers = [control_intent(t, lex) for t in texts]
    assert answers == [definition(t, lex) for t in texts]
    assert {CAR_CONTROL, DEVICE_CONTROL, None} <= set(answers)


def test_a_few_subqueries_score_as_rows_of_the_batch_bit_for_bit(model):
    """2 to ``DENSE_ROWS`` subqueries share one gather (``gathered_sums``): the batch's CSR rows, bit for bit."""
    from fastslow.models.automation.intents import DENSE_ROWS

    intents = model.automation.intents_
    subqueries = bundled_subqueries()
    batch = intents.decision_function(subqueries)
    assert len(subqueries) > DENSE_ROWS
    for size in range(2, DENSE_ROWS + 1):
        for start in range(0, len(subqueries) - size, 37):
            few = intents.decision_function(subqueries[start:start + size])
            assert few.shape == (size, batch.shape[1])
            assert np.array_equal(few, batch[start:start + size])
            assert np.array_equal(np.signbit(few), np.signbit(batch[start:start + size]))
    assert intents.decision_function([]).shape == (0, batch.shape[1])


def test_a_capture_enum_members_value_is_read_as_its_underscore_value():
    """``capture_candidates`` writes ``member._value_`` (no enum property call): it is ``member.value``, a str."""
    from fastslow.models.capture.policy import CandidateAction, Interruption, Outcome

    for enum in (Outcome, Interruption, CandidateAction):
        for member in enum:
            assert member._value_ is member.value and member._value_.__class__ is str
