"""Database reconstruction: recover a census block's residents from its published statistics.

A statistical agency publishes, for each group of a small area (everyone, women, men, married
people, ...), the count, the median age and the mean age. Each statistic is a constraint on the
unknown residents; enough of them leave a single block consistent with all of them, like the
clues of a sudoku (Garfinkel, Abowd & Martindale 2018; the US Census Bureau's own reconstruction of
the 2010 census).

The attack by hand on one group is in :mod:`dplib.attacks.consistent_ages`. Here:

- :func:`reconstruct_block` writes the whole table as an integer linear program and solves it
  with HiGHS through :func:`scipy.optimize.milp`; :func:`reconstruction_is_unique` asks the solver
  for a *different* block and reports whether none exists. For a noisy table, medians and means
  may be given tolerances (any block whose statistics fall in the windows fits), or
  ``robust=True`` looks for the block that fits the noisy table best (slow, heuristic).

The integer program has one variable ``n[c, a] >= 0`` per *cell* ``c`` (a combination of the
attributes, e.g. ("F", "married")) and age ``a``: the number of residents of that cell and age.
For a group ``g`` (a set of cells), with ``C_g(v) = sum_{c in g, a <= v} n[c, a]``:

- count: ``C_g(max_age) = count_g``;
- mean: ``sum_{c in g, a} a * n[c, a] = mean_g * count_g``;
- median, odd count ``2k + 1``: the (k+1)-th smallest age is ``m``, i.e. ``C_g(m - 1) <= k`` and
  ``C_g(m) >= k + 1``;
- median, even count ``2k``: the k-th and (k+1)-th smallest ages ``lo <= hi`` satisfy
  ``lo + hi = 2m``. One binary ``y_lo`` per candidate ``lo`` selects the pair, and the
  order-statistic inequalities of that pair are enforced with a big-M of ``count_g``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse
from scipy.optimize import LinearConstraint, milp

from dplib._validation import check_integer
from dplib.attacks._tables import check_table

__all__ = [
    "GroupStatistic",
    "block_statistics",
    "reconstruct_block",
    "reconstruction_is_unique",
]


@dataclass(frozen=True)
class GroupStatistic:
    """One published row: a group of residents and its count, median age and mean age.

    Parameters
    ----------
    name : str
        Label of the row, e.g. ``"female, married"``.
    where : tuple of (column, value) pairs
        The group: residents matching every pair. ``()`` is everyone. The column ``"age"`` takes
        an inclusive range ``(low, high)`` instead of a value.
    count : float
        Number of residents in the group.
    median, mean : float or None
        Median and mean age; ``None`` when not published (e.g. an empty group).
    """

    name: str
    where: tuple[tuple[str, str], ...] = field(default=())
    count: float = 0.0
    median: float | None = None
    mean: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.where, Mapping):
            object.__setattr__(self, "where", tuple(sorted(self.where.items())))
        else:
            object.__setattr__(self, "where", tuple((c, v) for c, v in self.where))


def _median(values: np.ndarray) -> float:
    return float(np.median(values))


def block_statistics(
    block: Mapping[str, Any], groups: Sequence[tuple[str, Mapping[str, str]]], *, age: str = "age"
) -> list[GroupStatistic]:
    """The table an agency would publish for ``block``: count, median and mean age per group.

    Parameters
    ----------
    block : dict of str to 1-d array
        One row per resident, with an ``age`` column and the attribute columns used in ``groups``.
    groups : list of (name, where) pairs
        ``where`` maps attribute columns to the value selecting the group (``{}`` for everyone);
        the key ``"age"`` may map to an inclusive range ``(low, high)``, e.g. ``(0, 17)``.
    age : str, default "age"
        The age column.

    Returns
    -------
    list of GroupStatistic
        Median and mean are ``None`` for an empty group.
    """
    columns = sorted({c for _, where in groups for c in where} | {age})
    check_table(block, columns, "block")
    ages = np.asarray(block[age])
    out = []
    for name, where in groups:
        mask = np.ones(ages.shape[0], dtype=bool)
        for column, value in where.items():
            if column == age:
                low, high = value
                mask &= (ages >= low) & (ages <= high)
            else:
                mask &= np.asarray(block[column]) == value
        values = ages[mask]
        if values.size:
            out.append(
                GroupStatistic(
                    name, dict(where), int(values.size), _median(values), float(values.mean())
                )
            )
        else:
            out.append(GroupStatistic(name, dict(where), 0, None, None))
    return out


# --------------------------------------------------------------------------------------------
# Integer program for a whole block
# --------------------------------------------------------------------------------------------


def _domains(
    table: Sequence[GroupStatistic], domains: Mapping[str, Sequence[str]] | None
) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in table:
        for column, value in row.where:
            if column == "age":
                continue
            found.setdefault(column, [])
            if value not in found[column]:
                found[column].append(value)
    if domains is not None:
        for column, values in domains.items():
            found[column] = list(values)
    return {column: sorted(values) for column, values in sorted(found.items())}


class _Program:
    """Accumulates the rows of a sparse constraint matrix and the extra variables."""

    def __init__(self, n_base: int) -> None:
        self.n_vars = n_base
        self.rows: list[tuple[dict[int, float], float, float]] = []
        self.integrality: list[int] = [1] * n_base
        self.upper: list[float] = []
        self.cost: list[float] = [0.0] * n_base

    def new_var(self, *, integer: bool, upper: float, cost: float = 0.0) -> int:
        self.integrality.append(1 if integer else 0)
        self.upper.append(upper)
        self.cost.append(cost)
        self.n_vars += 1
        return self.n_vars - 1

    def add(self, coefs: dict[int, float], lb: float, ub: float) -> None:
        self.rows.append((coefs, lb, ub))

    def solve(self, base_upper: float, time_limit: float | None, node_limit: int | None = None):
        n = self.n_vars
        data, ri, ci, lbs, ubs = [], [], [], [], []
        for r, (coefs, lb, ub) in enumerate(self.rows):
            for j, v in coefs.items():
                ri.append(r)
                ci.append(j)
                data.append(v)
            lbs.append(lb)
            ubs.append(ub)
        a = sparse.csr_array((data, (ri, ci)), shape=(len(self.rows), n))
        n_base = n - len(self.upper)
        upper = np.concatenate([np.full(n_base, base_upper), np.asarray(self.upper, dtype=float)])
        options = {"disp": False}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        if node_limit is not None:
            options["node_limit"] = int(node_limit)
        constraints = [LinearConstraint(a, np.asarray(lbs), np.asarray(ubs))] if self.rows else []
        return milp(
            np.asarray(self.cost),
            integrality=np.asarray(self.integrality),
            bounds=(np.zeros(n), upper),
            constraints=constraints,
            options=options,
        )


def _group_members(
    row: GroupStatistic, cells: list[tuple[str, ...]], names: list[str], n_ages: int
) -> list[tuple[int, int]]:
    """The (variable index, age) pairs of the residents a published row describes."""
    where = dict(row.where)
    low, high = where.pop("age", (0, n_ages - 1))
    for column in where:
        if column not in names:
            raise ValueError(f"group {row.name!r} filters on unknown column {column!r}")
    chosen = [
        i
        for i, cell in enumerate(cells)
        if all(cell[names.index(c)] == v for c, v in where.items())
    ]
    ages = range(max(int(low), 0), min(int(high), n_ages - 1) + 1)
    return [(c * n_ages + a, a) for c in chosen for a in ages]


def _exact_rows(
    prog: _Program,
    row: GroupStatistic,
    members: list[tuple[int, int]],
    n_ages: int,
    tolerance: float,
    median_tolerance: float,
) -> bool:
    """Add the constraints of one published row; False if the row is impossible on its face."""
    count = float(row.count)
    if abs(count - round(count)) > 1e-9 or count < 0:
        return False
    count = int(round(count))

    def cumulative(v: int) -> dict[int, float]:
        return {j: 1.0 for j, a in members if a <= v}

    prog.add(cumulative(n_ages - 1), count, count)
    if count == 0:
        return True
    if row.mean is not None:
        center = float(row.mean) * count
        slack = tolerance * count
        lo, hi = math.ceil(center - slack - 1e-9), math.floor(center + slack + 1e-9)
        if lo > hi:
            return False
        prog.add({j: float(a) for j, a in members}, lo, hi)
    if row.median is not None:
        low, high = float(row.median) - median_tolerance, float(row.median) + median_tolerance
        k = count // 2
        if count % 2 == 1 and median_tolerance == 0:
            # the (k+1)-th smallest age is the published median
            if abs(low - round(low)) > 1e-9 or not 0 <= round(low) < n_ages:
                return False
            m = int(round(low))
            if m > 0:
                prog.add(cumulative(m - 1), -np.inf, k)
            prog.add(cumulative(m), k + 1, np.inf)
            return True
        if count % 2 == 0 and median_tolerance == 0:
            # the k-th and (k+1)-th smallest ages (lo, hi) satisfy lo + hi = 2 * median:
            # one binary per candidate pair, its order-statistic constraints switched on by big-M
            twice = 2.0 * low
            if abs(twice - round(twice)) > 1e-9:
                return False
            twice = int(round(twice))
            big = float(count)
            choices = []
            for lo in range(0, n_ages):
                hi = twice - lo
                if hi < lo:
                    break
                if hi >= n_ages:
                    continue
                y = prog.new_var(integer=True, upper=1.0)
                choices.append(y)
                if lo > 0:
                    prog.add({**cumulative(lo - 1), y: big}, -np.inf, k - 1 + big)
                prog.add({**cumulative(lo), y: -big}, k - big, np.inf)
                if hi > 0:
                    prog.add({**cumulative(hi - 1), y: big}, -np.inf, k + big)
                prog.add({**cumulative(hi), y: -big}, k + 1 - big, np.inf)
            if not choices:
                return False
            prog.add({y: 1.0 for y in choices}, 1, 1)
            return True
        # One binary per candidate value of each middle order statistic; the selected values
        # must average to a median inside [low, high].
        ranks = [k + 1] if count % 2 == 1 else [k, k + 1]
        big = float(count)
        value_terms: dict[int, float] = {}
        for rank in ranks:
            choices = {}
            for v in range(n_ages):
                if count % 2 == 1 and not low - 1e-9 <= v <= high + 1e-9:
                    continue
                if count % 2 == 0 and not (2 * low - (n_ages - 1) - 1e-9 <= v <= 2 * high + 1e-9):
                    continue
                y = prog.new_var(integer=True, upper=1.0)
                choices[y] = v
                # the rank-th smallest age is v:  C(v - 1) <= rank - 1  and  C(v) >= rank
                if v > 0:
                    prog.add({**cumulative(v - 1), y: big}, -np.inf, rank - 1 + big)
                prog.add({**cumulative(v), y: -big}, rank - big, np.inf)
            if not choices:
                return False
            prog.add({y: 1.0 for y in choices}, 1, 1)
            value_terms.update({y: float(v) / len(ranks) for y, v in choices.items()})
        prog.add(value_terms, low - 1e-9, high + 1e-9)
    return True


def _robust_rows(
    prog: _Program, row: GroupStatistic, members: list[tuple[int, int]], n_ages: int
) -> None:
    """Soft versions of one row's constraints, with penalised slack (least absolute deviations)."""
    count = max(float(row.count), 0.0)
    total = {j: 1.0 for j, _ in members}
    over = prog.new_var(integer=False, upper=np.inf, cost=1.0)
    under = prog.new_var(integer=False, upper=np.inf, cost=1.0)
    prog.add({**total, over: -1.0, under: 1.0}, count, count)
    if row.mean is not None and count >= 0.5:
        weight = 1.0 / max(count, 1.0)
        over = prog.new_var(integer=False, upper=np.inf, cost=weight)
        under = prog.new_var(integer=False, upper=np.inf, cost=weight)
        sums = {j: float(a) for j, a in members}
        prog.add({**sums, over: -1.0, under: 1.0}, float(row.mean) * count, float(row.mean) * count)
    if row.median is not None and count >= 0.5:
        # At least half of the group is <= median and at least half is >= median (linear in n).
        m_low = int(np.clip(math.floor(float(row.median)), 0, n_ages - 1))
        m_high = int(np.clip(math.ceil(float(row.median)), 0, n_ages - 1))
        for ages in (range(0, m_low + 1), range(m_high, n_ages)):
            slack = prog.new_var(integer=False, upper=np.inf, cost=1.0)
            coefs = {j: -0.5 for j in total}
            for j, a in members:
                if a in ages:
                    coefs[j] += 1.0
            coefs[slack] = 1.0
            prog.add(coefs, 0.0, np.inf)


