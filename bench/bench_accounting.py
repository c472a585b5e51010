"""Accountants: dplib's DP-SGD epsilon against dp-accounting, prv-accountant and Opacus.

For each DP-SGD setting (Poisson sampling rate q, noise multiplier sigma, steps T, delta 1e-5;
:data:`SETTINGS`, the MNIST one first) dplib's ``dpsgd_epsilon(q, sigma, T, delta,
accountant=...)`` is compared with what a user would otherwise call:

==========================  =====================================================  ==========
dplib accountant            peer                                                   epsilon goal
==========================  =====================================================  ==========
``"rdp"``                   dp-accounting ``RdpAccountant`` (same orders)          |diff| <= 1%
``"rdp"``                   Opacus ``RDPAccountant`` (its own orders)              diff <= +1%
``"pld"``                   dp-accounting ``PLDAccountant`` (grid 1e-4)            |diff| <= 1%
``"pld"``                   prv-accountant ``DPSGDAccountant`` (upper bound)       diff <= +1%
``"pld"``                   Opacus ``PRVAccountant`` (upper bound)                 diff <= +1%
==========================  =====================================================  ==========

diff = (dplib - peer) / peer. A peer running the same algorithm (dp-accounting) must agree both
ways; against another analysis dplib may be tighter, but never below the lower bound
prv-accountant certifies. Both PRV peers use Opacus's defaults, ``eps_error=0.01`` and
``delta_error=delta/1000``, and report their upper bound (a guarantee, what a user quotes).
Speed: milliseconds per call, dplib and the peer timed alternately; goal: faster than each.

Scaling: time per call against T from 1e2 to 1e6 at the MNIST q and sigma for dplib's two
accountants and the peers, each peer's series stopped before a call that would exceed its cap.

Run: ``python bench/bench_accounting.py [--quick]`` (inside .venv-bench to see the peers; a peer
that is not installed gets a row that says so).
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (  # noqa: E402
    Measurement,
    Row,
    Section,
    Series,
    measure_pair,
    measure_within,
    tightness_row,
    time_row,
)

from dplib.accounting.dpsgd import dpsgd_epsilon  # noqa: E402

GROUP = "accountants"
DELTA = 1e-5
TOLERANCE = 0.01
PRV_EPS_ERROR = 0.01


@dataclass(frozen=True)
class Setting:
    """One DP-SGD run to account for."""

    name: str
    q: float
    sigma: float
    steps: int


#: From tiny to large epsilon, short to long runs; the MNIST one (Abadi et al. 2016 style,
#: batch 256 of 60,000 for 60 epochs) first.
SETTINGS = (
    Setting("MNIST: q=256/60000 s=1.1 T=14062", 256 / 60000, 1.1, 14062),
    Setting("CIFAR-10: q=4096/50000 s=3 T=2500", 4096 / 50000, 3.0, 2500),
    Setting("q=0.01 s=1 T=1000", 0.01, 1.0, 1000),
    Setting("q=0.001 s=4 T=1e4 (small eps)", 0.001, 4.0, 10_000),
    Setting("q=1 s=1 T=1 (Gaussian)", 1.0, 1.0, 1),
    Setting("q=0.1 s=0.7 T=100", 0.1, 0.7, 100),
    Setting("q=0.02 s=0.6 T=1000 (large eps)", 0.02, 0.6, 1000),
    Setting("q=0.001 s=1 T=1e5 (long)", 0.001, 1.0, 100_000),
    Setting("q=0.01 s=2 T=3000", 0.01, 2.0, 3000),
)
#: --quick: the MNIST setting and three cheap ones.
QUICK_SETTINGS = tuple(SETTINGS[i] for i in (0, 2, 3, 4))


@dataclass(frozen=True)
class Budget:
    """Repeats and time limits of one run."""

    repeats: int
    budget: float
    scaling_steps: tuple[int, ...]
    scaling_cap: float

    @classmethod
    def for_run(cls, quick: bool) -> Budget:
        if quick:
            return cls(2, 3.0, (100, 1_000, 10_000), 3.0)
        return cls(5, 15.0, tuple(10**k for k in range(2, 7)), 20.0)


@contextmanager
def quiet() -> Iterator[None]:
    """Silence the peers' convergence warnings and log lines while they are timed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(previous)


# ------------------------------------------------------------------------------------- peers

#: An epsilon function ``f(q, sigma, steps) -> epsilon`` or the reason it is missing.
Accountant = Callable[[float, float, int], float]


def dp_accounting() -> tuple[Accountant, Accountant] | str:
    """dp-accounting's (RdpAccountant, PLDAccountant) as epsilon functions."""
    try:
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant
        from dp_accounting.rdp import rdp_privacy_accountant
    except ImportError as error:
        return f"dp-accounting not installed ({error})"

    def event(q: float, sigma: float, steps: int) -> object:
        return dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps
        )

    def rdp(q: float, sigma: float, steps: int) -> float:
        accountant = rdp_privacy_accountant.RdpAccountant()
        accountant.compose(event(q, sigma, steps))
        return float(accountant.get_epsilon(DELTA))

    def pld(q: float, sigma: float, steps: int) -> float:
        accountant = pld_privacy_accountant.PLDAccountant()  # value_discretization_interval 1e-4
        accountant.compose(event(q, sigma, steps))
        return float(accountant.get_epsilon(DELTA))

    return rdp, pld


