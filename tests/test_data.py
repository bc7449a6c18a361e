"""The bundled data: big and broad enough, frozen where it must be, and never leaking into training."""

import hashlib
import subprocess
import sys
from collections import Counter

import pytest

from conftest import ROOT
from fastslow.features.spoken import strip_disfluencies
from fastslow.features.text import normalise
from fastslow.models.lifecycle.dataset import DATA_DIR, DEV_FILE, FIXTURE_FILE, leaked, load_labelled, load_training
from fastslow.models.taxonomy import REASON_CODES

GENERATED = DATA_DIR / "train" / "generated.jsonl"


@pytest.fixture(scope="module")
def train():
    return load_training()


def test_frozen_fixtures_match_their_checksums():
    # a fixture changes only by a visible version bump: a new file and a new line in SHA256SUMS
    for line in (DATA_DIR / "fixtures" / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((DATA_DIR / "fixtures" / name).read_bytes()).hexdigest() == digest, name


def test_fixture_holds_every_reason_code_group_and_the_context_example():
    rows = load_labelled(FIXTURE_FILE)
    assert {r["label"] for r in rows} == {"快", "慢", "模糊"}
    assert any(r["context"] and r["primary_reason_code"] == "CONTEXT_REQUIRED" for r in rows)


def test_no_fixture_or_dev_query_is_in_the_training_data(train):
    assert leaked(train, load_labelled(FIXTURE_FILE)) == []
    assert leaked(train, load_labelled(DEV_FILE)) == []


def test_no_generated_query_is_a_held_out_one_said_with_a_filler_or_a_wake_word():
    """The router strips spoken noise before it reads a query, so a generated row that is a dev or fixture
    query with a wake word, filler or tail around it would be that query to the model: none is."""
    def said(query):
        return "".join(c for c in strip_disfluencies(normalise(query)) if c.isalnum())

    held_out = {said(r["query"]) for path in (FIXTURE_FILE, *sorted(DEV_FILE.parent.glob("*.jsonl")))
                for r in load_labelled(path)}
    generated = load_labelled(DATA_DIR / "train" / "generated.jsonl")
    assert len(generated) >= 7000
    assert [r["query"] for r in generated if said(r["query"]) in held_out] == []


def test_training_data_is_large_and_covers_every_reason_code(train):
    assert len(train) >= 6000
    counts = Counter(r["primary_reason_code"] for r in train)
    short = {c: counts[c] for c in REASON_CODES if c != "POLICY_UNCERTAIN" and counts[c] < 100}
    assert short == {}
    assert counts["POLICY_UNCERTAIN"] > 0


def test_training_data_varies_like_speech(train):
    lengths = [len(r["query"]) for r in train]
    assert min(lengths) <= 2 and max(lengths) >= 36
    assert sum(1 for r in train if r["context"]) >= 300
    endpoints = Counter(r["endpoint"] for r in train)
    assert all(endpoints[e] > 50 for e in ("car", "speaker", "home", None))


def test_dev_set_is_hand_written_broad_and_separate():
    dev = load_labelled(DEV_FILE)
    assert len(dev) >= 300
    assert {r["primary_reason_code"] for r in dev} == set(REASON_CODES)


def test_generator_is_deterministic_given_its_seed(tmp_path):
    out = tmp_path / "generated.jsonl"
    subprocess.run([sys.executable, str(ROOT / "tools" / "generate_routing_data.py"), "--seed", "13", "--out", str(out)],
                   check=True, capture_output=True, timeout=300)
    assert out.read_bytes() == GENERATED.read_bytes()
