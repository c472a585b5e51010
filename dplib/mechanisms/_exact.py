"""Exact samplers in integer arithmetic: Bernoulli(exp(-gamma)), discrete Laplace, discrete Gaussian.

Three exact methods, each vectorised over numpy integer arrays:

* inversion through a table of the exact distribution function (:class:`_Inversion`): one
  uniform 64-bit word ``W`` a value (or a rejection round), located among the floors
  ``F_i = floor(B_i 2**64)`` of the intervals' ends ``B_i``, which are irrational and certified
  by integer-arithmetic bounds on ``exp``; ``W != F_i`` decides ``U < B_i`` exactly, and a tie
  (chance ``2**-64``) reads the next 64 bits against the next digits (Knuth & Yao 1976). A
  guide of ``2**16`` cells gives most values in one lookup. The discrete Laplace up to scale
  1024 (:class:`_LaplaceTable`) and the discrete Gaussian up to sigma 1024 (CKS20 Algorithm 3,
  a proposal and its acceptance in one word, :class:`_GaussianInversion`) use it; above sigma
  1024 the discrete Gaussian draws a block of ``m = 2**j`` integers from such a table (of sigma
  ``sigma / m`` in [64, 128)), a uniform offset in the block and one acceptance test decided by
  integer bounds on ``exp`` (:class:`_GaussianBlocks`; issue 49: within 3x numpy's float normal
  sampler at every sigma);
* inversion by certified binary digits, 16 bits at a time: a Bernoulli(p) trial with ``p`` a
  real number such as ``exp(-x)`` compares uniform 16-bit words with the binary expansion of
  ``p``, read from integer-arithmetic bounds on ``exp`` (:func:`_exp_neg_dyadic`), and a tie
  reads the next 16 bits. The discrete Laplace above scale 1024 (its geometric part bit by bit,
  :class:`_LaplacePlan`) uses it (and :class:`_GaussianTable`, CKS20 Algorithm 3's acceptance
  by these digits, which the tests use as an independent sampler);
* Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy" (CKS20),
  Algorithms 1-3: Bernoulli(exp(-gamma)) for rational gamma from uniform *integers* drawn with
  ``Generator.integers(0, high)`` (exact for every ``high``), in int64 with Python integers
  for the rare entries that would overflow. The discrete Laplace below scale 1/40 uses it (and
  the tests, as an independent discrete Gaussian sampler: :func:`gaussian_cks`).

The tests check the methods against each other and against closed forms. Each table is built
once per scale and kept (``functools.lru_cache`` keyed by the exact rational scale: two scales
share an entry only if they are the same number).

No float is on the path that decides an output, and no uniform double is drawn. Scales arrive
as doubles and are converted exactly with ``Fraction(float)`` (every double is a dyadic
rational), so the law sampled is the one of the double the caller passed.

Termination. Every loop draws fresh uniforms on every round and ends each round with a
probability bounded away from 0 (Algorithm 1's round ``k`` ends with probability
``>= 1 - 1/k``, a geometric count of Bernoulli(e^-1) with ``1 - e^-1``, a tie with
``1 - 2**-16`` (``1 - m 2**-64`` in a table of ``m`` ends), a table's tail with ``1 - q**K``
(above 0.2), a rejection round with at least 0.3), so no single uniform value can keep a
loop going and the loops stop with probability 1. The crafted generator whose every word is
all ones makes each of them stop at once (tests/dplib/mechanisms/test_exact_samplers.py): the comparisons are
oriented so that an all-ones word decides ("not below") and the discrete Laplace then returns
0, which every rejection step accepts. numpy's ``Generator.geometric``, which the samplers
replace, loops forever on that stream.

Integer ranges. Every int64 intermediate is kept below ``2**62`` by the bounds checked where it
is computed. The one truncation is the output type: a discrete Laplace value with
``|x| >= 2**62`` cannot be returned as int64 (CKS20's path and the tables' tails redraw it; the
digit path would need ``2**18`` successive successes of probability ``<= e**-12``); that mass is
``P(|X| >= 2**62) < 2 exp(-2**62 / scale) < exp(-4 * 10**6)`` for scales up to 2**40 (and
smaller still for the discrete Gaussian), far below the smallest double, and it is the delta
such a release would have to be charged.
"""

from __future__ import annotations

import bisect
import functools
import math
from fractions import Fraction

import numpy as np

__all__ = [
    "bernoulli_exp",
    "sample_discrete_laplace_exact",
    "sample_discrete_gaussian_exact",
    "discrete_laplace_of_float",
    "discrete_gaussian_of_float",
    "MAX_GAUSSIAN_SIGMA",
]

#: Every int64 intermediate stays at or below this.
_LIMIT = 2**62
#: The discrete Gaussian sampler's largest sigma (see :func:`_gaussian_plan`).
MAX_GAUSSIAN_SIGMA = 2.0**26
_CHUNK = 62  # bits per comparison with a rational's binary expansion


# --------------------------------------------------------------------------- Bernoulli trials


def _bernoulli_ratio(num: np.ndarray, den: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Bern(num / (den * k)) entry-wise, for int64 ``0 <= num <= den`` and ``den <= 2**62``.

    True iff a uniform integer in ``[0, den * k)`` is below ``num``; when ``den * k`` exceeds
    ``2**62`` the two independent factors Bern(num / den) and Bern(1 / k) are drawn instead
    (their product has the same probability). A draw at the top of its range (an all-ones
    word) is never below ``num <= den``: the trial fails.
    """
    size = num.shape[0]
    if den * k <= _LIMIT:
        return rng.integers(0, den * k, size=size, dtype=np.int64) < num
    return (rng.integers(0, den, size=size, dtype=np.int64) < num) & (
        rng.integers(0, k, size=size, dtype=np.int64) == 0
    )


def bernoulli_exp(num: np.ndarray, den: int, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(-num/den)) entry-wise for int64 ``0 <= num <= den <= 2**62``.

    CKS20, Algorithm 1 (after Forsythe / von Neumann): draw ``A_k ~ Bern(gamma / k)`` for
    ``k = 1, 2, ...`` until the first ``A_K = 0``; then ``P(K odd) = exp(-gamma)`` for
    ``gamma in [0, 1]``. Vectorised over the entries still running; round ``k`` ends an entry
    with probability ``>= 1 - 1/k``.
    """
    out = np.empty(num.shape[0], dtype=bool)
    idx = np.arange(num.shape[0])
    cur = num
    k = 1
    while idx.size:
        go_on = _bernoulli_ratio(cur, den, k, rng)
        out[idx[~go_on]] = bool(k & 1)
        idx, cur = idx[go_on], cur[go_on]
        k += 1
    return out


def _bernoulli_exp_minus_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """Bernoulli(exp(-1)): Algorithm 1 with ``gamma = 1`` (``A_1 = 1`` surely, so start at k = 2)."""
    out = np.empty(size, dtype=bool)
    idx = np.arange(size)
    k = 2
    while idx.size:
        go_on = rng.integers(0, k, size=idx.size, dtype=np.int64) == 0  # Bern(1 / k)
        out[idx[~go_on]] = bool(k & 1)
        idx = idx[go_on]
        k += 1
    return out


def _geometric_exp_minus_one(size: int, rng: np.random.Generator) -> np.ndarray:
    """``V`` with ``P(V = v) = (1 - e^-1) e^-v``: successes of Bern(e^-1) before the first failure.

    CKS20, Algorithm 2, lines 6-10, vectorised over the entries still counting.
    """
    v = np.zeros(size, dtype=np.int64)
    idx = np.arange(size)
    while idx.size:
        idx = idx[_bernoulli_exp_minus_one(idx.size, rng)]
        v[idx] += 1
    return v


def _uniform_below(bound: int, rng: np.random.Generator) -> int:
    """A uniform Python int in ``[0, bound)`` for any ``bound >= 1`` (62-bit limbs, rejection)."""
    if bound <= _LIMIT:
        return int(rng.integers(0, bound))
    limbs = -(-bound.bit_length() // _CHUNK)
    top = 1 << (_CHUNK * limbs)
    while True:  # accepts with probability > 1/2 per round (bound > top / 2**62 ... top / 2)
        value = 0
        for _ in range(limbs):
            value = (value << _CHUNK) | int(rng.integers(0, 1 << _CHUNK))
        cut = top - top % bound
        if value < cut:
            return value % bound


def _bernoulli_fraction_scalar(p: Fraction, rng: np.random.Generator) -> bool:
    """Bern(p) for a rational ``0 <= p <= 1`` (exact: a uniform integer below the denominator)."""
    return _uniform_below(p.denominator, rng) < p.numerator


def bernoulli_exp_scalar(gamma: Fraction, rng: np.random.Generator) -> bool:
    """Bern(exp(-gamma)) for a rational ``gamma >= 0``: CKS20 Algorithm 1, in Python integers.

    For ``gamma > 1``: ``ceil(gamma) - 1`` trials of Bern(e^-1), then Bern(exp(-rest)), rest in (0, 1].
    The exact rare path of the vectorised samplers.
    """
    whole = math.ceil(gamma) - 1 if gamma > 1 else 0  # leaves gamma - whole in [0, 1]
    for _ in range(whole):
        if not bernoulli_exp_scalar(Fraction(1), rng):
            return False
    gamma -= whole
    k = 1
    while _bernoulli_fraction_scalar(gamma / k, rng):
        k += 1
    return bool(k & 1)


def _bernoulli_constant(p: Fraction, size: int, rng: np.random.Generator) -> np.ndarray:
    """Bern(p) for one rational ``0 <= p <= 1`` with huge numerator and denominator, vectorised.

    Compares 62 uniform bits with the first 62 bits of ``p``'s binary expansion; a tie (chance
    2**-62) compares the next 62 bits, exactly, in Python integers. The expansion of ``p < 1``
    is never all ones from some bit on, so an all-ones generator ends every tie.
    """
    head = math.floor(p * (1 << _CHUNK))
    bits = rng.integers(0, 1 << _CHUNK, size=size, dtype=np.int64)
    out = bits < head
    for i in np.flatnonzero(bits == head):
        rest = p * (1 << _CHUNK) - head
        while True:
            chunk = math.floor(rest * (1 << _CHUNK))
            draw = int(rng.integers(0, 1 << _CHUNK))
            if draw != chunk:
                out[i] = draw < chunk
                break
            rest = rest * (1 << _CHUNK) - chunk
    return out


# --------------------------------------------------------------------------- discrete Laplace


def _laplace_accept_rate(t: int, s: int) -> float:
    """Approximate probability that one Algorithm 2 proposal is returned (sizes batches only)."""
    p_d = -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))  # P(D = 1), lines 3-4
    q = math.exp(-s / t) if s < t * 2**20 else 0.0  # P(Y >= 1)
    return max(p_d * (1.0 - (1.0 - q) / 2.0), 1e-3)


