"""Throughput of dplib's samplers next to numpy's raw samplers, OpenDP and diffprivlib.

Run with ``make bench`` (it builds ``.venv-bench`` with the peers: OpenDP, diffprivlib and
dp-accounting; diffprivlib 0.6 needs scikit-learn < 1.7, hence a separate environment). A peer that
is not installed is reported as such, so the script also runs in the course's ``.venv``.

Each figure is the median over ``--repeats`` runs of nanoseconds per released value. dplib and numpy
release a vector of ``--size`` values per call; diffprivlib's mechanisms release one scalar per
call (``randomise``), so they are timed over a Python loop, which is how they are used; OpenDP
releases a vector per call with exact (arbitrary-precision) sampling.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import dplib


def _time_per_value(release: Callable[[], object], values_per_call: int, repeats: int) -> float:
    release()  # warm-up (imports, caches)
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        release()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings) / values_per_call * 1e9


def _opendp(kind: str, scale: float, size: int) -> Callable[[], object] | str:
    try:
        import opendp.prelude as dp
    except ImportError:
        return "not installed"
    dp.enable_features("contrib")
    if kind == "laplace":
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
        measurement, data = space >> dp.m.then_laplace(scale=scale), [0.0] * size
    elif kind == "discrete_laplace":
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int)
        measurement, data = space >> dp.m.then_laplace(scale=scale), [0] * size
    elif kind == "gaussian":
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
        measurement, data = space >> dp.m.then_gaussian(scale=scale), [0.0] * size
    elif kind == "discrete_gaussian":
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int)
        measurement, data = space >> dp.m.then_gaussian(scale=scale), [0] * size
    else:
        return "n/a"
    return lambda: measurement(data)


def _diffprivlib(kind: str, epsilon: float, size: int) -> Callable[[], object] | str:
    try:
        from diffprivlib import mechanisms
    except ImportError:
        return "not installed"
    if kind == "laplace":
        mechanism = mechanisms.Laplace(epsilon=epsilon, sensitivity=1.0)
    elif kind == "discrete_laplace":
        mechanism = mechanisms.Geometric(epsilon=epsilon, sensitivity=1)
    elif kind == "snapping":
        mechanism = mechanisms.Snapping(epsilon=epsilon, sensitivity=1.0, lower=-1e3, upper=1e3)
    elif kind == "gaussian":
        mechanism = mechanisms.GaussianAnalytic(epsilon=epsilon, delta=1e-5, sensitivity=1.0)
    else:
        return "n/a"
    value = 0 if kind == "discrete_laplace" else 0.0
    return lambda: [mechanism.randomise(value) for _ in range(size)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="values per vectorized call")
    parser.add_argument("--loop-size", type=int, default=20_000, help="values per scalar-API loop")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    epsilon, size, loop = 1.0, args.size, args.loop_size
    rng = np.random.default_rng(0)
    zeros, int_zeros = np.zeros(size), np.zeros(size, dtype=np.int64)
    sigma = dplib.gaussian_sigma(1.0, epsilon, 1e-5)
    dsigma = dplib.discrete_gaussian_sigma(1.0, epsilon, 1e-5)
    selection_probabilities = dplib.exponential_mechanism_probabilities(np.arange(1000.0), 1.0, epsilon)

    rows: list[tuple[str, dict[str, Callable[[], object] | str], dict[str, int]]] = [
        (
            "Laplace, scale 1",
            {
                "numpy raw": lambda: rng.laplace(0.0, 1.0, size),
                "dplib": lambda: dplib.laplace_mechanism(zeros, 1.0, epsilon, rng=rng),
                "OpenDP": _opendp("laplace", 1.0, size // 10),
                "diffprivlib": _diffprivlib("laplace", epsilon, loop),
            },
            {"OpenDP": size // 10, "diffprivlib": loop},
        ),
        (
            "discrete Laplace, scale 1",
            {
                "numpy raw": lambda: rng.geometric(1 - np.exp(-1.0), size) - rng.geometric(1 - np.exp(-1.0), size),
                "dplib": lambda: dplib.discrete_laplace_mechanism(int_zeros, 1, epsilon, rng=rng),
                "OpenDP": _opendp("discrete_laplace", 1.0, size // 10),
                "diffprivlib": _diffprivlib("discrete_laplace", epsilon, loop),
            },
            {"OpenDP": size // 10, "diffprivlib": loop},
        ),
        (
            "snapping (Laplace on doubles), B = 1000",
            {
                "dplib": lambda: dplib.snapping_mechanism(zeros, 1.0, epsilon, 1e3, rng=rng),
                "diffprivlib": _diffprivlib("snapping", epsilon, loop),
            },
            {"diffprivlib": loop},
        ),
        (
            f"Gaussian, analytic sigma {sigma:.3f}",
            {
                "numpy raw": lambda: rng.normal(0.0, sigma, size),
                "dplib": lambda: dplib.gaussian_mechanism(zeros, 1.0, epsilon, 1e-5, rng=rng),
                "OpenDP": _opendp("gaussian", sigma, size // 10),
                "diffprivlib": _diffprivlib("gaussian", epsilon, loop),
            },
            {"OpenDP": size // 10, "diffprivlib": loop},
        ),
        (
            f"discrete Gaussian, sigma {dsigma:.3f}",
            {
                "dplib": lambda: dplib.discrete_gaussian_mechanism(int_zeros, 1, epsilon, 1e-5, rng=rng),
                "OpenDP": _opendp("discrete_gaussian", dsigma, size // 100),
            },
            {"OpenDP": size // 100},
        ),
        (
            "exponential mechanism, 1000 candidates",
            {
                "numpy raw (choice)": lambda: rng.choice(1000, size=size, p=selection_probabilities),
                "dplib": lambda: dplib.exponential_mechanism(np.arange(1000.0), 1.0, epsilon, rng=rng, size=size),
            },
            {},
        ),
    ]

    columns = ["numpy raw", "dplib", "OpenDP", "diffprivlib"]
    print(f"ns per released value (median of {args.repeats}); vector size {size:,}, scalar loops {loop:,}")
    print(f"{'mechanism':<42}" + "".join(f"{c:>16}" for c in columns))
    for label, implementations, counts in rows:
        cells = []
        for column in columns:
            key = next((k for k in implementations if k.startswith(column)), None)
            if key is None:
                cells.append("-")
                continue
            release = implementations[key]
            if isinstance(release, str):
                cells.append(release)
                continue
            cells.append(f"{_time_per_value(release, counts.get(key, size), args.repeats):,.1f}")
        print(f"{label:<42}" + "".join(f"{c:>16}" for c in cells))


if __name__ == "__main__":
    main()
