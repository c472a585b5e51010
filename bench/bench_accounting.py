"""DP-SGD accounting: dplib's RDP and PLD accountants next to Google's dp-accounting.

For each setting (sampling rate q, noise multiplier σ, steps, δ = 1e-5) it prints ε and the
median time per call of

- dplib RDP  (``dpsgd_epsilon(..., accountant="rdp")``: 156 default orders, tight conversion),
- dplib PLD  (``dpsgd_epsilon(..., accountant="pld")``: connect-the-dots, grid 1e-4),
- dp-accounting's ``RdpAccountant`` and ``PLDAccountant`` (grid 1e-4) on
  ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), steps)``,

and the relative difference of dplib's ε from dp-accounting's. dp-accounting is *not* a
dependency of dplib: when it is not importable its columns are skipped with a note. To get
them, install it in a separate environment and put dplib on the path::

    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install dp-accounting
    PYTHONPATH=. /tmp/refvenv/bin/python bench/bench_accounting.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from dplib.accounting.dpsgd import dpsgd_epsilon

DELTA = 1e-5
# (name, q, sigma, steps): from tiny to huge epsilon
SETTINGS = [
    ("MNIST 60 epochs", 256 / 60000, 1.1, 14062),
    ("q=0.01 s=1 T=1000", 0.01, 1.0, 1000),
    ("q=1 s=1 T=1", 1.0, 1.0, 1),
    ("q=0.001 s=4 T=1e4", 0.001, 4.0, 10000),
    ("q=0.1 s=0.7 T=100", 0.1, 0.7, 100),
    ("q=0.02 s=0.5 T=5000", 0.02, 0.5, 5000),
]


def _timed(fn: Callable[[], float], repeats: int) -> tuple[float, float]:
    """(value, median seconds per call) after one warm-up call."""
    value = fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def _dp_accounting() -> tuple[Callable[..., float], Callable[..., float]] | None:
    try:
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant
        from dp_accounting.rdp import rdp_privacy_accountant
    except ImportError:
        return None

    def event(q: float, sigma: float, steps: int):
        return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)

    def rdp(q: float, sigma: float, steps: int) -> float:
        accountant = rdp_privacy_accountant.RdpAccountant()
        accountant.compose(event(q, sigma, steps))
        return float(accountant.get_epsilon(DELTA))

    def pld(q: float, sigma: float, steps: int) -> float:
        accountant = pld_privacy_accountant.PLDAccountant()
        accountant.compose(event(q, sigma, steps))
        return float(accountant.get_epsilon(DELTA))

    return rdp, pld


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per figure (median)")
    args = parser.parse_args()

    reference = _dp_accounting()
    if reference is None:
        print("note: dp-accounting is not importable; its columns are skipped "
              "(see this script's docstring to install it in a separate environment)\n")
    else:
        from importlib.metadata import version
        print(f"dp-accounting {version('dp-accounting')}, delta = {DELTA}, "
              f"median of {args.repeats} calls\n")

    header = f"{'setting':<22}{'dplib RDP':>11}{'time':>9}{'dplib PLD':>11}{'time':>9}"
    if reference is not None:
        header += f"{'dpa RDP':>11}{'time':>9}{'dpa PLD':>11}{'time':>9}{'rel RDP':>10}{'rel PLD':>10}"
    print(header)
    print("-" * len(header))
    for name, q, sigma, steps in SETTINGS:
        rdp, t_rdp = _timed(lambda q=q, s=sigma, n=steps: dpsgd_epsilon(q, s, n, DELTA), args.repeats)
        pld, t_pld = _timed(lambda q=q, s=sigma, n=steps: dpsgd_epsilon(q, s, n, DELTA, accountant="pld"),
                            args.repeats)
        row = f"{name:<22}{rdp:>11.5f}{t_rdp:>8.3f}s{pld:>11.5f}{t_pld:>8.3f}s"
        if reference is not None:
            ref_rdp, tr_rdp = _timed(lambda q=q, s=sigma, n=steps: reference[0](q, s, n), args.repeats)
            ref_pld, tr_pld = _timed(lambda q=q, s=sigma, n=steps: reference[1](q, s, n), args.repeats)
            row += (f"{ref_rdp:>11.5f}{tr_rdp:>8.3f}s{ref_pld:>11.5f}{tr_pld:>8.3f}s"
                    f"{(rdp - ref_rdp) / ref_rdp:>10.1e}{(pld - ref_pld) / ref_pld:>10.1e}")
        print(row)


if __name__ == "__main__":
    main()
