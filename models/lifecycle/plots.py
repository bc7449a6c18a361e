"""The pictures of a training run, logged to MLflow with every run (``evaluation/*.png``): confusion
matrices, a reliability diagram and a risk–coverage curve. Tick labels and titles are ASCII (the default
fonts have no CJK glyphs): labels by their slug (fast/slow/ambiguous), reason codes by their code.

``plot_confusion_matrix`` is also what the README's picture is drawn with (``tools/readme_figure.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fastslow.models.taxonomy import LABEL_SLUGS


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, none opened
    import matplotlib.pyplot as plt

    return plt


def correctness(rows: list[dict], records: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """(whether each record's label is the row's gold label, the record's confidence); an error
    record counts as wrong at confidence 0."""
    correct = np.array([rec.get("label") == row["label"] for row, rec in zip(rows, records)], dtype=bool)
    confidence = np.array([rec.get("confidence", 0.0) for rec in records], dtype=float)
    return correct, confidence


def risk_coverage_curve(correct: np.ndarray, confidence: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(coverage, accuracy): answering only the k most confident rows, for every k (ties by order, as
    ``metrics.risk_coverage``)."""
    order = np.argsort(-confidence, kind="stable")
    kept = np.arange(1, len(order) + 1)
    return kept / len(order), np.cumsum(correct[order]) / kept


def plot_confusion_matrix(matrix: pd.DataFrame, title: str, path: str | Path) -> Path:
    """A confusion matrix (rows gold, columns predicted, as ``Evaluation.label_confusion`` /
    ``code_confusion``) as a PNG at ``path``; counts written in the cells."""
    plt = _pyplot()
    names = [LABEL_SLUGS.get(x, x) for x in matrix.index]
    size = max(4.0, 0.45 * len(names) + 2)
    fig, ax = plt.subplots(figsize=(size, size))
    ax.imshow(matrix.values, cmap="Blues")
    ax.set_xticks(range(len(names)), names, rotation=75, fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    ax.set_title(title)
    for (i, j), v in np.ndenumerate(matrix.values):
        if v:
            ax.text(j, i, str(v), ha="center", va="center", fontsize=7,
                    color="white" if v > matrix.values.max() / 2 else "black")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_reliability(sets: dict[str, tuple[np.ndarray, np.ndarray]], path: str | Path, bins: int = 10) -> Path:
    """A reliability diagram of the label confidence, one curve per set (``{name: (correct,
    confidence)}``), drawn by scikit-learn's ``CalibrationDisplay``: a calibrated model lies on the
    diagonal, one below it is over-confident."""
    from sklearn.calibration import CalibrationDisplay

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 5.0))
    for name, (correct, confidence) in sets.items():
        if len(correct):
            CalibrationDisplay.from_predictions(correct, confidence, n_bins=bins, name=f"{name} (n={len(correct)})",
                                                ax=ax, pos_label=True)
    ax.set_xlabel("confidence of the label (mean per bin)")
    ax.set_ylabel("share of labels right")
    ax.set_title("reliability of the label confidence")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_risk_coverage(sets: dict[str, tuple[np.ndarray, np.ndarray]], path: str | Path) -> Path:
    """Accuracy of the most confident rows against the share of rows answered, one curve per set
    (``{name: (correct, confidence)}``): what a confidence threshold buys."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.5))
    for name, (correct, confidence) in sets.items():
        if len(correct):
            coverage, accuracy = risk_coverage_curve(correct, confidence)
            ax.plot(coverage, accuracy, label=f"{name} (n={len(correct)})")
    ax.set_xlim(0, 1)
    ax.set_xlabel("coverage (share of rows answered, most confident first)")
    ax.set_ylabel("label accuracy of the rows answered")
    ax.set_title("risk-coverage")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
