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
builtin       条件负例: built-in vehicle behaviours
assembly      the spec's groups from the spans, or from the plain pieces of a text without a signal
============  ==============================================================================================

None does I/O or keeps state, and a model can never vote them away.
"""

from fastslow.models.automation.rules.analysis import TextAnalysis, analyse
from fastslow.models.automation.rules.assembly import (
    INTENT_REMINDER, INTENT_SYSTEM, INTENT_VEHICLE, Group, assemble, group_dict, memo_edit_group,
    missing_super_task_clauses, plain_groups, plain_pieces, plan_groups, rewrite_group,
)
from fastslow.models.automation.rules.builtin import (
    DEFAULT, builtin_by_class, builtin_function_action, function_prefix, function_words, is_builtin, is_reminder,
)
from fastslow.models.automation.rules.markup import (
    EXPANDS_WHEN_LOWERED, SPAN_KINDS, Span, automation_text, lowered, parse_markup, spans_to_tags, tags_to_spans,
    to_markup,
)
from fastslow.models.automation.rules.repairs import SPAN_REPAIRS, repair_spans
from fastslow.models.automation.rules.rewrites import (
    REMIND_SAY, add_missing_verb, clean_subquery, duration_action, inherit_location, inheritance_mode, remind_say,
    reminder_from_noun, rewrite_reminder, super_task_clause, unconditional_kind, without_once,
)
from fastslow.models.automation.rules.scopes import RawGroup, bind_scopes, condition_text
from fastslow.models.automation.rules.signals import has_condition_signal, signal_text
from fastslow.models.automation.rules.splits import command_cuts
from fastslow.models.automation.rules.words import (
    REMIND, done_tail, has_time_expression, has_verb, is_bare_device, is_plain_command, is_super_task_mention,
    leading_hesitation, plain_breaks, strip_fillers, takes_place,
)

__all__ = [
    "DEFAULT", "EXPANDS_WHEN_LOWERED", "INTENT_REMINDER", "INTENT_SYSTEM", "INTENT_VEHICLE", "REMIND", "REMIND_SAY",
    "SPAN_KINDS", "SPAN_REPAIRS", "Group", "RawGroup", "Span", "TextAnalysis", "add_missing_verb", "analyse",
    "assemble", "automation_text", "bind_scopes", "builtin_by_class", "builtin_function_action", "clean_subquery",
    "command_cuts", "condition_text", "done_tail", "duration_action", "function_prefix", "function_words",
    "group_dict", "has_condition_signal", "has_time_expression", "has_verb", "inherit_location", "inheritance_mode",
    "is_bare_device", "is_builtin", "is_plain_command", "is_reminder", "is_super_task_mention",
    "leading_hesitation", "lowered", "memo_edit_group", "missing_super_task_clauses", "parse_markup",
    "plain_breaks", "plain_groups", "plain_pieces", "plan_groups", "remind_say", "reminder_from_noun",
    "repair_spans", "rewrite_group", "rewrite_reminder", "signal_text", "spans_to_tags", "strip_fillers",
    "super_task_clause", "tags_to_spans", "takes_place", "to_markup", "unconditional_kind", "without_once",
]
