"""The router as a scikit-learn estimator: deterministic given its seed, cloneable, calibrated."""

import numpy as np
from sklearn.base import clone

from fastslow.models.lifecycle.dataset import load_training
from fastslow.models.routing.router import Router
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
