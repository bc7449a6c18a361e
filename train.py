"""Train fastslow on the bundled data, evaluate it, log it to MLflow (the same as `fastslow train`).

    python train.py                 # embedded defaults: bundled data, sqlite:///mlflow.db
    python train.py --help          # every option; the steps are in fastslow.models.lifecycle.training
"""

import sys

from fastslow.models.lifecycle.registry import precheck_training

if __name__ == "__main__":
    # a tracking server that is down is reported in a second, before training's imports take theirs
    if precheck_training(sys.argv[1:]):
        sys.exit(2)
    from fastslow.models.lifecycle.training import main

    sys.exit(main())
