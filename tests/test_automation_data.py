"""The automation data: frozen where it must be, big and broad enough, never leaking into training,
and consistent with the rules."""

import importlib.util
import subprocess
import sys
from collections import Counter

import pytest

from conftest import ROOT
from fastslow.features.automation_lexicons import load_automation_lexicons
from fastslow.models.automation.data import (
    AUTOMATION_DEV_FILE, AUTOMATION_DIR, AUTOMATION_FIXTURE_FILE, automation_leaked, load_automation,
    load_automation_training,
)
from fastslow.models.automation.metrics import groups_match
from fastslow.models.automation.metrics import rules_output as groups_of_spans
from fastslow.models.automation.intents import IntentTaxonomy

INTENTS = set(IntentTaxonomy.load().intents)
LEX = load_automation_lexicons()


@pytest.fixture(scope="module")
def train():
    return load_automation_training(intents=INTENTS)


def rules_output(row):
    return groups_of_spans(row["text"], row["spans"], LEX)


def test_fixture_holds_every_spec_example():
    rows = load_automation(AUTOMATION_FIXTURE_FILE, INTENTS)
    assert len(rows) == 30
    assert sum(1 for r in rows if "builtin" in r["rules"]) == 15  # the spec's whole negative list
    assert {"compound_jiu", "compound_qie", "no_left", "multi_scope", "or_triggers", "default_super_task",
            "default_memo", "null_plain", "duration", "reminder_rewrite", "remind_say", "pure_condition",
            "no_super_task_clause", "location_inherit"} <= {rule for r in rows for rule in r["rules"]}


def test_no_fixture_or_dev_query_is_in_the_training_data(train):
    assert automation_leaked(train, load_automation(AUTOMATION_FIXTURE_FILE)) == []
    assert automation_leaked(train, load_automation(AUTOMATION_DEV_FILE)) == []


def test_no_generated_row_is_a_held_out_query_said_with_a_wake_word_filler_or_tail(train):
    """What the generator adds around a row (a wake word, a filler, a polite tail, punctuation) makes no new
    query: from its first span to its last, no generated row is a fixture or dev query (retired blind sets too)."""
    def core(text):
        return "".join(c for c in text if c.isalnum())

    held_out = {core(r["text"]) for path in (AUTOMATION_FIXTURE_FILE, *sorted(AUTOMATION_DEV_FILE.parent.glob("*.jsonl")))
                for r in load_automation(path)}
    generated = [r for r in train if (r.get("source") or "").startswith("generator:") and r["spans"]]
    assert len(generated) >= 2500
    said = [core(r["text"][min(s.start for s in r["spans"]):max(s.end for s in r["spans"])]) for r in generated]
    assert [t for t in said if t in held_out] == []


def test_training_data_is_large_and_covers_every_rule(train):
    assert len(train) >= 3000
    rules = Counter(rule for r in train for rule in r["rules"])
    for rule in ("compound_jiu", "compound_qie", "or_triggers", "multi_scope", "no_left", "duration",
                 "reminder_rewrite", "remind_say", "once", "super_task_clause", "default_super_task",
                 "default_memo", "null_plain", "pure_condition", "location_inherit", "builtin", "scope_end",
                 "reminder_noun", "missing_verb"):
        assert rules[rule] >= 20, rule
    assert sum(1 for r in train if r["source"] == "hand-written") >= 250


def test_dev_set_is_hand_written_and_broad():
    dev = load_automation(AUTOMATION_DEV_FILE, INTENTS)
    assert len(dev) >= 150
    conditions = Counter("null" if g["condition"] is None else ("default" if g["condition"] == "default" else "cond")
                         for r in dev for g in r["expected"])
    assert min(conditions.values()) >= 10


@pytest.mark.parametrize("path", [AUTOMATION_FIXTURE_FILE, AUTOMATION_DEV_FILE], ids=["fixture", "dev"])
def test_rules_on_the_gold_spans_give_the_gold_groups(path):
    # the oracle check: with perfect spans the rules alone reproduce every hand-written answer
    for row in load_automation(path):
        assert groups_match(rules_output(row), row["expected"], intents=False), row["query"]


def test_training_labels_are_what_the_rules_make_of_their_spans(train):
    for row in train:
        assert groups_match(rules_output(row), row["expected"], intents=False), row["query"]


def test_generator_is_deterministic_given_its_seed(tmp_path):
    out = tmp_path / "generated.jsonl"
    subprocess.run([sys.executable, str(ROOT / "tools" / "generate_automation_data.py"), "--seed", "13",
                    "--n", "6000", "--out", str(out)], check=True, capture_output=True, timeout=300)
    assert out.read_bytes() == (AUTOMATION_DIR / "train" / "generated.jsonl").read_bytes()


def test_each_template_draws_its_own_rows_whatever_the_others(monkeypatch):
    """A template added or dropped leaves every other template's rows as they were (but for how many), so a
    change of the data is the rows it meant to change, not a new draw of the whole sample."""
    spec = importlib.util.spec_from_file_location("generate_automation_data",
                                                  ROOT / "tools" / "generate_automation_data.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    every = tool.generate(13, 400)
    dropped = "t_multi"
    monkeypatch.setattr(tool.Gen, "TEMPLATES", [t for t in tool.Gen.TEMPLATES if t[0] != dropped])
    fewer = tool.generate(13, 400)

    def of(rows, template):
        return [r["query"] for r in rows if r["source"].removeprefix("generator:").split("+")[0] == template]

    assert of(every, dropped) and not of(fewer, dropped)
    for template, _ in tool.Gen.TEMPLATES:
        before, after = of(every, template), of(fewer, template)
        shared = min(len(before), len(after))
        assert shared and before[:shared] == after[:shared], template


def test_the_generator_composes_the_builtin_class(train):
    """Built-in behaviours are a class: the generator composes situations and what the car does in them
    from vocab/builtin_class.txt rather than repeating a list of pairs."""
    rows = [r for r in train if (r.get("source") or "").startswith("generator:t_builtin")]
    vocab = [line.split("\t")[0] for line in (AUTOMATION_DIR / "generator" / "vocab" / "builtin_class.txt")
             .read_text(encoding="utf-8").splitlines() if line.endswith("\tsituation")]
    composed = [r for r in rows if any(v in r["query"] for v in vocab)]
    assert len(rows) >= 90 and len(composed) >= 40
    assert len({r["expected"][0]["condition"] for r in composed}) >= 25
    assert sum(any(g.get("builtin") for g in r["expected"]) for r in composed) >= len(composed) // 2