def _build(
    table: Sequence[GroupStatistic],
    max_age: int,
    domains: Mapping[str, Sequence[str]] | None,
    robust: bool,
    mean_tolerance: float,
    median_tolerance: float = 0.0,
) -> tuple[_Program | None, list[str], list[tuple[str, ...]], int]:
    if len(table) == 0:
        raise ValueError("table must hold at least one GroupStatistic")
    for row in table:
        if not isinstance(row, GroupStatistic):
            raise TypeError(f"table must be a list of GroupStatistic, got {type(row).__name__}")
    max_age = check_integer(max_age, "max_age", minimum=0)
    doms = _domains(table, domains)
    names = list(doms)
    cells = list(itertools.product(*doms.values())) if names else [()]
    n_ages = max_age + 1
    prog = _Program(len(cells) * n_ages)
    for row in table:
        members = _group_members(row, cells, names, n_ages)
        if robust:
            _robust_rows(prog, row, members, n_ages)
        elif not _exact_rows(prog, row, members, n_ages, mean_tolerance, median_tolerance):
            return None, names, cells, n_ages
    return prog, names, cells, n_ages


def _decode(
    x: np.ndarray, names: list[str], cells: list[tuple[str, ...]], n_ages: int
) -> dict[str, np.ndarray]:
    counts = np.rint(x[: len(cells) * n_ages]).astype(int).reshape(len(cells), n_ages)
    columns: dict[str, list] = {name: [] for name in names}
    ages: list[int] = []
    for c, cell in enumerate(cells):
        for a in np.flatnonzero(counts[c]):
            for _ in range(counts[c, a]):
                for name, value in zip(names, cell, strict=True):
                    columns[name].append(value)
                ages.append(int(a))
    out = {name: np.asarray(values, dtype=str) for name, values in columns.items()}
    out["age"] = np.asarray(ages, dtype=int)
    return out


