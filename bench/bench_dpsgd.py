"""DP-SGD on scikit-learn's digits: test accuracy and fit time against epsilon, and the accountants.

The setting of the course's accuracy goals (>= 0.88 at epsilon 1, >= 0.93 at epsilon 4, each fit
under 30 s on one core): X / 16, ``train_test_split(test_size=0.25, random_state=0)``,
delta = 1e-5, DPSGDClassifier's defaults. Also prints the epsilon of each run by dplib's RDP and
PLD accountants and, when dp-accounting is installed (``make bench``), by Google's, side by side.
Opacus needs PyTorch and is not part of the bench environment; its accountant agrees with
dp-accounting's RDP one, which is printed instead.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the goal says
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from dplib import DPSGDClassifier, dpsgd_epsilon  # noqa: E402


def _dp_accounting_epsilon(q: float, sigma: float, steps: int, delta: float) -> str:
    try:
        import dp_accounting
    except ImportError:
        return "n/a"
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps
    )
    accountant = dp_accounting.pld.PLDAccountant()
    accountant.compose(event)
    return f"{accountant.get_epsilon(delta):.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X / 16, y, test_size=0.25, random_state=0)
    baseline = LogisticRegression(max_iter=2000).fit(X_train, y_train).score(X_test, y_test)
    print(f"digits: {len(X_train)} train / {len(X_test)} test; non-private logistic regression {baseline:.3f}")
    header = f"{'epsilon':>8}{'accuracy (mean, min-max)':>28}{'fit s':>8}{'sigma':>8}"
    print(header + f"{'dplib RDP':>11}{'dplib PLD':>11}{'dp-acc. PLD':>13}")
    for epsilon in (1.0, 2.0, 4.0, 8.0):
        scores, times = [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            model = DPSGDClassifier(epsilon, 1e-5, classes=range(10), random_state=seed).fit(X_train, y_train)
            times.append(time.perf_counter() - start)
            scores.append(model.score(X_test, y_test))
        q, sigma, steps = model.sampling_rate_, model.noise_multiplier_, model.steps_
        rdp = dpsgd_epsilon(q, sigma, steps, 1e-5, accountant="rdp")
        pld = dpsgd_epsilon(q, sigma, steps, 1e-5, accountant="pld")
        accuracy = f"{np.mean(scores):.3f} ({min(scores):.3f}-{max(scores):.3f})"
        print(
            f"{epsilon:>8g}{accuracy:>28}{statistics.median(times):>8.2f}{sigma:>8.2f}"
            f"{rdp:>11.4f}{pld:>11.4f}{_dp_accounting_epsilon(q, sigma, steps, 1e-5):>13}"
        )


if __name__ == "__main__":
    main()