def _laplace_proposals(t: int, s: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` runs of CKS20 Algorithm 2 (scale t/s); returns the accepted values (int64).

    ``X = U + t V`` with ``U`` uniform on ``{0..t-1}`` kept with probability ``exp(-U/t)`` and
    ``V`` geometric(``e^-1``) is geometric(``e^(-1/t)``); ``Y = floor(X / s)`` is
    geometric(``e^(-s/t)``); a fair sign ``B`` and the rejection of ``-0`` make ``(1 - 2B) Y``
    discrete Laplace with ``P(y) ∝ exp(-|y| s / t)``.
    """
    u = rng.integers(0, t, size=size, dtype=np.int64)  # line 3
    u = u[bernoulli_exp(u, t, rng)]  # lines 4-5: keep with probability exp(-U / t)
    v = _geometric_exp_minus_one(u.size, rng)  # lines 6-10
    # X = U + t V fits int64 below 2**62 when V <= v_max; larger V (chance < e^-500) is exact
    # in Python integers below.
    v_max = _LIMIT // t - 1
    small = v <= v_max
    y = np.empty(u.size, dtype=np.int64)
    x = u[small] + t * v[small]  # line 11
    y[small] = x // s if s <= _LIMIT else 0  # line 12 (x < 2**62 < s: Y = 0)
    keep = np.ones(u.size, dtype=bool)
    for i in np.flatnonzero(~small):  # pragma: no cover - probability below e^-500 per draw
        big = (int(u[i]) + t * int(v[i])) // s
        keep[i] = big < _LIMIT  # the int64 output truncation stated in the module notes
        y[i] = big if keep[i] else 0
    # line 13: B = 1 (negative) when the draw is 0, so an all-ones word gives B = 0 (no reject)
    negative = rng.integers(0, 2, size=u.size, dtype=np.int64) == 0
    keep &= ~(negative & (y == 0))  # line 14: reject -0
    return np.where(negative, -y, y)[keep]  # line 15


def laplace_cks(scale: Fraction, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` exact draws of ``P(x) ∝ exp(-|x| / scale)`` for a rational ``scale > 0``.

    CKS20, Algorithm 2 with ``scale = t / s`` (``t``, ``s`` coprime positive integers,
    ``t <= 2**62``), vectorised: batches of proposals sized from the acceptance rate until
    ``count`` are accepted (each batch is expected to fill the need; a short one only adds a
    smaller batch).
    """
    t, s = scale.numerator, scale.denominator
    if t > _LIMIT:
        raise ValueError(f"the scale's numerator must be at most 2**62, got {scale!r}")
    out = np.empty(count, dtype=np.int64)
    filled = 0
    rate = _laplace_accept_rate(t, s)
    while filled < count:
        need = count - filled
        batch = int(need / rate * 1.02) + 16
        got = _laplace_proposals(t, s, batch, rng)
        take = min(got.size, need)
        out[filled : filled + take] = got[:take]
        filled += take
    return out


# --------------------------------------------------------------------------- exact thresholds


def _exp_neg_dyadic(big_x: int, w: int, prec: int) -> tuple[int, int]:
    """Integers ``lo <= exp(-X / 2**w) * 2**prec <= hi`` for an integer ``X >= 0``.

    Fixed-point integer arithmetic only: ``exp(-x) = exp(-y)**(2**m)`` with ``y = x / 2**m <=
    1/2`` (exact: a shift), the alternating Taylor series of ``exp(-y)`` with every term
    rounded down (so each computed term is below the true one by at most ``k`` units, and the
    first omitted term is below 1 unit), then ``m`` squarings rounding ``lo`` down and ``hi``
    up. ``m + 24`` guard bits keep ``hi - lo`` at a few units of ``2**-prec``.
    """
    if big_x > prec << w:  # x > prec: exp(-x) < 2**-prec
        return 0, 1
    m = max(0, (big_x >> w).bit_length() + 1)  # x / 2**m <= 1/2
    work = prec + m + 24
    # y in fixed point with 2**work units, exactly when work >= w + m (else rounded down, which
    # only raises exp(-y): the upper bound stays valid and the lower gets one more unit of slack)
    shift = work - w - m
    y = big_x << shift if shift >= 0 else big_x >> -shift
    one = 1 << work
    term, total, k, slack = one, one, 0, 2
    while term:
        k += 1
        term = term * y // (k << work)
        total += -term if k & 1 else term
        slack += k
    if shift < 0:
        slack += 2
    lo, hi = max(total - slack, 0), total + slack
    for _ in range(m):
        lo = (lo * lo) >> work
        hi = -((-(hi * hi)) >> work)
    drop = work - prec
    return lo >> drop, -((-hi) >> drop)


def exp_neg_fixed(x: Fraction, prec: int) -> tuple[int, int]:
    """Integers ``lo <= exp(-x) * 2**prec <= hi`` for a rational ``x >= 0`` (``hi - lo`` small).

    ``x`` is bracketed by dyadics ``X / 2**w <= x <= (X + 1) / 2**w`` (``w = prec + 40``) and
    :func:`_exp_neg_dyadic` bounds ``exp`` at both ends (it is decreasing).
    """
    if x > prec:
        return 0, 1
    w = prec + 40
    big_x = (x.numerator << w) // x.denominator
    lo, _ = _exp_neg_dyadic(big_x + 1, w, prec)
    _, hi = _exp_neg_dyadic(big_x, w, prec)
    return lo, hi


def _certified_floor(bounds, bits: int) -> int:
    """``floor(p * 2**bits)`` for the number ``p`` enclosed by ``bounds(prec) -> (lo, hi)``.

    ``0 < p < 1``. Raises the precision until both ends agree; this ends for every irrational
    ``p`` (all the
    probabilities here are, by Lindemann-Weierstrass: ``exp(-x)`` is transcendental for
    rational ``x != 0``), and the number of rounds does not depend on any random draw.
    """
    prec = bits + 40
    while True:
        lo, hi = bounds(prec)
        # p < 1 strictly (every probability here is in (0, 1)), so the floor is below 2**bits
        a = math.floor(lo * (1 << bits))
        b = min(math.floor(hi * (1 << bits)), (1 << bits) - 1)
        if a == b:
            return a
        prec *= 2


class _Threshold:
    """A probability ``p in (0, 1)`` known by certified bounds; its 16-bit binary digits, cached."""

    def __init__(self, bounds) -> None:
        self._bounds = bounds
        self._digits: dict[int, int] = {}

    def digit(self, level: int) -> int:
        """Bits ``16 (level - 1) .. 16 level - 1`` of ``p``'s expansion, as an integer < 2**16."""
        if level not in self._digits:
            self._digits[level] = _certified_floor(self._bounds, _WORD * level) % (1 << _WORD)
        return self._digits[level]


def _e_bounds(x: Fraction):
    def bounds(prec: int) -> tuple[Fraction, Fraction]:
        lo, hi = exp_neg_fixed(x, prec)
        return Fraction(lo, 1 << prec), Fraction(hi, 1 << prec)

    return bounds


def _logistic(x: Fraction) -> _Threshold:
    """``exp(-x) / (1 + exp(-x))``, increasing in ``exp(-x)``."""
    e = _e_bounds(x)

    def bounds(prec: int) -> tuple[Fraction, Fraction]:
        lo, hi = e(prec)
        return lo / (1 + lo), hi / (1 + hi)

    return _Threshold(bounds)


def _nonzero_mass(x: Fraction) -> _Threshold:
    """``2 exp(-x) / (1 + exp(-x))``, increasing in ``exp(-x)``."""
    e = _e_bounds(x)

    def bounds(prec: int) -> tuple[Fraction, Fraction]:
        lo, hi = e(prec)
        return 2 * lo / (1 + lo), 2 * hi / (1 + hi)

    return _Threshold(bounds)


def _one_minus_exp(x: Fraction) -> _Threshold:
    """``1 - exp(-x)``, decreasing in ``exp(-x)``."""
    e = _e_bounds(x)

    def bounds(prec: int) -> tuple[Fraction, Fraction]:
        lo, hi = e(prec)
        return 1 - hi, 1 - lo

    return _Threshold(bounds)


_WORD = 16  # bits per comparison word
#: Bit generators whose ``random_raw`` words are uniform on all 64 bits (MT19937's are 32-bit).
_RAW64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.SFC64, np.random.Philox)
_BLOCK = 1 << 17  # values per block (bounds the memory of the word matrix)