def _counts_of(
    block: Mapping[str, Any], names: list[str], cells: list[tuple[str, ...]], n_ages: int
) -> np.ndarray:
    check_table(block, [*names, "age"], "solution")
    ages = np.asarray(block["age"], dtype=int)
    counts = np.zeros((len(cells), n_ages), dtype=int)
    index = {cell: i for i, cell in enumerate(cells)}
    for r in range(ages.shape[0]):
        cell = tuple(str(np.asarray(block[name])[r]) for name in names)
        if cell not in index or not 0 <= ages[r] < n_ages:
            raise ValueError(f"solution row {r} ({cell}, age {ages[r]}) is outside the model")
        counts[index[cell], ages[r]] += 1
    return counts.ravel()


def reconstruct_block(
    table: Sequence[GroupStatistic],
    *,
    max_age: int = 115,
    domains: Mapping[str, Sequence[str]] | None = None,
    robust: bool = False,
    exclude: Mapping[str, Any] | None = None,
    mean_tolerance: float = 1e-6,
    median_tolerance: float = 0.0,
    time_limit: float | None = 60.0,
    node_limit: int | None = None,
) -> dict[str, np.ndarray] | None:
    """Find a block of residents that reproduces a published table, by integer programming.

    Parameters
    ----------
    table : list of GroupStatistic
        The published rows (see :func:`block_statistics`).
    max_age : int, default 115
        Oldest possible age.
    domains : dict of column -> values, optional
        All values of each attribute; by default the values that appear in ``table``.
    robust : bool, default False
        ``False``: every statistic must hold exactly (returns ``None`` if no block does).
        ``True``: the best fit to a *noisy* table, minimising the total absolute deviation of the
        counts, of the means and of a linear relaxation of the medians (at least half of a group on
        each side of its median). Always finds a block.
    exclude : dict, optional
        A previous solution; the solver must return a different block (see
        :func:`reconstruction_is_unique`).
    mean_tolerance : float, default 1e-6
        Published means may be off by this much (e.g. 0.05 for means rounded to one decimal).
    median_tolerance : float, default 0
        Published medians may be off by this much (for a noisy table).
    time_limit : float or None, default 60
        Seconds given to HiGHS.
    node_limit : int or None, optional
        Branch-and-bound nodes given to HiGHS. Unlike a time limit it gives the same answer on
        every machine, so use it (with ``robust=True``) when the result must be reproducible.

    Returns
    -------
    dict of str to numpy.ndarray or None
        One row per resident (attribute columns and ``age``), sorted by cell then age; ``None``
        if no block reproduces the table exactly. In robust mode, the best block found within
        ``time_limit`` (which may not be the best possible fit).

    Raises
    ------
    RuntimeError
        If the solver runs out of time before it finds a block or proves that none exists.

    References
    ----------
    S. Garfinkel, J. M. Abowd and C. Martindale (2018), "Understanding Database Reconstruction
    Attacks on Public Data", ACM Queue 16(5). I. Dinur and K. Nissim (2003), "Revealing
    Information while Preserving Privacy", PODS.
    """
    for name, value in (("mean_tolerance", mean_tolerance), ("median_tolerance", median_tolerance)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    prog, names, cells, n_ages = _build(
        table, max_age, domains, robust, mean_tolerance, float(median_tolerance)
    )
    if prog is None:
        return None
    if exclude is not None:
        previous = _counts_of(exclude, names, cells, n_ages)
        big = float(max(previous.sum(), 1) + 1)
        switches = []
        for j in np.flatnonzero(previous):
            z = prog.new_var(integer=True, upper=1.0)
            switches.append(z)
            # z = 1 forces n_j <= previous_j - 1
            prog.add({j: 1.0, z: big}, -np.inf, previous[j] - 1 + big)
        grow = prog.new_var(integer=True, upper=1.0)
        switches.append(grow)
        # grow = 1 forces sum(n) >= sum(previous) + 1
        prog.add(
            {**{j: 1.0 for j in range(len(cells) * n_ages)}, grow: -big},
            previous.sum() + 1 - big,
            np.inf,
        )
        prog.add({z: 1.0 for z in switches}, 1, np.inf)
    total_max = max(float(max(row.count, 0.0)) for row in table) + 5.0
    result = prog.solve(
        base_upper=np.ceil(total_max) if not robust else np.ceil(2 * total_max),
        time_limit=time_limit,
    )
    if result.status == 1 and (result.x is None or not robust):
        raise RuntimeError(
            f"the solver hit its limit (time_limit={time_limit}, node_limit={node_limit}) before "
            "settling the question; raise the limit"
        )
    if result.x is None or (result.status != 0 and not robust):
        return None
    return _decode(result.x, names, cells, n_ages)


def reconstruction_is_unique(
    table: Sequence[GroupStatistic], solution: Mapping[str, Any], **options: Any
) -> bool:
    """Whether ``solution`` is the only block that reproduces ``table`` exactly.

    Solves :func:`reconstruct_block` again with ``exclude=solution``; the table determines the
    block when no other block exists. ``options`` are passed on (``max_age``, ``domains``...).
    """
    return reconstruct_block(table, exclude=solution, **options) is None
