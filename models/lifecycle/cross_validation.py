"""K-fold cross-validation of the router on the routing training data (``train.py --cv K``)."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedGroupKFold

from fastslow.models.lifecycle.dataset import query_key
from fastslow.models.routing.metrics import evaluate

CV_METRICS = ("label_accuracy", "label_macro_f1", "code_accuracy", "ece")


def cross_validate(router, splitter, rows: list[dict], k: int, seed: int, review_threshold: float = 0.5,
                   automation=None) -> dict:
    """``cv_<metric>_mean`` and ``cv_<metric>_std`` over ``k`` folds of the full record path (``automation``: the
    trained parser, whose groups ``rows`` carry and the folds' models read).

    Folds are stratified by reason code, and every copy of a query (same normalised text and context)
    stays in one fold, so a duplicate never scores its own twin.
    """
    from fastslow.models.pipeline import FastslowModel

    if k < 2:
        raise ValueError(f"--cv needs at least 2 folds, got {k}")
    codes = [r["primary_reason_code"] for r in rows]
    folds = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    per_fold = []
    for train_idx, test_idx in folds.split(rows, codes, groups=[query_key(r) for r in rows]):
        fitted = clone(router).fit([rows[i] for i in train_idx], [codes[i] for i in train_idx])
        model = FastslowModel(router=fitted, splitter=splitter, version="cv", review_threshold=review_threshold,
                              automation=automation)
        per_fold.append(evaluate(model, [rows[i] for i in test_idx], "cv").metrics)
    out = {}
    for name in CV_METRICS:
        values = np.array([m[f"cv_{name}"] for m in per_fold], dtype=float)
        out[f"cv_{name}_mean"] = round(float(values.mean()), 4)
        out[f"cv_{name}_std"] = round(float(values.std(ddof=1)) if len(values) > 1 else 0.0, 4)
    return out


def cv_summary(metrics: dict, k: int) -> str:
    return f"cross-validation ({k} folds): " + ", ".join(
        f"{name.replace('_', ' ')} {metrics[f'cv_{name}_mean']:.3f} ± {metrics[f'cv_{name}_std']:.3f}"
        for name in CV_METRICS)