def prv_accountant() -> tuple[Accountant, Callable[[float, float, int], tuple]] | str:
    """prv-accountant's upper bound as an epsilon function, and its (lower, estimate, upper)."""
    try:
        from prv_accountant.dpsgd import DPSGDAccountant
    except ImportError as error:
        return f"prv-accountant not installed ({error})"

    def bounds(q: float, sigma: float, steps: int) -> tuple[float, float, float]:
        accountant = DPSGDAccountant(noise_multiplier=sigma, sampling_probability=q,
                                     max_steps=steps, eps_error=PRV_EPS_ERROR,
                                     delta_error=DELTA / 1000)
        low, estimate, high = accountant.compute_epsilon(delta=DELTA, num_steps=steps)
        return float(low), float(estimate), float(high)

    return (lambda q, sigma, steps: bounds(q, sigma, steps)[2]), bounds


def opacus_accountants() -> tuple[Accountant, Accountant] | str:
    """Opacus's (RDPAccountant, PRVAccountant) as epsilon functions (history set directly)."""
    try:
        with quiet():
            from opacus.accountants import PRVAccountant, RDPAccountant
    except Exception as error:  # torch missing or broken: the rows carry the reason
        return f"opacus not importable ({type(error).__name__}: {error})"

    def rdp(q: float, sigma: float, steps: int) -> float:
        accountant = RDPAccountant()
        accountant.history = [(sigma, q, steps)]
        return float(accountant.get_epsilon(DELTA))

    def prv(q: float, sigma: float, steps: int) -> float:
        accountant = PRVAccountant()
        accountant.history = [(sigma, q, steps)]
        return float(accountant.get_epsilon(DELTA, eps_error=PRV_EPS_ERROR))

    return rdp, prv


def dplib_accountant(kind: str) -> Accountant:
    """dplib's ``dpsgd_epsilon`` with ``accountant=kind`` as an epsilon function."""
    return lambda q, sigma, steps: dpsgd_epsilon(q, sigma, steps, DELTA, accountant=kind)


@dataclass(frozen=True)
class Peer:
    """A peer accountant and how dplib's epsilon is judged against it."""

    name: str
    ours: str  # "rdp" or "pld"
    epsilon: Accountant | str
    two_sided: bool
    lower: Callable[[float, float, int], float] | None = None


def peers() -> list[Peer]:
    """Every peer, in table order (a missing one carries the reason as its ``epsilon``)."""
    dpa = dp_accounting()
    prv = prv_accountant()
    opa = opacus_accountants()

    def pick(found: tuple | str, index: int) -> Accountant | str:
        return found if isinstance(found, str) else found[index]

    return [
        Peer("dp-accounting RDP", "rdp", pick(dpa, 0), two_sided=True),
        Peer("Opacus RDP", "rdp", pick(opa, 0), two_sided=False),
        Peer("dp-accounting PLD", "pld", pick(dpa, 1), two_sided=True),
        Peer("prv-accountant", "pld", pick(prv, 0), two_sided=False,
             lower=None if isinstance(prv, str) else (lambda q, s, t: prv[1](q, s, t)[0])),
        Peer("Opacus PRV", "pld", pick(opa, 1), two_sided=False),
    ]


def epsilon_goal(two_sided: bool) -> str:
    """The goal's words for a tightness row."""
    if two_sided:
        return f"|diff| <= {TOLERANCE:.0%}"
    return f"diff <= +{TOLERANCE:.0%} (tighter ok)"


# ------------------------------------------------------------------------------------- rows


