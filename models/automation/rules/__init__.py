"""The automation rules (spec ``automation-tasks.md``), as small pure functions over one ``TextAnalysis``.

The span tagger marks conditions, actions, durations, once markers and scope ends (``markup``); everything
after it is deterministic, in the spec's order, one module per section:

============  ==============================================================================================
markup        the span kinds, the annotation markup and the tagger's BIO tags
signals       whether a text can hold a condition at all (``has_condition_signal``)
analysis      ``TextAnalysis``: one reading of a text (lower case, signal text, every word class's matches)
repairs       ``SPAN_REPAIRS``, the ordered named passes that make the tagger's spans whole (``edges``,
              ``splits``, ``joins``; ``starts`` and ``words`` hold what they ask of a piece of text)
scopes        条件作用域: which actions each condition binds
rewrites      改写规则: 持续时间, 提醒改写, 提醒我说, 超级任务, 位置继承, 执行一次, default
builtin       条件负例: built-in behaviours of the car and of home appliances
assembly      the spec's groups from the spans, or from the plain pieces of a text without a signal
============  ==============================================================================================

None does I/O or keeps state, and a model can never vote them away.
"""

from fastslow.models.automation.rules.analysis import TextAnalysis, analyse, signal_text
from fastslow.models.automation.rules.assembly import (
    INTENT_REMINDER, INTENT_SYSTEM, INTENT_VEHICLE, Group, assemble, described_task_group, group_dict, management_group,
    memo_edit_group, missing_super_task_clauses, plain_groups, plain_pieces, plan_groups, rewrite_group,
)
from fastslow.models.automation.rules.builtin import (
    DEFAULT, builtin_action, builtin_by_class, builtin_domain, builtin_function_action, function_prefix, function_words,
    is_builtin, is_reminder, vehicle_situation,
)
from fastslow.models.automation.rules.markup import (
    EXPANDS_WHEN_LOWERED, SPAN_KINDS, Span, automation_text, lowered, parse_markup, spans_to_tags, tags_to_spans,
    to_markup,
)
from fastslow.models.automation.rules.edges import (
    give_back_subject, keep_negation, snap_once_spans, whole_clock_times, whole_condition_edges, whole_durations,
    whole_words_at_edges,
)
from fastslow.models.automation.rules.joins import join_fragments, join_split_object
from fastslow.models.automation.rules.repairs import SPAN_REPAIRS, repair_spans
from fastslow.models.automation.rules.rewrites import (
    REMIND_SAY, add_missing_verb, duration_condition, insert_seat, is_memo_management, once_condition, clean_subquery, duration_action, inherit_location, inheritance_mode, remind_say,
    reminder_from_noun, rewrite_reminder, shared_verb_split, super_task_clause, switches_reminders, unconditional_kind,
    without_once,
)
from fastslow.models.automation.rules.scopes import RawGroup, bind_scopes, condition_text
from fastslow.models.automation.rules.signals import (
    demote_signalless_conditions, has_condition_signal, question_as_said,
)
from fastslow.models.automation.rules.splits import (
    COMMAND_START_KINDS, JOINED_BEFORE, command_before_sequence, command_cuts, leading_time_condition, retracted,
    split_inside_action, split_joined_actions, split_run_on, split_trailing_command,
)
from fastslow.models.automation.rules.words import (
    REMIND, clock_times, devices_in, done_tail, is_fragment, only_fillers, seat_mentions, time_prefix, has_time_expression, has_verb, is_bare_device, is_plain_command, is_super_task_mention,
    leading_hesitation, may_hold_command, plain_breaks, strip_fillers, takes_place,
)
