"""DP-SGD: dplib's DPSGDClassifier against Opacus on scikit-learn's digits, one thread each.

The same task on both sides: digits, ``X / 16``, ``train_test_split(test_size=0.25,
random_state=0)``; every row centred and scaled to norm 4 (:func:`dplib.dpsgd.normalize_rows`,
DPSGDClassifier's default, handed to Opacus already applied); softmax regression and a network
with one hidden layer of 32 tanh units, started from the same weights (dplib's
``init_params``, copied into the torch layers); Poisson sampling with rate q = 256 / n for
T = round(40 n / 256) steps (batch size 256 in expectation, 40 epochs), clipping norm 1, Adam
with learning rate 0.03 on the noisy mean gradient (sum of clipped gradients plus noise, over
q n); ε = 1, δ = 1e-5, σ calibrated by each library's own accountant (dplib: PLD; Opacus: PRV,
its default). One thread: ``OMP_NUM_THREADS=1``, numpy's BLAS limited to one thread,
``torch.set_num_threads(1)``.

Opacus is driven through its own parts (``GradSampleModule`` for the per-example gradients,
``DPOptimizer`` for clipping, noise and the step) with the Poisson batches drawn by indexing
tensors, which is what ``PrivacyEngine.make_private`` assembles minus its ``DataLoader``: the
fastest way to run Opacus on an in-memory table, so its throughput here is if anything flattered.

Samples per second = epochs · n / seconds, median over seeds after one untimed warm-up fit each,
twice: for the training alone (σ given: the DP-SGD steps, the goal's row) and for the whole
private fit (σ calibrated by the library's accountant, then the training). Test accuracy is the
mean over the same seeds. Goal: at least 2x Opacus's throughput at equal or better accuracy ("equal": within two
standard errors of the difference of the seed means).

Needs torch and opacus for the peer (``pip install -r bench/requirements-torch.txt``); without
them the Opacus side is empty and the row says why. Run: ``python bench/bench_dpsgd.py [--quick]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Measurement, Row, Section, machine, versions  # noqa: E402

__all__ = [
    "Setting",
    "accuracy_verdict",
    "main",
    "measurement_of",
    "run",
    "throughput",
    "throughput_verdict",
]

DELTA = 1e-5
THROUGHPUT_GOAL = 2.0
#: Smallest accuracy tolerance: 0.5 percentage point, one test image in 450 is 0.22.
MIN_ACCURACY_TOLERANCE = 0.005


@dataclass(frozen=True)
class Setting:
    """One DP-SGD configuration, run identically by both libraries."""

    name: str
    hidden: tuple[int, ...] = ()
    epsilon: float = 1.0
    delta: float = DELTA
    batch_size: int = 256
    epochs: int = 40
    learning_rate: float = 0.03
    max_grad_norm: float = 1.0


SETTINGS = (
    Setting("softmax regression"),
    Setting("one hidden layer (32 tanh)", hidden=(32,)),
)


# ------------------------------------------------------------------------ arithmetic (tested)


def throughput(epochs: int, n_train: int, seconds: float) -> float:
    """Training examples processed per second: ``epochs * n_train / seconds``.

    With Poisson sampling a run of ``epochs`` epochs touches ``epochs * n_train`` examples in
    expectation, whichever library runs it.

    >>> throughput(40, 1347, 2.0)
    26940.0
    """
    if epochs < 1 or n_train < 1:
        raise ValueError(f"epochs and n_train must be >= 1, got {epochs} and {n_train}")
    if not seconds > 0 or not math.isfinite(seconds):
        raise ValueError(f"seconds must be finite and > 0, got {seconds}")
    return epochs * n_train / seconds


def measurement_of(seconds: Sequence[float]) -> Measurement:
    """A :class:`Measurement` (median, min, max) of times already taken, one per seed."""
    if not seconds:
        raise ValueError("measurement_of needs at least one time")
    return Measurement(statistics.median(seconds), min(seconds), max(seconds), len(seconds))


def accuracy_verdict(ours: Sequence[float], theirs: Sequence[float]) -> tuple[float, float, bool]:
    """(difference of mean accuracies ours − theirs, tolerance, ours "equal or better").

    "Equal or better" means the difference is at least −tolerance, with tolerance two standard
    errors of the difference of the two seed means (at least ``MIN_ACCURACY_TOLERANCE``): seed
    noise alone does not fail the goal, a real loss of accuracy does.

    >>> diff, tol, ok = accuracy_verdict([0.90, 0.92], [0.91, 0.91])
    >>> round(diff, 6), ok
    (0.0, True)
    >>> accuracy_verdict([0.80, 0.80], [0.90, 0.90])[2]
    False
    """
    if not ours or not theirs:
        raise ValueError("accuracy_verdict needs at least one accuracy on each side")
    if any(not 0 <= a <= 1 for a in (*ours, *theirs)):
        raise ValueError("accuracies must lie in [0, 1]")
    diff = statistics.fmean(ours) - statistics.fmean(theirs)
    var = sum(statistics.variance(s) / len(s) for s in (ours, theirs) if len(s) > 1)
    tolerance = max(MIN_ACCURACY_TOLERANCE, 2 * math.sqrt(var))
    return diff, tolerance, diff >= -tolerance


def throughput_verdict(
    ours: float, theirs: float, accuracy_ok: bool, goal: float = THROUGHPUT_GOAL
) -> tuple[float, bool]:
    """(dplib throughput / Opacus throughput, goal met: ratio >= ``goal`` and accuracy ok).

    >>> throughput_verdict(50_000.0, 20_000.0, True)
    (2.5, True)
    >>> throughput_verdict(50_000.0, 20_000.0, False)
    (2.5, False)
    """
    if not ours > 0 or not theirs > 0:
        raise ValueError(f"throughputs must be > 0, got {ours} and {theirs}")
    ratio = ours / theirs
    return ratio, bool(ratio >= goal and accuracy_ok)


# ------------------------------------------------------------------------------------ the runs


def _data():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    return train_test_split(X / 16, y, test_size=0.25, random_state=0)


def _fit_dplib(setting: Setting, seed: int, X_train, X_test, y_train, y_test) -> dict:
    """σ calibration, then the fit with that σ: what ``fit`` does in one go, timed in two."""
    from dplib import DPSGDClassifier
    from dplib.accounting.dpsgd import noise_multiplier_for

    n = len(X_train)
    q = setting.batch_size / n
    steps = max(1, round(setting.epochs * n / setting.batch_size))  # as DPSGDClassifier.fit
    start = time.perf_counter()
    sigma = noise_multiplier_for(setting.epsilon, setting.delta, q, steps, accountant="pld")
    calibrated = time.perf_counter()
    model = DPSGDClassifier(
        setting.epsilon,
        setting.delta,
        hidden_layer_sizes=setting.hidden,
        batch_size=setting.batch_size,
        epochs=setting.epochs,
        learning_rate=setting.learning_rate,
        max_grad_norm=setting.max_grad_norm,
        classes=range(10),
        accountant="pld",
        noise_multiplier=sigma,
        random_state=seed,
    ).fit(X_train, y_train)
    done = time.perf_counter()
    if model.steps_ != steps or model.epsilon_spent_ > setting.epsilon * (1 + 1e-9):
        raise RuntimeError(f"dplib ran {model.steps_} steps spending {model.epsilon_spent_}")
    return {
        "calibrate": calibrated - start,
        "train": done - calibrated,
        "accuracy": float(model.score(X_test, y_test)),
        "sigma": sigma,
        "steps": steps,
    }


def _torch_model(setting: Setting, seed: int, n_features: int):
    """The torch twin of DPSGDClassifier's network, with dplib's initial weights."""
    import torch
    from torch import nn

    from dplib.dpsgd import init_params

    params = init_params(n_features, 10, setting.hidden, rng=seed)
    sizes = [w.shape for w in params[0::2]]
    layers: list[nn.Module] = []
    for i, (fan_in, fan_out) in enumerate(sizes):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 1:
            layers.append(nn.Tanh())
    model = nn.Sequential(*layers).double()
    linears = [m for m in model if isinstance(m, nn.Linear)]
    with torch.no_grad():
        for layer, w, b in zip(linears, params[0::2], params[1::2], strict=True):
            layer.weight.copy_(torch.from_numpy(w.T.copy()))
            layer.bias.copy_(torch.from_numpy(b.copy()))
    return model


def _fit_opacus(setting: Setting, seed: int, X_train, X_test, y_train, y_test) -> dict:
    import numpy as np
    import torch
    from opacus import GradSampleModule
    from opacus.accountants.utils import get_noise_multiplier
    from opacus.optimizers import DPOptimizer

    from dplib.dpsgd import normalize_rows

    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)
    Xtr = torch.from_numpy(normalize_rows(X_train))
    Xte = torch.from_numpy(normalize_rows(X_test))
    ytr = torch.from_numpy(np.asarray(y_train, dtype=np.int64))
    n = Xtr.shape[0]
    q = setting.batch_size / n
    steps = max(1, round(setting.epochs * n / setting.batch_size))
    start = time.perf_counter()
    sigma = get_noise_multiplier(
        target_epsilon=setting.epsilon,
        target_delta=setting.delta,
        sample_rate=q,
        steps=steps,
        accountant="prv",
    )
    calibrated = time.perf_counter()
    model = GradSampleModule(_torch_model(setting, seed, Xtr.shape[1]), loss_reduction="mean")
    optimizer = DPOptimizer(
        torch.optim.Adam(model.parameters(), lr=setting.learning_rate),
        noise_multiplier=sigma,
        max_grad_norm=setting.max_grad_norm,
        expected_batch_size=setting.batch_size,
        loss_reduction="mean",
        generator=generator,
    )
    loss_fn = torch.nn.CrossEntropyLoss(reduction="mean")
    for _ in range(steps):
        batch = torch.rand(n, generator=generator) < q  # Poisson sampling
        if not batch.any():  # probability (1 - q)^n, about 1e-123 here
            continue
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(Xtr[batch]), ytr[batch]).backward()
        optimizer.step()
    done = time.perf_counter()
    with torch.no_grad():
        predicted = model(Xte).argmax(dim=1).numpy()
    return {
        "calibrate": calibrated - start,
        "train": done - calibrated,
        "accuracy": float(np.mean(predicted == np.asarray(y_test))),
        "sigma": float(sigma),
        "steps": steps,
    }


def _opacus_missing() -> str | None:
    """Why Opacus cannot run here, or None."""
    try:
        import opacus  # noqa: F401
        import torch  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - an ImportError or a broken torch: say which
        return (
            f"opacus not runnable here ({type(exc).__name__}: {exc}); "
            "pip install -r bench/requirements-torch.txt"
        )
    return None


def _series_of(fit, setting: Setting, seeds: int, data) -> list[dict]:
    fit(setting, 10_000, *data)  # warm-up: imports, first-call costs
    return [fit(setting, seed, *data) for seed in range(seeds)]


def run(quick: bool = False, *, seeds: int | None = None) -> Section:
    """Both libraries on every setting, ``seeds`` fits each (default 5; 2 with ``quick``)."""
    from threadpoolctl import threadpool_limits

    seeds = seeds or (2 if quick else 5)
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    section = Section("DP-SGD: dplib against Opacus on digits")
    data = _data()
    n_train = len(data[0])
    missing = _opacus_missing()
    peer = "opacus"
    if missing is None:
        import torch

        torch.set_num_threads(1)
        found = versions("opacus", "torch")
        peer = f"opacus {found['opacus']} (torch {found['torch']})"
    with threadpool_limits(limits=1), warnings.catch_warnings():
        # Opacus's RDP helper suggests more orders; torch says a full backward hook fires on a
        # module whose input needs no gradient (the first layer's): neither changes a number.
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        for setting in SETTINGS:
            ours = _series_of(_fit_dplib, setting, seeds, data)
            theirs = _series_of(_fit_opacus, setting, seeds, data) if missing is None else None
            _add_rows(section, setting, ours, theirs, n_train, peer, missing)
            print(f"  {setting.name}: done", file=sys.stderr, flush=True)
    section.notes.append(
        f"digits: {n_train} train / {len(data[1])} test; {seeds} seed(s) per side after one "
        f"warm-up fit; epsilon {SETTINGS[0].epsilon:g}, delta {DELTA:g}, batch 256 (Poisson), "
        "40 epochs, clip 1, Adam lr 0.03; one thread"
    )
    section.notes.append(f"machine: {machine()}; versions: {versions('numpy', 'opacus', 'torch')}")
    return section


def _add_rows(section, setting, ours, theirs, n_train, peer, missing) -> None:
    """Three rows per setting: training throughput (the goal), whole fit, test accuracy."""
    task = f"DP-SGD {setting.name}, eps={setting.epsilon:g}"
    goal = f">= {THROUGHPUT_GOAL:g}x opacus at equal or better accuracy"
    acc_ours = [r["accuracy"] for r in ours]
    acc_theirs = [r["accuracy"] for r in theirs] if theirs is not None else None
    acc_ok = None
    if acc_theirs is not None:
        diff, tolerance, acc_ok = accuracy_verdict(acc_ours, acc_theirs)
        note = (
            f"sigma {ours[0]['sigma']:.4f} (dplib PLD) vs {theirs[0]['sigma']:.4f} (opacus PRV), "
            f"{ours[0]['steps']} vs {theirs[0]['steps']} steps; median of {len(ours)} seeds"
        )
    else:
        note = missing
    for label, parts, row_goal in (
        ("training throughput (sigma given)", ("train",), goal),
        ("whole fit throughput (sigma calibration + training)", ("calibrate", "train"), ""),
    ):
        m_ours = measurement_of([sum(r[k] for k in parts) for r in ours])
        tp_ours = throughput(setting.epochs, n_train, m_ours.median)
        row = Row("dpsgd", f"{task}: {label}", peer, "samples/s", tp_ours, None, goal=row_goal,
                  spread_ours=m_ours.spread, note=note)
        if theirs is not None:
            m_theirs = measurement_of([sum(r[k] for k in parts) for r in theirs])
            row.theirs = throughput(setting.epochs, n_train, m_theirs.median)
            row.ratio, met = throughput_verdict(tp_ours, row.theirs, acc_ok)
            row.ratio_kind = "dplib / opacus throughput"
            row.goal_met = met if row_goal else None
            row.spread_theirs = m_theirs.spread
        section.rows.append(row)
    row = Row("dpsgd", f"{task}: test accuracy", peer, "accuracy", statistics.fmean(acc_ours),
              None, spread_ours=_accuracy_spread(acc_ours), note=note)
    if acc_theirs is not None:
        row.theirs = statistics.fmean(acc_theirs)
        row.ratio, row.ratio_kind = diff, "accuracy difference dplib - opacus"
        row.goal, row.goal_met = f">= opacus - {tolerance:.3f} (2 s.e.)", acc_ok
        row.spread_theirs = _accuracy_spread(acc_theirs)
        row.note = (
            f"mean of {len(acc_ours)} seeds; min-max {min(acc_ours):.3f}-{max(acc_ours):.3f} vs "
            f"{min(acc_theirs):.3f}-{max(acc_theirs):.3f}"
        )
    section.rows.append(row)


def _accuracy_spread(values: Sequence[float]) -> float:
    mean = statistics.fmean(values)
    return (max(values) - min(values)) / (2 * mean) if mean > 0 else 0.0


def _print(section: Section) -> None:
    print(f"== {section.name}")
    for r in section.rows:
        theirs = f"{r.theirs:12.4g}" if r.theirs is not None else f"{'-':>12}"
        if r.spread_theirs is not None:
            theirs += f" ±{100 * r.spread_theirs:.0f}%"
        ours = f"{r.ours:12.4g}" + (f" ±{100 * r.spread_ours:.0f}%" if r.spread_ours is not None else "")
        ratio = f"  {r.ratio_kind} {r.ratio:.3g}" if r.ratio is not None else ""
        verdict = {True: "met", False: "NOT met", None: "n/a"}[r.goal_met]
        print(f"  {r.task:<58} {r.unit:<10} dplib {ours}  {r.peer} {theirs}{ratio}")
        if r.goal or r.note:
            print(f"      goal {r.goal or '-'}: {verdict}; {r.note}")
    for note in section.notes:
        print(f"  note: {note}")


def main(argv: list[str] | None = None) -> None:
    # One thread: set before numpy and torch load (run() also limits BLAS with threadpoolctl and
    # torch with set_num_threads, which is what counts when run_all.py has loaded them already).
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds per side instead of 5")
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args(argv)
    _print(run(args.quick, seeds=args.seeds))


if __name__ == "__main__":
    main()