def compare(setting: Setting, peer: Peer, budget: Budget) -> list[Row]:
    """The epsilon row and the time row of dplib against ``peer`` on ``setting``."""
    ours_fn = dplib_accountant(peer.ours)
    args = (setting.q, setting.sigma, setting.steps)
    task = f"{setting.name} [{peer.ours.upper()}]"
    ours_eps = ours_fn(*args)
    if isinstance(peer.epsilon, str):
        ours_time = measure_within(lambda: ours_fn(*args), budget.repeats, budget.budget)
        note = f"{peer.name}: {peer.epsilon}"
        return [
            tightness_row(GROUP, task, peer.name, ours_eps, None,
                          goal=epsilon_goal(peer.two_sided), note=note),
            time_row(GROUP, task, peer.name, "ms/call", ours_time.scaled(1e3), None,
                     goal="faster than peer", note=note),
        ]
    theirs_fn = peer.epsilon
    try:
        with quiet():
            theirs_eps = theirs_fn(*args)
            lower = peer.lower(*args) if peer.lower is not None else None
    except Exception as error:  # the peer cannot do this setting: say so, keep dplib's figures
        ours_time = measure_within(lambda: ours_fn(*args), budget.repeats, budget.budget)
        note = f"{peer.name} failed: {type(error).__name__}: {error}"
        return [
            tightness_row(GROUP, task, peer.name, ours_eps, None,
                          goal=epsilon_goal(peer.two_sided), note=note),
            time_row(GROUP, task, peer.name, "ms/call", ours_time.scaled(1e3), None,
                     goal="faster than peer", note=note),
        ]
    with quiet():
        mine, theirs = measure_pair(lambda: ours_fn(*args), lambda: theirs_fn(*args),
                                    budget.repeats, budget.budget)
    note = ""
    if lower is not None:
        note = f"peer's certified lower bound {lower:.5g}"
    return [
        tightness_row(GROUP, task, peer.name, ours_eps, theirs_eps, tolerance=TOLERANCE,
                      two_sided=peer.two_sided, lower=lower, goal=epsilon_goal(peer.two_sided),
                      note=note),
        time_row(GROUP, task, peer.name, "ms/call", mine.scaled(1e3), theirs.scaled(1e3),
                 minimum=1.0, goal="faster than peer",
                 note=f"median of {mine.repeats} alternating pairs"),
    ]


def run(quick: bool = False) -> Section:
    """Every setting against every peer, then the scaling series; see the module docstring."""
    budget = Budget.for_run(quick)
    settings = QUICK_SETTINGS if quick else SETTINGS
    everyone = peers()
    section = Section("accountants", notes=[
        f"delta {DELTA:g}, add/remove neighbours, Poisson sampling. diff = (dplib - peer) / peer "
        "epsilon; time ratio = peer time / dplib time (above 1: dplib faster).",
        f"prv-accountant and Opacus PRV: eps_error {PRV_EPS_ERROR:g}, delta_error delta/1000, "
        "upper bound; their estimate lies about eps_error below it, so on a small epsilon an "
        f"absolute eps_error of {PRV_EPS_ERROR:g} is a large relative one.",
        "Opacus RDP uses its own orders (1.1 to 10.9 by 0.1, then 12 to 63); dplib and "
        "dp-accounting use dp-accounting's DEFAULT_RDP_ORDERS (up to 256 and beyond): either "
        "may be tighter depending on where the best order lies.",
    ])
    for setting in settings:
        for peer in everyone:
            section.rows.extend(compare(setting, peer, budget))
    section.notes.append(SCALING_NOTE)
    section.series.extend(scaling(budget, everyone))
    return section


#: What the scaling curves show (measured on 2 loaded cores, November 2026; see the report).
SCALING_NOTE = (
    "Scaling in T: an RDP accountant's cost does not depend on T (T times one RDP curve). "
    "dplib's PLD transforms the one-step PLD once by FFT over a window that a Chernoff bound "
    "sizes at about sqrt(T) standard deviations, then raises it to the power T by repeated "
    "squaring: its cost grows slowly with T (and it coarsens the grid when the window would "
    "exceed its memory cap). The PRV accountants (Opacus PRV, prv-accountant) use a mesh of "
    "eps_error / sqrt(T log(12 / delta_error) / 2) over a domain that also widens with T, so "
    "their grid grows about linearly in T and the FFT adds a log factor: their superlinear "
    "tail (Opacus PRV 1e5 -> 1e6 steps) is that mesh, not noise."
)


def scaling(budget: Budget, everyone: list[Peer]) -> list[Series]:
    """Seconds per call against steps at the MNIST q and sigma, dplib's and each peer's.

    A series stops before a size whose call would take longer than ``budget.scaling_cap``
    (predicted as ten times the previous size's time: at least linear growth is assumed).
    """
    mnist = SETTINGS[0]
    calls: list[tuple[str, Accountant]] = [
        ("dplib RDP", dplib_accountant("rdp")),
        ("dplib PLD", dplib_accountant("pld")),
    ]
    calls += [(p.name, p.epsilon) for p in everyone if not isinstance(p.epsilon, str)]
    out = []
    for name, fn in calls:
        sizes: list[float] = []
        seconds: list[float] = []
        for steps in budget.scaling_steps:
            if seconds and seconds[-1] * 10 > budget.scaling_cap:
                break
            try:
                with quiet():
                    timing: Measurement = measure_within(
                        lambda fn=fn, steps=steps: fn(mnist.q, mnist.sigma, steps),
                        min(budget.repeats, 3), budget.scaling_cap,
                    )
            except Exception:  # a peer failing at a size ends its series there
                break
            sizes.append(float(steps))
            seconds.append(timing.median)
        if len(sizes) >= 2:
            out.append(Series(name, "DP-SGD steps", sizes, seconds))
    return out


def main(argv: list[str] | None = None) -> None:
    """Run the accountants' benchmark alone and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="four settings, few repeats")
    args = parser.parse_args(argv)
    from report import format_exponents, format_table

    section = run(quick=args.quick)
    print(format_table([section]))
    print(format_exponents([section]))


if __name__ == "__main__":
    main()
