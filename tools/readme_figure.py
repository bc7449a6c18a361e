"""Draw the README's picture: the dev set's label confusion matrix, as `train.py` logs it to MLflow.

    python tools/readme_figure.py                                  # the model `python train.py` writes
    python tools/readme_figure.py --model M.joblib --out docs/images/confusion.png

The plot is `plot_confusion_matrix`, the function training uses for `evaluation/dev_confusion_label.png`,
so the picture is the one a data scientist sees in the MLflow UI. Only the dev set is drawn: a blind
set is never shown as more than its figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fastslow.models.lifecycle.bundle import ModelLoadError
from fastslow.models.lifecycle.dataset import DEV_FILE, load_labelled
from fastslow.models.lifecycle.manifest import DEFAULT_MODEL_PATH
from fastslow.models.lifecycle.registry import RegistryError, resolve
from fastslow.models.lifecycle.plots import plot_confusion_matrix
from fastslow.models.routing.metrics import evaluate

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL_PATH),
                        help="a bundle file or a model URI (default: the file `python train.py` writes)")
    parser.add_argument("--data", type=Path, default=DEV_FILE, help="labelled rows (default: the dev set)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "confusion.png")
    args = parser.parse_args(argv)
    try:
        model = resolve(args.model).load()
    except (ModelLoadError, RegistryError) as exc:
        print(f"readme_figure: {exc}", file=sys.stderr)
        return 2
    name = "dev" if args.data == DEV_FILE else args.data.stem
    ev = evaluate(model, load_labelled(args.data), name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot_confusion_matrix(ev.label_confusion, f"{name}: label", args.out)
    print(f"{name}: label accuracy {ev.metrics[f'{name}_label_accuracy']:.3f} over "
          f"{ev.metrics[f'{name}_n']} rows → {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
