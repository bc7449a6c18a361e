"""The router as a scikit-learn estimator: deterministic given its seed, cloneable, calibrated."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.special import log_softmax, logsumexp
from sklearn.base import clone

from fastslow.models.lifecycle.dataset import load_training
from fastslow.models.routing.router import Router, fit_temperature
from fastslow.models.taxonomy import CODE_LABEL


def small_training_set(n_per_code=25):
    rows, seen = [], {}
    for row in load_training():
        code = row["primary_reason_code"]
        if seen.get(code, 0) < n_per_code:
            seen[code] = seen.get(code, 0) + 1
            rows.append(row)
    return rows


def test_training_is_deterministic_given_the_seed():
    rows = small_training_set()
    codes = [r["primary_reason_code"] for r in rows]
    first = Router(random_state=7).fit(rows, codes)
    second = clone(first).fit(rows, codes)
    probe = ["太冷了", "打开座椅加热", "明天八点提醒我开会", "为什么天空是蓝色的"]
    assert np.array_equal(first.predict_proba(probe), second.predict_proba(probe))
    assert first.temperature_ == second.temperature_


def test_label_is_always_the_group_of_the_primary_code():
    rows = small_training_set(10)
    router = Router(calibration_folds=0).fit(rows, [r["primary_reason_code"] for r in rows])
    for route in router.route(["好冷啊帮我弄一下", "导航回家", "电量还剩多少", "嗯", "x" * 50]):
        assert CODE_LABEL[route.primary_reason_code] == route.label
        assert route.reason_codes[0] == route.primary_reason_code
        assert abs(sum(route.alternatives.values()) - 1.0) < 1e-3


def test_fast_floor_keeps_fast_only_above_its_probability():
    from fastslow.models.routing.router import fast_floor

    by_label = np.array([[0.55, 0.30, 0.15],   # 快 below the floor: the likelier of 慢 and 模糊
                         [0.55, 0.10, 0.35],
                         [0.75, 0.20, 0.05],   # 快 above it: kept
                         [0.20, 0.70, 0.10]])  # not 快: untouched
    argmax = by_label.argmax(axis=1)
    assert fast_floor(by_label, argmax, 0.6).tolist() == [1, 2, 0, 1]
    assert fast_floor(by_label, argmax, 0.0).tolist() == argmax.tolist()


def test_a_fast_floor_turns_an_unsure_fast_route_into_its_runner_up():
    rows = small_training_set(10)
    codes = [r["primary_reason_code"] for r in rows]
    plain = Router().fit(rows, codes)
    probe = ["好冷啊帮我弄一下", "导航回家", "电量还剩多少", "打开座椅加热", "把那个关了", "放首歌"]
    routes = plain.route(probe)
    floor = sorted(r.alternatives["快"] for r in routes if r.label == "快")[0] + 5e-4  # above the least sure 快 (rounded)
    floored = clone(plain).set_params(fast_min_probability=floor).fit(rows, codes).route(probe)
    for before, after in zip(routes, floored):
        if before.label == "快" and before.alternatives["快"] < floor:
            others = {k: v for k, v in before.alternatives.items() if k != "快"}
            assert after.label == max(others, key=others.get) and CODE_LABEL[after.primary_reason_code] == after.label
        else:
            assert after.label == before.label
    assert sum(a.label != b.label for a, b in zip(routes, floored)) >= 1


_LOGITS_OF = """
import sys
from fastslow.models.lifecycle.bundle import load_bundle
router = load_bundle(sys.argv[1]).router
queries = [line.rstrip("\\n") for line in open(sys.argv[2], encoding="utf-8")]
batch = router.decision_function(queries)
single = [router.decision_function([q])[0] for q in queries[:300]]
print(repr([float(x).hex() for row in [*batch, *single] for x in row]))
"""


def test_the_router_gives_the_same_floats_whatever_the_process_hash_seed(trained, tmp_path):
    """A set's order follows the process's hash seed (PYTHONHASHSEED, random per process); the order in which
    a query's lexicon hits are added must not, or two server workers give the same query different last bits
    (and, on a rounding edge, a different confidence). This process has its own seed (random, or the one the
    environment sets); the other process is given another."""
    queries = sorted({row["query"] for row in load_training() if "\n" not in row["query"]})[:1500]
    path = tmp_path / "queries.txt"
    path.write_text("".join(q + "\n" for q in queries), encoding="utf-8")
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    done = subprocess.run([sys.executable, "-c", _LOGITS_OF, str(trained["path"]), str(path)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed})
    assert done.returncode == 0, done.stderr[-2000:]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", ["-c", str(trained["path"]), str(path)])
        printed = io.StringIO()
        mp.setattr(sys, "stdout", printed)
        exec(_LOGITS_OF, {})  # the same lines, in this process
    assert printed.getvalue() == done.stdout


def test_the_temperature_fits_the_labels_whose_probability_the_confidence_is():
    rng = np.random.default_rng(0)
    label_of_class = np.array([0, 0, 0, 1, 1, 2])
    y = rng.integers(0, 6, 300)
    logits = rng.normal(0, 1, (300, 6))
    logits[np.arange(300), y] += 2.0
    # the gold label's probability is spread over its codes: the codes' own NLL wants it softer than the labels'
    logits[:, :3] += rng.normal(0, 1.5, (300, 3))

    def label_nll(t):
        by_code = log_softmax(logits / t, axis=1)
        by_label = np.stack([logsumexp(by_code[:, label_of_class == k], axis=1) for k in range(3)], axis=1)
        return -by_label[np.arange(300), label_of_class[y]].mean()

    t = fit_temperature(logits, y, label_of_class)
    assert label_nll(t) <= min(label_nll(t * 0.9), label_nll(t * 1.1))
    assert label_nll(t) <= label_nll(fit_temperature(logits, y, np.arange(6)))  # each code its own label: the old fit
