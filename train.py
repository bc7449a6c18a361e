"""Train fastslow on the bundled data, evaluate it, log it to MLflow (the same as `fastslow train`).

    python train.py                 # embedded defaults: bundled data, sqlite:///mlflow.db
    python train.py --help          # every option; the steps are in fastslow.models.lifecycle.training
"""

import sys

from fastslow.models.lifecycle.training import main

if __name__ == "__main__":
    sys.exit(main())