def _compare(words: np.ndarray, rows: list[_Threshold], heads: np.ndarray, rng) -> np.ndarray:
    """Bern(p_r) per entry: ``U < p_r`` for ``U`` uniform whose first 16 bits are ``words``.

    ``words`` has one row per threshold. ``W < head`` and ``W > head`` decide; a tie (chance
    2**-16) draws the next 16 bits of ``U`` and compares them with ``p``'s next digit,
    vectorised over the ties, until they differ: an exact comparison with the real ``p``
    (Knuth & Yao 1976). ``p < 1`` has infinitely many zero digits, so an all-ones stream ends
    every tie at the next zero digit.
    """
    out = words < heads[:, None]
    tied = words == heads[:, None]
    if not tied.any():
        return out
    r, c = np.divmod(np.flatnonzero(tied), words.shape[1])
    level = 2
    while r.size:
        digits = np.array([rows[i].digit(level) for i in range(len(rows))], dtype=np.int64)
        d = digits[r]
        w = rng.integers(0, 1 << _WORD, size=r.size, dtype=np.int64)
        done = w != d
        out[r[done], c[done]] = w[done] < d[done]
        r, c = r[~done], c[~done]
        level += 1
    return out


class _LaplacePlan:
    """Thresholds of the discrete Laplace of scale ``t / s``, ``q = exp(-s/t)``.

    ``P(X != 0) = 2 q/(1 + q)``, and then ``|X| = 1 + Y`` with ``Y`` geometric
    (``P(Y = y) = (1 - q) q**y``) and a fair sign. ``Y = sum_j b_j 2**j + 2**L G`` with
    independent ``b_j ~ Bern(q**(2**j) / (1 + q**(2**j)))`` and ``G`` geometric with ratio
    ``q**(2**L)`` (``P(Y = y)`` factorises over the binary digits of ``y``). ``L`` is the least
    with ``2**L s >= 12 t``, so ``q**(2**L) <= e**-12`` and ``G = 0`` but for about one value in
    160,000.
    """

    def __init__(self, t: int, s: int) -> None:
        g = Fraction(s, t)
        self.bits = 1
        while (s << self.bits) < 12 * t:
            self.bits += 1
        self.rows = [_nonzero_mass(g)] + [_logistic(g * (1 << j)) for j in range(self.bits)]
        self.high = _Threshold(_e_bounds(g * (1 << self.bits)))
        self.rows.append(self.high)  # the last row decides G >= 1
        narrow = np.uint8 if self.bits <= 8 else np.uint16 if self.bits <= 16 else np.uint64
        self.shifts = np.arange(self.bits, dtype=narrow)[:, None]
        self.heads = np.array([r.digit(1) for r in self.rows], dtype=np.uint16)
        self.high_head = self.heads[-1:]


_PLANS: dict[tuple[int, int], _LaplacePlan] = {}


def _laplace_plan(t: int, s: int) -> _LaplacePlan:
    key = (t, s)
    if key not in _PLANS:
        if len(_PLANS) > 256:
            _PLANS.clear()
        _PLANS[key] = _LaplacePlan(t, s)
    return _PLANS[key]


