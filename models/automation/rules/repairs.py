"""The span repairs: the tagger's spans made whole, one named pass after another, in this order."""

from __future__ import annotations

from typing import Sequence

from fastslow.models.automation.rules.analysis import TextAnalysis
from fastslow.models.automation.rules.edges import (
    condition_after_pause, device_before_condition, event_object_back, give_back_subject, keep_negation,
    letter_word_before_condition, media_durations, once_markers_as_said, percent_sign_kept, scope_words_outside,
    snap_once_spans, whole_amounts, whole_clock_times, whole_condition_edges, whole_durations, whole_words_at_edges,
)
from fastslow.models.automation.rules.joins import (
    change_after_super_task, join_fragments, join_split_object, message_content_as_said, named_super_task,
)
from fastslow.models.automation.rules.markup import Span
from fastslow.models.automation.rules.signals import (
    appliances_started_as_requests, ba_jiu_condition, demote_signalless_conditions, numbers_with_no_time,
    question_as_said, settings_as_requests,
)
from fastslow.models.automation.rules.splits import (
    command_before_sequence, leading_time_condition, split_inside_action, split_joined_actions, split_run_on,
    split_second_condition, split_trailing_command,
)

SPAN_REPAIRS = (
    keep_negation, ba_jiu_condition, scope_words_outside, whole_clock_times, whole_amounts, percent_sign_kept,
    whole_durations, media_durations, message_content_as_said, condition_after_pause, event_object_back,
    whole_words_at_edges,
    letter_word_before_condition, device_before_condition, leading_time_condition, split_inside_action,
    command_before_sequence, join_fragments, named_super_task, change_after_super_task, split_trailing_command,
    join_split_object, split_run_on, split_second_condition, give_back_subject, whole_condition_edges,
    split_joined_actions, once_markers_as_said, snap_once_spans, demote_signalless_conditions, numbers_with_no_time,
    settings_as_requests, appliances_started_as_requests, question_as_said,
)


def repair_spans(analysis: TextAnalysis, spans: Sequence[Span]) -> list[Span]:
    """Every pass of ``SPAN_REPAIRS`` in turn, each over the spans the one before it gave."""
    spans = list(spans)
    for repair in SPAN_REPAIRS:
        spans = repair(analysis, spans)
    return spans