def _words(rows: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """A ``rows x n`` matrix of uniform 16-bit words (from 64-bit draws)."""
    total = rows * n
    count = -(-total // 4)
    bit_generator = rng.bit_generator
    if type(bit_generator) in _RAW64:  # their raw outputs are uniform 64-bit words: no overhead
        raw = bit_generator.random_raw(count)
    else:  # the full range [0, 2**64 - 1] (endpoint=True: numpy's faster form of it)
        raw = rng.integers(0, 2**64 - 1, size=count, dtype=np.uint64, endpoint=True)
    return raw.view(np.uint16)[:total].reshape(rows, n)


def _laplace_parts(
    plan: _LaplacePlan, n: int, rng: np.random.Generator, extra: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` discrete Laplace draws as (magnitude ``|X|``, negative sign, ``extra`` rows of words).

    The extra 16-bit words are drawn in the same call, for a caller that needs more uniform
    bits per value (the discrete Gaussian's acceptance step).
    """
    rows = len(plan.rows)  # nonzero, L bits, high part
    words = _words(rows + 1 + extra, n, rng)  # + the sign row and the extra rows
    decided = _compare(words[:rows], plan.rows, plan.heads, rng)
    zero = ~decided[0]  # X = 0 unless U < 2q/(1+q): an all-ones word gives 0
    # Y's low bits: row j shifted by j, OR-ed, in the narrowest unsigned type that holds them
    narrow = plan.shifts.dtype.type
    if n <= 16384:  # one reduction: fewest numpy calls for short blocks
        bits = decided[1 : 1 + plan.bits].view(np.uint8).astype(narrow, copy=False)
        y = np.bitwise_or.reduce(bits << plan.shifts, axis=0).astype(np.int64)
    else:  # row by row: less memory traffic for long blocks
        low = decided[1].view(np.uint8).astype(narrow)
        for j in range(1, plan.bits):
            low |= decided[1 + j].view(np.uint8).astype(narrow) << narrow(j)
        y = low.astype(np.int64)
    high = decided[rows - 1]
    # G >= 1 for about one value in 160,000; each further success (probability <= e^-12)
    # adds 2**L more. (Reaching 2**62 would take 2**(62 - L) >= 2**18 successes in a row.)
    idx = np.flatnonzero(high)
    while idx.size:
        y[idx] += 1 << plan.bits
        idx = idx[_compare(_words(1, idx.size, rng), [plan.high], plan.high_head, rng)[0]]
    negative = words[rows] < (1 << (_WORD - 1))  # fair: p = 1/2 is exactly 2**15 / 2**16
    y += 1
    np.multiply(y, ~zero, out=y)  # |X| = 0 where the first row said so
    return y, negative, words[rows + 1 :]


def _laplace_block(plan: _LaplacePlan, n: int, rng: np.random.Generator) -> np.ndarray:
    magnitude, negative, _ = _laplace_parts(plan, n, rng)
    np.negative(magnitude, out=magnitude, where=negative)
    return magnitude


def laplace_binary_digits(scale: Fraction, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` exact draws of ``P(x) ∝ exp(-|x| / scale)``, by binary digits, scale >= 1/40.

    Inversion by exact comparisons (see :class:`_LaplacePlan`): each value uses ``L + 3``
    16-bit words (``L = log2(12 scale)`` rounded up), compared with the certified binary
    expansions of its probabilities; ties read more bits. Exact, integer-only, and loop-free
    but for the rare ties and the rare high part. Used above scale 1024, where the inversion
    table (:class:`_LaplaceTable`) would be too long.
    """
    plan = _laplace_plan(scale.numerator, scale.denominator)
    out = np.empty(count, dtype=np.int64)
    for start in range(0, count, _BLOCK):
        stop = min(count, start + _BLOCK)
        out[start:stop] = _laplace_block(plan, stop - start, rng)
    return out


#: Largest scale sampled by one inversion table (2K - 1, about 35 scale, ends; S_K ~ 2**-24).
_TABLE_MAX_LAPLACE_SCALE = 1024
#: Values per call of a table's sampler (bounds the memory of its words).
_TABLE_BLOCK = 1 << 20


def _in_blocks(sample, block: int, count: int, rng: np.random.Generator) -> np.ndarray:
    if count <= block:
        return sample(count, rng)
    out = np.empty(count, dtype=np.int64)
    for start in range(0, count, block):
        stop = min(count, start + block)
        out[start:stop] = sample(stop - start, rng)
    return out


@functools.lru_cache(maxsize=16)
def _laplace_method(scale: Fraction):
    """The sampler of one scale, ``(count, rng) -> int64 array``; cached by the exact rational.

    (``lru_cache`` compares keys as numbers: two keys share an entry only when they are the
    same rational, so a cached table is never used for another scale. A table takes 256 KB
    to 1 MB; 16 scales are kept, and a table is rebuilt in milliseconds to 0.2 s.)
    """
    t, s = scale.numerator, scale.denominator
    if s > 40 * t:
        # scale < 1/40: P(X = 0) > 1 - 2 e^-40 has more than 57 leading one bits (2**1074 of
        # them at scale 5e-324); Algorithm 2 decides such a draw at once.
        return functools.partial(laplace_cks, scale)
    if scale <= _TABLE_MAX_LAPLACE_SCALE:
        return functools.partial(_in_blocks, _LaplaceTable(1 / scale).sample, _TABLE_BLOCK)
    return functools.partial(laplace_binary_digits, scale)


@functools.lru_cache(maxsize=16)
def _laplace_method_of_float(scale: float):
    return _laplace_method(Fraction(scale))


def sample_discrete_laplace_exact(
    scale: Fraction, count: int, rng: np.random.Generator
) -> np.ndarray:
    """``count`` exact draws of ``P(x) ∝ exp(-|x| / scale)`` for a rational ``scale > 0``.

    Three exact methods, by scale: below 1/40, CKS20 Algorithm 2 (:func:`laplace_cks`; the
    zero mass is then within ``2 e^-40`` of 1); up to 1024, one 64-bit word a value inverted
    through a table of the exact distribution function (:class:`_LaplaceTable`); above, binary
    digits (:func:`laplace_binary_digits`). The tests check them against each other.
    """
    return _laplace_method(scale)(count, rng)


def discrete_laplace_of_float(scale: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`sample_discrete_laplace_exact` for the double ``scale``, read as the rational it is."""
    return _laplace_method_of_float(scale)(count, rng)


# --------------------------------------------------------------------------- inversion tables

#: Bits of a word that index an inversion table's guide (2**16 cells).
_GUIDE_BITS = 16
#: Guide and outcome markers (below every outcome an inversion table returns).
_AMBIGUOUS, _TAIL, _REJECT = -(2**31), -(2**31) + 1, -(2**31) + 2
#: Most ends a discrete Laplace table is built with (about 35,500 at scale 1024, built in
#: about 0.2 s; a long table has many ambiguous cells, searched with numpy).
_MAX_BOUNDARIES = 1 << 16
_GUIDE_SHIFT = np.uint64(64 - _GUIDE_BITS)
#: Longest table that also keeps its floors as Python lists (for bisect).
_SMALL_TABLE = 4096


def _words64(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` uniform 64-bit words (uint64) in one call."""
    bit_generator = rng.bit_generator
    if type(bit_generator) in _RAW64:  # their raw outputs are uniform 64-bit words
        return bit_generator.random_raw(n)
    return rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)


def _mul_down(a: int, b: int, prec: int) -> int:
    return (a * b) >> prec


def _mul_up(a: int, b: int, prec: int) -> int:
    return -((-(a * b)) >> prec)


def _down(x: int, drop: int) -> int:
    return x >> drop


def _up(x: int, drop: int) -> int:
    return -((-x) >> drop)


class _Inversion:
    """Exact inversion of a uniform ``U`` in [0, 1) over consecutive intervals.

    The intervals' ends ``0 < B_1 < ... < B_m < 1`` are irrational numbers known by certified
    bounds: ``bounds(prec)`` returns, in ascending order, integer pairs ``lo <= B_i 2**prec <=
    hi``. The outcome is ``outcomes[j]`` with ``j = #{i : B_i <= U}`` (``U`` is never equal to
    an irrational ``B_i``). ``U``'s first 64 bits are a uniform word ``W``; with ``F_i =
    floor(B_i 2**64)``, ``W < F_i`` proves ``U < B_i`` and ``W > F_i`` proves ``U > B_i``; on
    ``W == F_i`` (chance ``2**-64``) the next 64 bits of ``U`` are compared with the next
    certified digits of ``B_i``, and so on (Knuth & Yao 1976). An irrational ``B_i`` has
    infinitely many 0 and 1 digits, so this ends for every stream, the all-ones one included.

    Fast path: a guide of ``2**16`` cells indexed by the top 16 bits of ``W``. A cell that
    contains no ``F_i`` in its range lies inside one interval and holds that outcome directly;
    the others (at most ``m`` of them) hold :data:`_AMBIGUOUS` and are located by binary search
    on the ``F_i`` and the exact tie rule above.
    """

    def __init__(self, bounds, outcomes: list[int]) -> None:
        self._bounds = bounds
        self._floors: dict[int, list[int]] = {}
        heads = self.floors(64)
        if len(outcomes) != len(heads) + 1:
            raise ValueError("an inversion table needs one outcome more than boundaries")
        self.heads = np.array(heads, dtype=np.uint64)
        self.outcomes = np.array(outcomes, dtype=np.int32)
        top = self.heads >> np.uint64(64 - _GUIDE_BITS)
        cells = np.arange(1 << _GUIDE_BITS, dtype=np.uint64)
        # an unambiguous cell c holds the U with floor(U 2**16) = c: B_i <= U exactly for the
        # B_i with floor(B_i 2**16) < c
        self.guide = self.outcomes[np.searchsorted(top, cells, side="left")]
        self.guide[top.astype(np.intp)] = _AMBIGUOUS
        if len(heads) <= _SMALL_TABLE:  # bisect on Python lists for the few words of a call
            self._head_list = heads
            self._outcome_list = [int(o) for o in outcomes]
        else:  # a long table searches with numpy only (its lists would take megabytes)
            self._head_list = None
            del self._floors[64]

    def floors(self, bits: int) -> list[int]:
        """``floor(B_i 2**bits)`` for every boundary, certified (raising the precision)."""
        if bits not in self._floors:
            prec = bits + 40
            while True:
                pairs = self._bounds(prec)
                drop = prec - bits
                low = [max(lo, 0) >> drop for lo, _ in pairs]
                if low == [hi >> drop for _, hi in pairs]:
                    break
                prec *= 2
            self._floors[bits] = low
        return self._floors[bits]

    def locate(self, words: np.ndarray, rng: np.random.Generator) -> np.ndarray | list[int]:
        """The outcome of each word, exactly (binary search, then the tie rule)."""
        if words.size > 16 or self._head_list is None:
            j = np.searchsorted(self.heads, words, side="right")
            # a tie is only possible with the largest F_i <= W (and any equal ones below it);
            # j = 0 reads heads[-1], which is then above W
            for i in np.nonzero(self.heads[j - 1] == words)[0]:
                j[i] = self._tie(int(words[i]), rng)
            return self.outcomes[j]
        heads, outcomes = self._head_list, self._outcome_list
        out = []
        for word in words.tolist():  # few: in Python
            j = bisect.bisect_right(heads, word)
            out.append(outcomes[self._tie(word, rng) if j and heads[j - 1] == word else j])
        return out

    def _tie(self, word: int, rng: np.random.Generator) -> int:
        below = int(np.searchsorted(self.heads, np.uint64(word), side="left"))
        tied = list(range(below, int(np.searchsorted(self.heads, np.uint64(word), side="right"))))
        prefix, bits = word, 64
        while tied:  # each round ends every tie but with chance 2**-64
            prefix = (prefix << 64) | int(_words64(1, rng)[0])
            bits += 64
            floors = self.floors(bits)
            below += sum(1 for i in tied if prefix > floors[i])
            tied = [i for i in tied if prefix == floors[i]]
        return below

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` outcomes (int32) and the positions whose outcome is :data:`_TAIL`.

        Ambiguous cells (about one word in ``2**16 / m``) are resolved here; :data:`_REJECT`
        outcomes are left for the caller to filter out.
        """
        words = _words64(n, rng)
        out = self.guide[words >> _GUIDE_SHIFT]
        hard = np.nonzero(out < _REJECT)[0]  # ambiguous cells and tails: rare
        if not hard.size:
            return out, hard
        if hard.size <= 16:  # the usual case: a few entries, in Python
            tails = []
            for i in hard.tolist():
                value = int(out[i])
                if value == _AMBIGUOUS:
                    value = out[i] = self.locate(words[i : i + 1], rng)[0]
                if value == _TAIL:
                    tails.append(i)
            return out, np.array(tails, dtype=np.intp)
        ambiguous = hard[out[hard] == _AMBIGUOUS]
        if ambiguous.size:
            out[ambiguous] = self.locate(words[ambiguous], rng)
        return out, hard[out[hard] == _TAIL]


def _exp_pair(x: Fraction, prec: int) -> tuple[int, int]:
    return exp_neg_fixed(x, prec) if x > 0 else (1 << prec, 1 << prec)


def _powers(base: tuple[int, int], count: int, prec: int) -> list[tuple[int, int]]:
    """Bounds on ``b**k`` for ``k = 0 .. count - 1`` from bounds on ``0 <= b <= 1`` (fixed point)."""
    lo, hi = 1 << prec, 1 << prec
    out = []
    for _ in range(count):
        out.append((lo, hi))
        lo, hi = _mul_down(lo, base[0], prec), _mul_up(hi, base[1], prec)
    return out


class _Geometric:
    """``G`` with ``P(G = g) = (1 - q) q**g``, ``q = exp(-x)``, by inversion, ``K`` at a time.

    ``G = #{g >= 1 : U < q**g}``: a table with ends ``q**K < ... < q`` gives ``min(G, K)``;
    when ``U < q**K``, ``G - K`` is geometric(q) again (memoryless) and a fresh word goes on.
    Each round ends with probability ``1 - q**K``; a word of all ones gives ``G = 0``.
    """

    def __init__(self, x: Fraction, k: int) -> None:
        self.k = k

        def bounds(prec: int) -> list[tuple[int, int]]:
            work = prec + 16 + k.bit_length()
            pw = _powers(_exp_pair(x, work), k + 1, work)[1:]  # q .. q**K
            drop = work - prec
            return [(_down(lo, drop), _up(hi, drop)) for lo, hi in reversed(pw)]

        # j = #{q**g <= U} = K - min(G, K); j = 0: G >= K
        self.table = _Inversion(bounds, [_TAIL, *range(k - 1, -1, -1)])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        out = np.zeros(n, dtype=np.int64)
        run = np.arange(n)
        while run.size:
            g, _ = self.table.sample(run.size, rng)
            going = g == _TAIL
            out[run] += np.where(going, self.k, g)
            run = run[going]
            # the int64 range: such an entry (2**52 rounds of chance below 0.8 each) starts
            # again, which is the truncation the module notes state
            out[run[out[run] > _LIMIT]] = 0
        return out


class _LaplaceTable:
    """The discrete Laplace of scale ``1/x`` (``q = exp(-x)``) by one inversion a value.

    From the top of [0, 1): ``X = 0`` on ``[S_1, 1)``, then ``+k`` on ``[q**k, S_k)`` and ``-k``
    on ``[S_{k+1}, q**k)`` for ``k = 1 .. K - 1``, and the tail ``|X| >= K`` on ``[0, S_K)``,
    where ``S_k = P(|X| >= k) = 2 q**k / (1 + q)`` (so ``P(X = +-k) = (1 - q) q**k / (1 + q)``
    and ``P(X = 0) = (1 - q)/(1 + q)``; Inusah & Kozubowski 2006). Every end is transcendental
    (``q**k`` is, by Lindemann-Weierstrass, for rational ``x > 0``, and so is ``2 y / (1 + y)``
    of a transcendental ``y``). A word of all ones lands in ``[S_1, 1)``: ``X = 0``.
    In the tail, ``|X| - K`` is geometric with ratio ``q`` (memoryless): a second table with
    ends ``q**k' < ... < q``, ``k' = min(K, 256)``, gives it ``k'`` at a time, and a fair sign.
    ``K`` puts the tail near ``2**-24``: up to scale 1024 (``2K - 1``, about 35,500 ends).
    """

    def __init__(self, x: Fraction) -> None:
        # K: the tail S_K below about 2**-24 (sizes the table only)
        self.k = max(1, min(math.ceil(17.33 / float(x)) if x > 0 else 1, _MAX_BOUNDARIES // 2))
        k = self.k

        def bounds(prec: int) -> list[tuple[int, int]]:
            work = prec + 16 + k.bit_length()
            one = 1 << work
            q = _exp_pair(x, work)
            pw = _powers(q, k + 1, work)
            ends = []  # descending: S_1, q, S_2, q**2, ..., q**(K-1), S_K
            for j in range(1, k + 1):
                s_lo = (2 * pw[j][0] << work) // (one + q[1])
                s_hi = -((-(2 * pw[j][1] << work)) // (one + q[0]))
                ends.append((s_lo, s_hi))
                if j < k:
                    ends.append(pw[j])
            drop = work - prec
            return [(_down(lo, drop), _up(hi, drop)) for lo, hi in reversed(ends)]

        outcomes = [_TAIL]
        for j in range(k - 1, 0, -1):
            outcomes += [-j, j]
        self.table = _Inversion(bounds, outcomes + [0])

        self._geometric: _Geometric | None = None
        self._x = x

    def tail(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of ``X`` given ``|X| >= K``: ``+-(K + G)``, ``G`` geometric(q), fair sign."""
        if self._geometric is None:
            # at most 256 ends: built in milliseconds when first needed (about once in 2**24
            # values); a long tail then takes a few rounds of 256
            self._geometric = _Geometric(self._x, min(self.k, 256))
        out = self.k + self._geometric.sample(n, rng)
        negative = _words64(n, rng) < np.uint64(1 << 63)
        return np.where(negative, -out, out)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        out, tail = self.table.sample(n, rng)
        result = out.astype(np.int64)
        if tail.size:
            result[tail] = self.tail(tail.size, rng)
        return result


class _GaussianInversion:
    """CKS20 Algorithm 3 for ``N_Z(0, sigma²)``, a round in one inversion of one word.

    Algorithm 3 proposes ``Y`` with ``P(Y = y) = (1 - q)/(1 + q) q**|y|`` (``q = exp(-1/t)``,
    ``t = floor(sigma) + 1``) and keeps it with probability ``exp(-gamma_y)``, ``gamma_y =
    (|y| - sigma²/t)² / (2 sigma²)``. A round thus returns ``y`` with probability ``C w(y)``,
    ``w(y) = exp(-y² / (2 sigma²))``, ``C = (1 - q)/(1 + q) exp(-sigma² / (2 t²))`` (as
    ``|y|/t + gamma_y = y²/(2 sigma²) + sigma²/(2 t²)``), and starts again otherwise. Here the
    round is one uniform ``U``: from the top of [0, 1), intervals of length ``C w(y)`` for
    ``y = 0, +1, -1, ..., +(K-1), -(K-1)``, then one of length ``2 q**K/(1 + q) exp(-gamma_K)``
    (a proposal with ``|Y| >= K`` that passes a first test ``Bern(exp(-gamma_K))``), and the
    rest (rejection). In that tail interval, ``|Y| - K`` is geometric(q) (:class:`_Geometric`)
    and ``Y`` is kept with probability ``exp(-(gamma_|Y| - gamma_K))`` (Algorithm 1 in
    Python integers; ``gamma`` increases beyond ``sigma²/t <= K``): together the tail returns
    ``y`` with probability ``C w(y)`` too. Every end is ``1 - (a finite sum of rationals times
    exponentials of distinct negative rationals)``, transcendental by Lindemann-Weierstrass. A
    word of all ones lands in ``y = 0``'s interval.
    """

    def __init__(self, sigma: Fraction, blocks: bool = False) -> None:
        if not 0 < sigma <= _INVERSION_MAX_SIGMA:  # so that K >= sigma > sigma²/t below
            raise ValueError(f"sigma must be in (0, {_INVERSION_MAX_SIGMA}], got {sigma!r}")
        if blocks and sigma < 16:
            raise ValueError(f"blocks needs sigma >= 16, got {sigma!r}")
        self.sigma = sigma
        self.blocks = blocks
        self.t = t = sigma.numerator // sigma.denominator + 1
        # K: C w(K) below about 2**-70 (sizes the table only; 2K is about 20 sigma ends). The
        # bounds below round every product and quotient outward, so they hold whatever the
        # guard bits; the guard only spares the doubling of the precision in floors().
        k = max(1, math.ceil(9.85 * float(sigma)))
        self.k = k
        sigma2 = sigma * sigma
        self.mu = sigma2 / t
        self.gamma_k = (k - self.mu) ** 2 / (2 * sigma2)

        def bounds(prec: int) -> list[tuple[int, int]]:
            work = prec + 24 + 2 * k.bit_length()  # the sums carry about K**2 units of error
            one = 1 << work
            q = _exp_pair(Fraction(1, t), work)
            u = _exp_pair(1 / (2 * sigma2), work)  # w(y) = u**(y²)
            c0 = _exp_pair(sigma2 / (2 * t * t), work)
            c_lo = _mul_down(((one - q[1]) << work) // (one + q[1]), c0[0], work)
            c_hi = _mul_up(-((-((one - q[0]) << work)) // (one + q[0])), c0[1], work)
            tail = _exp_pair(Fraction(k, t) + self.gamma_k, work)
            t_lo = (2 * tail[0] << work) // (one + q[1])
            t_hi = -((-(2 * tail[1] << work)) // (one + q[0]))
            u2 = (_mul_down(u[0], u[0], work), _mul_up(u[1], u[1], work))
            w_lo, w_hi = one, one  # w(0)
            step_lo, step_hi = u  # u**(2y + 1) for y = 0
            a_lo, a_hi = _mul_down(c_lo, w_lo, work), _mul_up(c_hi, w_hi, work)  # mass above
            ends = [(one - a_hi, one - a_lo)]  # descending: below 0, +1, -1, +2, ...
            if blocks:  # a second interval C w(0), for block -1 (the round's total is then
                # below 0.77 + C < 1 for sigma >= 16, C < 1 / (2 t))
                a_lo, a_hi = 2 * a_lo, 2 * a_hi
                ends.append((one - a_hi, one - a_lo))
            for _ in range(1, k):
                w_lo, w_hi = _mul_down(w_lo, step_lo, work), _mul_up(w_hi, step_hi, work)
                step_lo, step_hi = _mul_down(step_lo, u2[0], work), _mul_up(step_hi, u2[1], work)
                p_lo, p_hi = _mul_down(c_lo, w_lo, work), _mul_up(c_hi, w_hi, work)
                for _sign in (1, -1):
                    a_lo, a_hi = a_lo + p_lo, a_hi + p_hi
                    ends.append((one - a_hi, one - a_lo))
            ends.append((one - a_hi - t_hi, one - a_lo - t_lo))
            drop = work - prec
            return [(_down(lo, drop), _up(hi, drop)) for lo, hi in reversed(ends)]

        outcomes = [_REJECT, _TAIL]
        for y in range(k - 1, 0, -1):  # with blocks, -y is block -y - 1 (see _GaussianBlocks)
            outcomes += [-y - 1 if blocks else -y, y]
        self.table = _Inversion(bounds, outcomes + ([-1, 0] if blocks else [0]))
        self._geometric: _Geometric | None = None  # the tail's |Y| - K, built when first needed
        # acceptance rate of a round, in floating point: it only sizes the batches
        s = float(sigma)
        ys = np.arange(1, k, dtype=np.float64)
        with np.errstate(under="ignore", over="ignore"):
            z = (
                (2.0 if blocks else 1.0) + 2.0 * float(np.sum(np.exp(-0.5 * (ys / s) ** 2)))
                if s > 0
                else 1.0
            )
        qf = math.exp(-1.0 / t)
        self.rate = max((1 - qf) / (1 + qf) * math.exp(-0.5 * (s / t) ** 2) * z, 0.05)

    def _tail(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` rounds that reached the tail interval: a value, or :data:`_REJECT`."""
        if self._geometric is None:
            self._geometric = _Geometric(Fraction(1, self.t), 8 * self.t)
        mag = self._geometric.sample(n, rng)
        sign = _words64(n, rng) < np.uint64(1 << 63)
        out = np.empty(n, dtype=np.int64)
        two_s2 = 2 * self.sigma * self.sigma
        for i in range(n):  # rare: probability below 2**-64 a round
            y = self.k + int(mag[i])
            gamma = (y - self.mu) ** 2 / two_s2 - self.gamma_k
            keep = bernoulli_exp_scalar(gamma, rng)
            out[i] = (-y if sign[i] else y) if keep else _REJECT
        return out

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(count, dtype=np.int64)
        filled = 0
        while filled < count:  # each round keeps a value with probability >= 0.05
            need = count - filled
            expected = need / self.rate  # + 4 standard deviations: one batch nearly always fills
            batch = min(int(expected + 4.0 * math.sqrt(expected)) + 8, _ROUND_CHUNK)
            got, tail = self.table.sample(batch, rng)
            if tail.size:
                got = got.astype(np.int64)
                got[tail] = self._tail(tail.size, rng)
            got = got[got > _REJECT]
            if filled == 0 and got.size >= count:
                return got[:count].astype(np.int64)
            take = min(got.size, need)
            out[filled : filled + take] = got[:take]
            filled += take
        return out


# --------------------------------------------------------------------------- large sigma


#: Rounds per batch of :class:`_GaussianBlocks` and :class:`_GaussianInversion`: their int64
#: work arrays (128 KiB) stay in the cache and on the heap (larger ones are fresh pages from the
#: system each call, which cost more than the arithmetic: 5.7 ms against 2.5 ms at 10**5 values).
_ROUND_CHUNK = 1 << 14
#: Block index sigma of :class:`_GaussianBlocks`: ``sigma / m`` in ``[64, 128)``.
_BLOCK_SIGMA = 64
#: Block indices beyond this many block sigmas are decided in Python integers (probability
#: below ``e**-2000`` a value: they come only through the inversion's tail).
_BLOCK_FAR = 64


class _GaussianBlocks:
    """``N_Z(0, sigma²)`` for large sigma: a block from a small exact table, a uniform offset in
    the block, and one acceptance test decided by 32 bits nearly always.

    With ``m = 2**j`` and ``s0 = sigma / m`` in ``[64, 128)`` (a rational, as ``sigma`` is), the
    integers are cut into the blocks ``B_k = {k m, ..., k m + m - 1}``, ``k`` in Z. Let ``w(x) =
    exp(-x² / (2 sigma²))`` and ``e_k`` the point of ``B_k``'s closest multiple of ``m`` to 0:
    ``e_k = k m`` for ``k >= 0`` and ``(-k - 1) m`` in magnitude for ``k < 0``; every ``x`` in
    ``B_k`` has ``|x| >= |e_k|``, so ``w(x) <= w(e_k) = w0(a) = exp(-a² / (2 s0²))`` with ``a =
    |e_k| / m`` (``a = k`` or ``-k - 1``). A round:

    1. a block ``K`` with ``P(K = k) ∝ w0(a)``: :class:`_GaussianInversion` of ``s0`` (CKS20
       Algorithm 3 by inversion of one word) with two intervals ``C w0(0)`` (blocks 0 and -1)
       and the outcome ``-y`` read as block ``-y - 1``;
    2. one 64-bit word: ``R`` uniform in ``[0, m)`` (its low ``j`` bits) and 32 uniform bits ``V``
       (its top bits), independent; ``X = k m + R``, so every integer ``x`` is proposed with
       probability ``∝ w0(a) / m``: an envelope of ``w``;
    3. ``X`` is kept with probability ``w(x) / w(e_k) = exp(-gamma)``, ``gamma = d (2 a m + d) /
       (2 sigma²)`` with ``d = |x| - a m`` (``R``, or ``m - R`` for ``k < 0``): then ``P(X = x)
       ∝ w(x)``, the discrete Gaussian (rejection sampling, Devroye 1986, Section II.3).
       ``gamma < 9.85 / s0 <= 0.154`` for blocks within the table (``a < K = 9.85 s0``).

    The test of 3 compares ``U = (V + U') / 2**32`` (``U'`` uniform in [0, 1); ``V`` the
    complement of the word's top 32 bits, so that an all-ones word keeps its value at once, as
    in the other samplers) with ``exp(-gamma)``. With ``F = floor(2**(32 + T) / (2 sigma²))`` in ``[2**10, 2**11)``, ``Gh =
    floor(G (F + 1) / 2**T) + 1 >= gamma 2**32`` for ``G = d (2 a m + d)`` (int64: ``G < 2**52``)
    and ``exp(-g) >= 1 - g``: ``V + 1 + Gh <= 2**32`` keeps ``X`` (all but a share about
    ``gamma`` of the rounds). The rest are decided in int64 by ``1 - g + g²/2 - g³/6 <= exp(-g)
    <= 1 - g + g²/2`` with tighter bounds on ``g`` (``F`` of 31 bits), and the few in between
    (a share about ``gamma³ / 6``, under one value in 10**4) by the next bits of ``U`` against
    certified bounds on ``exp(-gamma)`` (:func:`_below_exp`). Integer arithmetic decides every
    output; no float is on the path.
    """

    def __init__(self, sigma: Fraction) -> None:
        if not 2 * _BLOCK_SIGMA <= sigma <= MAX_GAUSSIAN_SIGMA:  # m >= 2 (the dispatcher: > 1024)
            raise ValueError(f"sigma must be in [{2 * _BLOCK_SIGMA}, 2**26], got {sigma!r}")
        self.sigma = sigma
        j = 0
        while sigma / (1 << (j + 1)) >= _BLOCK_SIGMA:
            j += 1
        self.j, self.m = j, 1 << j
        self.s0 = sigma / self.m  # in [64, 128)
        self.inversion = _GaussianInversion(self.s0, blocks=True)
        self.two_s2 = 2 * sigma * sigma
        # reciprocals: floor(2**(32 + T) / (2 sigma²)) with 11 bits (fast test) and 31 (slow)
        self.t11, self.f11 = self._reciprocal(11)
        self.t31, self.f31 = self._reciprocal(31)
        # blocks beyond the table (|a| >= K, from the inversion's tail) are decided exactly
        self.k_max = self.inversion.k
        self.rate = self.inversion.rate * 0.98  # sizes batches only

    def _reciprocal(self, bits: int) -> tuple[int, int]:
        t = 0
        while Fraction(1 << (32 + t)) / self.two_s2 < (1 << (bits - 1)):
            t += 1
        f = math.floor(Fraction(1 << (32 + t)) / self.two_s2)
        # t = 0 for small sigma leaves f larger: then G (f + 1) < 0.31 sigma² 2**32 / sigma² + G
        if not ((1 << (bits - 1)) <= f and (t == 0 or f < (1 << bits))):
            raise AssertionError("fixed-point reciprocal out of range")  # pragma: no cover
        return t, f

    def _round(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` rounds: the kept values (int64)."""
        got, tail = self.inversion.table.sample(n, rng)
        k = got[got > _REJECT].astype(np.int64)
        if tail.size:  # the inversion's tail: |y| >= K, signed; block -y - 1 for y < 0 (rare)
            where = np.flatnonzero(k == _TAIL)
            y = self.inversion._tail(where.size, rng)
            k[where] = np.where(y < 0, y - 1, y)
            k = k[k != _REJECT]
        words = _words64(k.size, rng)
        r = (words & np.uint64(self.m - 1)).view(np.int64)
        # 32 uniform bits, complemented: an all-ones word reads as V = 0 and keeps the value
        v = ((words >> np.uint64(32)) ^ np.uint64(0xFFFFFFFF)).view(np.int64)
        s = k >> 63  # 0, or -1 for k < 0
        am = (k ^ s) << self.j  # a m: the block's closest multiple of m to 0, in magnitude
        d = r - s  # |x| - a m: R, or R + 1 ... m for k < 0 (the mirror of m - R)
        x = am + d  # |x|
        g = (am + x) * d  # x² - (a m)²
        gh = (g * (self.f11 + 1)) >> self.t11
        keep = v + gh < np.int64((1 << 32) - 2)  # V + 1 + Gh <= 2**32, Gh = gh + 1
        np.bitwise_xor(x, s, out=x)
        np.subtract(x, s, out=x)  # the sign of k
        if tail.size:  # blocks beyond the table: decided exactly (g may not fit int64 there)
            keep[np.abs(k) >= self.k_max] = False
            far = np.abs(k) >= self.k_max
        else:
            far = None
        rest = np.flatnonzero(~keep)
        if rest.size:
            keep[rest] = self._slow(
                am[rest],
                d[rest],
                v[rest],
                g[rest],
                gh[rest],
                None if far is None else far[rest],
                rng,
            )
        return x[keep]

    def _slow(self, am, d, v, g, gh, far, rng) -> np.ndarray:
        """The rounds the fast test left (about gamma of them): rejected by the same 11-bit
        bounds when ``U >= 1 - g + g²/2``, else by second-order bounds with 31 bits, else
        exactly (:func:`_below_exp`)."""
        top = 1 << 32
        gl = (g * self.f11) >> self.t11  # <= gamma 2**32 (and gh + 1 >= it)
        accept = np.zeros(v.size, dtype=bool)
        left = v < top - gl + (((gh + 1) * (gh + 1)) >> 33) + 1  # not surely rejected
        if far is not None:
            left |= far
        idx = np.flatnonzero(left)
        if not idx.size:
            return accept
        am, d, v, g = am[idx], d[idx], v[idx], g[idx]
        t, f = self.t31, self.f31
        h = min(t, 21)  # g = g1 2**h + g0: each product below 2**62 (G < 0.31 sigma²)
        g1, g0 = g >> h, g & ((1 << h) - 1)
        lo = ((g1 * f) >> (t - h)) + ((g0 * f) >> t)  # <= gamma 2**32
        hi = ((g1 * (f + 1)) >> (t - h)) + ((g0 * (f + 1)) >> t) + 2  # >= gamma 2**32
        hi = np.minimum(hi, 1 << 30)  # the rest are exact (below)
        lo = np.minimum(lo, hi)
        sq_hi = ((hi * hi) >> 32) + 1  # >= hi² / 2**32
        sq_lo = (lo * lo) >> 32
        cube_hi = ((sq_hi * hi) >> 32) // 6 + 1  # >= hi³ / (6 2**64)
        sure = v + 1 + hi + cube_hi <= top + (sq_lo >> 1)  # U < 1 - g + g²/2 - g³/6
        out = v >= top - lo + (sq_hi >> 1) + 1  # U >= 1 - g + g²/2
        # gamma >= 1/4 (hi**2 would leave int64; not below the far tail at s0 >= 64) and the
        # far tail go to the exact path
        unsure = ~(sure | out) | (hi >= (1 << 30))
        if far is not None:
            unsure |= far[idx]
        for i in np.flatnonzero(unsure).tolist():  # rare: in Python integers, exactly
            a_m, dd = int(am[i]), int(d[i])
            gamma = Fraction((2 * a_m + dd) * dd) / self.two_s2
            sure[i] = _below_exp(int(v[i]), 32, gamma, rng)
        accept[idx] = sure
        return accept

    def sample(self, count: int, rng: np.random.Generator) -> np.ndarray:
        out = np.empty(count, dtype=np.int64)
        filled = 0
        while filled < count:  # each round keeps a value with probability about 0.75
            need = count - filled
            expected = need / self.rate  # + 4 standard deviations: one batch nearly always fills
            batch = min(int(expected + 4.0 * math.sqrt(expected)) + 8, _ROUND_CHUNK)
            got = self._round(batch, rng)
            if filled == 0 and got.size >= count:
                return got[:count]
            take = min(got.size, need)
            out[filled : filled + take] = got[:take]
            filled += take
        return out


def _below_exp(head: int, bits: int, gamma: Fraction, rng: np.random.Generator) -> bool:
    """Whether ``U < exp(-gamma)`` for ``U = (head + U') / 2**bits``, ``U'`` uniform in [0, 1).

    Reads 64 more bits of ``U`` a round and compares them with certified bounds ``lo <=
    exp(-gamma) 2**prec <= hi`` (:func:`exp_neg_fixed`); a round is undecided only when ``U``'s
    prefix falls in ``[lo - 1, hi)``, of probability ``(hi - lo + 1) 2**-prec`` (about
    ``2**-60``), so the loop ends for random bits. ``exp(-gamma)`` is irrational for rational
    ``gamma != 0`` (Lindemann-Weierstrass); ``gamma = 0`` accepts at once. An all-ones stream
    reads as zeros here (``U``'s bits are the complements of the words'), so it accepts at the
    first round whenever ``head / 2**bits < exp(-gamma)``.
    """
    if gamma == 0:
        return True
    prefix = head
    while True:  # the next 64 bits of U, complemented as V's are (all ones read as zeros)
        prefix = (prefix << 64) | (int(_words64(1, rng)[0]) ^ (2**64 - 1))
        bits += 64
        lo, hi = exp_neg_fixed(gamma, bits)
        if prefix + 1 <= lo:
            return True
        if prefix >= hi:
            return False


# --------------------------------------------------------------------------- discrete Gaussian


def _gaussian_plan(sigma: Fraction) -> tuple[Fraction, Fraction]:
    """``(sigma_hat, lam)``: a short dyadic ``sigma_hat >= sigma`` and ``lam >= 0``.

    ``sigma_hat = ceil(sigma 2**k) / 2**k`` with ``k = clip(20 - floor(log2 sigma), 0, 12)``
    has a numerator below 2**21 and a denominator at most 2**12, which keeps every quantity of
    :func:`_gaussian_short` below 2**62 for ``sigma <= 2**26``. ``lam = 1/(2 sigma²) -
    1/(2 sigma_hat²)`` is the correction: a draw ``y`` of ``N_Z(0, sigma_hat²)`` kept with
    probability ``exp(-lam y²)`` is a draw of ``N_Z(0, sigma²)`` (the weights multiply to
    ``exp(-y² / (2 sigma²))``; rejection sampling).
    """
    e = sigma.numerator.bit_length() - sigma.denominator.bit_length()  # floor(log2 sigma) or 1 less
    k = 12 if e < 8 else max(20 - e, 0)
    sigma_hat = Fraction(math.ceil(sigma * 2**k), 2**k)
    lam = 1 / (2 * sigma * sigma) - 1 / (2 * sigma_hat * sigma_hat)
    return sigma_hat, lam


def _gaussian_short(sigma: Fraction, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` runs of CKS20 Algorithm 3 for a short dyadic ``sigma = a / b``; accepted values.

    Proposal ``Y`` discrete Laplace of scale ``t = floor(sigma) + 1`` (line 3), kept with
    probability ``exp(-gamma)``, ``gamma = (|Y| - sigma²/t)² / (2 sigma²)`` (line 4). With
    ``c = |Y| t b² - a²`` and ``D = a b t``, ``gamma = r² / 2`` for ``r = |c| / D = m + f``
    (``m = |c| // D``, ``f = (|c| mod D) / D``), so ``exp(-gamma) = exp(-1/2)**(m²)
    exp(-f)**m exp(-f²/2)``: a conjunction of Bernoulli trials with rational parameters whose
    numerators and denominators are at most ``D`` (Algorithm 1; ``Bern(f² / (2k))`` is
    ``Bern(f) Bern(f / (2k))``).
    """
    a, b = sigma.numerator, sigma.denominator
    t = a // b + 1
    y = sample_discrete_laplace_exact(Fraction(t), size, rng)
    mag = np.abs(y)
    d = a * b * t
    y_max = (_LIMIT - a * a) // (t * b * b)
    inside = mag <= y_max
    c = np.abs(np.where(inside, mag, 0) * (t * b * b) - a * a)
    m, f = c // d, c % d
    inside &= m <= 2**20  # m² trials below 2**40 (beyond: acceptance below exp(-2**39))
    accept = np.zeros(size, dtype=bool)
    idx = np.flatnonzero(inside)
    m, f = m[idx], f[idx]
    # exp(-f²/2): Algorithm 1 with A_k = Bern(f / D) and Bern(f / (2 k D))
    ok = np.ones(idx.size, dtype=bool)
    run = np.arange(idx.size)
    k = 1
    while run.size:
        go_on = _bernoulli_ratio(f[run], d, 1, rng)
        sub = run[go_on]
        go_on[go_on] = _bernoulli_ratio(f[sub], d, 2 * k, rng)
        ok[run[~go_on]] = bool(k & 1)
        run = run[go_on]
        k += 1
    # exp(-1/2)**(m²) = exp(-1)**floor(m²/2) [exp(-1/2) if m is odd], then exp(-f)**m. A trial
    # of Bern(e^-1) fails on an all-ones word (K = 2), so that generator ends these loops at once.
    sq = m * m
    halves = np.where(sq % 2 == 1, 1, 0)
    for trials, num, den in (
        (sq // 2, np.ones_like(m), 1),
        (halves, np.ones_like(m), 2),
        (m, f, d),
    ):
        left = trials.copy()
        run = np.flatnonzero(ok & (left > 0))
        while run.size:
            passed = bernoulli_exp(num[run], den, rng)
            ok[run[~passed]] = False
            left[run] -= 1
            run = run[passed & (left[run] > 0)]
    accept[idx] = ok
    sigma2 = sigma * sigma
    for i in np.flatnonzero(~inside):  # far tail: rare, and then rejected fast (Bern(e^-1) first)
        gamma = (int(mag[i]) - sigma2 / t) ** 2 / (2 * sigma2)
        accept[i] = bernoulli_exp_scalar(gamma, rng)
    return y[accept]


def _gaussian_correct(y: np.ndarray, lam: Fraction, rng: np.random.Generator) -> np.ndarray:
    """Keep each ``y`` with probability ``exp(-lam y²)`` (Algorithm 1); returns the kept mask.

    ``A_k ~ Bern(lam y² / k) = Bern(y² / M) Bern(lam M / k)`` with ``M = min(floor(1/lam),
    2**62)``, so ``lam M <= 1`` and both factors are proper probabilities for ``y² <= M``;
    the second has a fixed rational parameter (:func:`_bernoulli_constant`). Entries with
    ``y² > M`` (beyond about ``2**9 sigma``; ``y != 0`` when ``lam`` is huge) are decided
    exactly in Python integers.
    """
    keep = np.ones(y.size, dtype=bool)
    if lam == 0:
        return keep
    big_m = min(math.floor(1 / lam), _LIMIT)
    root = math.isqrt(big_m)
    mag = np.abs(y)
    inside = mag <= root
    idx = np.flatnonzero(inside & (mag > 0))  # y = 0: gamma = 0, kept surely
    sq = mag[idx] * mag[idx]
    run = np.arange(idx.size)
    k = 1
    while run.size:
        go_on = _bernoulli_ratio(sq[run], big_m, 1, rng)
        sub = np.flatnonzero(go_on)
        go_on[sub] = _bernoulli_constant(lam * big_m / k, sub.size, rng)
        keep[idx[run[~go_on]]] = bool(k & 1)
        run = run[go_on]
        k += 1
    for i in np.flatnonzero(~inside):
        keep[i] = bernoulli_exp_scalar(lam * int(mag[i]) ** 2, rng)
    return keep


def gaussian_cks(sigma: Fraction, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` exact draws of ``N_Z(0, sigma²)``, all in int64 CKS20 arithmetic.

    Draws of ``N_Z(0, sigma_hat²)`` for the short ``sigma_hat >= sigma`` of
    :func:`_gaussian_plan` (CKS20 Algorithm 3 in int64), each kept with probability
    ``exp(-lam y²)`` (:func:`_gaussian_correct`). Batches are sized from the acceptance rate
    (about 3 in 4 for large sigma) until ``count`` are accepted. Used for sigma >= 255, where
    :class:`_GaussianTable` would be large, and by the tests as an independent method.
    """
    sigma_hat, lam = _gaussian_plan(sigma)
    out = np.empty(count, dtype=np.int64)
    filled = 0
    rate = 0.5 if sigma_hat < 1 else 0.7
    while filled < count:
        need = count - filled
        batch = int(need / rate * 1.02) + 16
        got = _gaussian_short(sigma_hat, batch, rng)
        got = got[_gaussian_correct(got, lam, rng)]
        take = min(got.size, need)
        out[filled : filled + take] = got[:take]
        filled += take
    return out


class _GaussianTable:
    """CKS20 Algorithm 3's acceptance probabilities ``exp(-gamma_y)`` for ``|y| <= 16 t``.

    ``gamma_y = (y - sigma²/t)² / (2 sigma²)`` with ``t = floor(sigma) + 1``, exact rationals;
    each probability is a :class:`_Threshold` (certified binary digits; transcendental by
    Lindemann-Weierstrass as ``gamma_y != 0``: ``sigma²/t`` is never an integer for
    ``t = floor(sigma) + 1``). A proposal ``Y`` is kept when 16 uniform bits (and more on a
    tie) are not below ``1 - exp(-gamma_|Y|)``: one table lookup and one comparison per proposal.
    Proposals beyond ``16 t`` (chance about ``e**-16``) are decided by
    :func:`bernoulli_exp_scalar`. Built for ``t <= 256`` (at most 4,097 entries, about 10
    microseconds each, once per sigma).
    """

    def __init__(self, sigma: Fraction) -> None:
        self.sigma2 = sigma * sigma
        self.t = sigma.numerator // sigma.denominator + 1
        self.size = 16 * self.t + 1
        mu = self.sigma2 / self.t
        # rejection probabilities 1 - exp(-gamma_y): a proposal is dropped when U < 1 - exp(-gamma),
        # so an all-ones word keeps it (and the all-ones proposal, 0, is always in the table)
        self.rows = [_one_minus_exp((y - mu) ** 2 / (2 * self.sigma2)) for y in range(self.size)]
        self.heads = np.array([r.digit(1) for r in self.rows], dtype=np.uint16)
        # acceptance rate of one proposal, in floating point: it only sizes the batches
        k = np.arange(-self.size + 1, self.size, dtype=np.float64)
        with np.errstate(over="ignore"):  # z = inf for a subnormal sigma: weight 0
            z = np.abs(k) / float(sigma) - float(sigma) / self.t
            weight = np.exp(-0.5 * z * z)
        proposal = math.tanh(0.5 / self.t) * np.exp(-np.abs(k) / self.t)
        self.rate = max(float(np.sum(proposal * weight)), 0.05)

    def gamma(self, y: int) -> Fraction:
        return (y - self.sigma2 / self.t) ** 2 / (2 * self.sigma2)


#: Largest t = floor(sigma) + 1 with an acceptance table.
_TABLE_MAX_T = 256


def _gaussian_table_block(table: _GaussianTable, size: int, rng) -> np.ndarray:
    """``size`` runs of Algorithm 3 with the acceptance table; returns the accepted values."""
    # line 3: discrete Laplace proposals of scale t (as magnitude and sign), and one more word each
    mag, negative, extra = _laplace_parts(_laplace_plan(table.t, 1), size, rng, extra=1)
    words = extra[0]
    idx = np.minimum(mag, table.size - 1)
    heads = table.heads[idx]
    drop = words < heads  # line 4, decided by the first 16 bits ...
    ties = np.flatnonzero(words == heads)
    level = 2
    while ties.size:  # ... or, on a tie (chance 2**-16), by the next ones
        d = np.array([table.rows[i].digit(level) for i in idx[ties]], dtype=np.int64)
        w = rng.integers(0, 1 << _WORD, size=ties.size, dtype=np.int64)
        done = w != d
        drop[ties[done]] = w[done] < d[done]
        ties = ties[~done]
        level += 1
    for i in np.flatnonzero(mag >= table.size):  # beyond 16 t: exact, in Python integers
        drop[i] = not bernoulli_exp_scalar(table.gamma(int(mag[i])), rng)
    np.negative(mag, out=mag, where=negative)
    return mag[~drop]


def _gaussian_table_sampler(table: _GaussianTable, count: int, rng) -> np.ndarray:
    out = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        need = count - filled
        expected = need / table.rate  # + 4 standard deviations: one batch nearly always fills
        batch = min(int(expected + 4.0 * math.sqrt(expected)) + 8, _BLOCK)
        got = _gaussian_table_block(table, batch, rng)
        if filled == 0 and got.size >= count:  # the usual case: one batch, no copy
            return got[:count]
        take = min(got.size, need)
        out[filled : filled + take] = got[:take]
        filled += take
    return out


#: Largest sigma :class:`_GaussianInversion` accepts (about 20 sigma ends, built in about 0.35 s
#: at sigma 4096); the dispatcher uses it up to :data:`_BLOCKS_MIN_SIGMA`.
_INVERSION_MAX_SIGMA = 4096
#: Above this sigma the sampler is :class:`_GaussianBlocks` (a table of sigma 64 to 128 built in
#: milliseconds, and faster than the long tables of :class:`_GaussianInversion` from about here).
_BLOCKS_MIN_SIGMA = 1024


@functools.lru_cache(maxsize=16)
def _gaussian_method(sigma: Fraction):
    """The sampler of one sigma, ``(count, rng) -> int64 array``; cached by the exact rational."""
    if not 0 < sigma <= MAX_GAUSSIAN_SIGMA:
        raise ValueError(f"sigma must be in (0, 2**26], got {sigma!r}")
    if sigma <= _BLOCKS_MIN_SIGMA:
        return _GaussianInversion(sigma).sample
    return _GaussianBlocks(sigma).sample


@functools.lru_cache(maxsize=16)
def _gaussian_method_of_float(sigma: float):
    return _gaussian_method(Fraction(sigma))


def sample_discrete_gaussian_exact(
    sigma: Fraction, count: int, rng: np.random.Generator
) -> np.ndarray:
    """``count`` exact draws of ``P(x) ∝ exp(-x² / (2 sigma²))`` for ``0 < sigma <= 2**26``.

    CKS20 Algorithm 3 (discrete Laplace proposals of scale ``t = floor(sigma) + 1`` kept with
    probability ``exp(-gamma_|Y|)``) in one of two exact forms by sigma: up to 1024, a round is
    one 64-bit word inverted through a table of the round's exact law
    (:class:`_GaussianInversion`); above, a block of ``m`` integers from such a table at sigma
    ``sigma / m``, a uniform offset and an exact acceptance test (:class:`_GaussianBlocks`).
    Rounds are drawn in batches of at most 16,384 until ``count`` are accepted. (Two more forms,
    CKS20 Algorithms 1-3 in int64, :func:`gaussian_cks`, and proposals by binary digits with an
    acceptance table, :class:`_GaussianTable`, are kept as independent checks in the tests.)
    """
    return _gaussian_method(sigma)(count, rng)


def discrete_gaussian_of_float(sigma: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`sample_discrete_gaussian_exact` for the double ``sigma``, read as the rational it is."""
    return _gaussian_method_of_float(sigma)(count, rng)
