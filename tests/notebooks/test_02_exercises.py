"""Notebook 02's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/02_laplace_mechanism``, three or more
plausible wrong answers (the standard deviation taken for the Laplace scale, a replace-one factor
2 where add/remove is asked, a person-level scale for a household, a scale from the data at hand,
a union bound or a rounding where the smallest n is asked, a NaN or infinite epsilon accepted,
e^(k eps) overflowing, a special case that fits only the visible inputs, ...) are handed in and
graded by the trusted grader; each must score 0 on its exercise. Two correct alternatives per
exercise, written differently from the solution, must get full marks under five seeds (``{burn}``
draws that many numbers from the generator first). The harness is ``tests/support/notebook_probes.py``;
the figures and experiments (ungraded code cells) are left out of the graded notebook.

Issue 50 (no answer one ``help()`` away): Exercise 3 asks for the Laplace scales, one per entry,
of a query whose entries one person moves by different bounds, with the least total variance;
the hidden test judges them against the exact worst privacy loss and Hoelder's least total
variance, computed in the test. Its probes: dplib's scale (the L1 sensitivity over epsilon on
every entry, what ``help(dplib.laplace_scale)`` prints, the old exercise's answer), an equal share
of epsilon per entry, the whole epsilon per entry, scales proportional to sqrt(d) or d^(2/3),
scales 10 % off either way, the count of entries off by one, the standard deviation for the
scale, NaN or infinite epsilon accepted, one noise draw for all entries, the rng ignored.
Exercise 6 asks for a trimmed mean (t values dropped at each end) under replace-one, its noise
scale judged against a brute-force sensitivity computed in the test; probes: the plain mean's
(U - L)/n (``help(dplib.private_mean)``, the old answer), (U - L)/(n - t), the block off by one,
a replacement counted twice, the add/remove bound, the 2t highest dropped, no clamping, NaN
epsilon accepted, the rng ignored.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "02_laplace_mechanism"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "group_posterior_band": "group_posterior_band_tests",
    "derived_sensitivities": "derived_sensitivities_tests",
    "laplace": "laplace_tests",
    "sample_size": "sample_size_tests",
    "household_count": "household_count_tests",
    "salary": "salary_tests",
    "feature_counts": "feature_counts_tests",
}

# ------------------------------------------------------------------------------ wrong answers


def _band(low: str, high: str) -> str:
    return f"""
def group_posterior_band(prior, epsilon, k):
    p = prior
    return (float({low}), float({high}))
"""


def _sens(pairs_ar: str, pairs_rep: str, variance: str, strict: bool = True) -> str:
    tail = (
        '    raise ValueError("neighbouring must be add_remove or replace")'
        if strict
        else f"    return float({pairs_ar})"
    )
    return f"""
def pair_count_sensitivity(max_items, neighbouring):
    m = max_items
    if neighbouring == "add_remove":
        return float({pairs_ar})
    if neighbouring == "replace":
        return float({pairs_rep})
{tail}


def variance_sensitivity(lower, upper, n):
    return float({variance})
"""


_PAIRS = "m * (m - 1) / 2"
_VAR = "(n - 1) * (upper - lower) ** 2 / n ** 2"


def _laplace(
    scales: str = "root * np.sum(root * root) / epsilon",
    check: str = "not (math.isfinite(epsilon) and epsilon > 0) or not np.all(np.isfinite(d) & (d >= 0))",
    draw: str = "rng.laplace(0.0, scales, size=arr.shape)",
) -> str:
    return f"""
def laplace_noise_scales(sensitivities, epsilon):
    d = np.asarray(sensitivities, dtype=float)
    if {check}:
        raise ValueError("bad epsilon or sensitivity")
    k = d.size
    root = np.cbrt(d)
    scales = np.asarray({scales}, dtype=float) * np.ones_like(d)
    return float(scales) if scales.ndim == 0 else scales


def my_laplace_mechanism(value, sensitivities, epsilon, rng):
    scales = np.asarray(laplace_noise_scales(sensitivities, epsilon), dtype=float)
    arr = np.asarray(value, dtype=float)
    noisy = arr + {draw}
    return float(noisy) if noisy.ndim == 0 else noisy
"""


def _size(t: str, n: str = "math.ceil(k * value_range * t / (gamma * epsilon))") -> str:
    return f"""
def sample_size(value_range, k, gamma, epsilon, beta):
    t = {t}
    return max(1, int({n}))
"""


_T = "-math.log(1.0 - (1.0 - beta) ** (1.0 / k))"


def _household(
    scale: str = "m / epsilon",
    check: str = "not (math.isfinite(epsilon) and epsilon > 0) or m < 1",
    capped: str = "np.minimum(per, m).sum()",
) -> str:
    return f"""
def private_household_count(household, flag, max_per_household, epsilon, rng):
    m = max_per_household
    if {check}:
        raise ValueError("bad parameter")
    household = np.asarray(household)
    flag = np.asarray(flag, dtype=bool)
    _, per = np.unique(household[flag], return_counts=True)
    capped = {capped}
    return float(capped + rng.laplace(0.0, {scale}))
"""


def _salary(
    scale: str = "(upper - lower) / ((n - 2 * t) * epsilon)",
    check: str = "not (math.isfinite(epsilon) and epsilon > 0) or not (math.isfinite(lower) and math.isfinite(upper) and lower < upper)",
    values: str = "np.sort(np.clip(np.asarray(salaries, dtype=float), lower, upper))",
    middle: str = "values[t : n - t]",
    noise: str = "rng.laplace(0.0, {scale})",
) -> str:
    return f"""
def private_trimmed_salary(salaries, lower, upper, trim, epsilon, rng):
    if {check}:
        raise ValueError("bad parameter")
    values = {values}
    n = values.size
    if int(trim) != trim or trim < 0 or 2 * trim >= n:
        raise ValueError("bad trim")
    t = int(trim)
    return float({middle}.mean() + {noise.format(scale=scale)})
"""


def _counts(
    scale: str = "d / epsilon",
    check: str = "not (math.isfinite(epsilon) and epsilon > 0)",
    size: str = "counts.shape",
) -> str:
    return f"""
def private_feature_counts(X, y, n_classes, n_values, epsilon, rng):
    if {check}:
        raise ValueError("bad epsilon")
    X, y = np.asarray(X), np.asarray(y)
    n, d = X.shape
    counts = np.zeros((n_classes, d, n_values))
    for j in range(d):
        np.add.at(counts[:, j, :], (y, X[:, j]), 1.0)
    return counts + rng.laplace(0.0, {scale}, size={size})
"""


#: grade_id -> plausible wrong answers, each with what it gets wrong
WRONG = {
    "group_posterior_band": [
        (
            "a single person's band (k ignored)",
            _band(
                "p * math.exp(-epsilon) / (p * math.exp(-epsilon) + 1 - p)",
                "p * math.exp(epsilon) / (p * math.exp(epsilon) + 1 - p)",
            ),
        ),
        (
            "the looser lecture bound prior e^(+-k eps), capped at 1",
            _band("p * math.exp(-k * epsilon)", "min(1.0, p * math.exp(k * epsilon))"),
        ),
        (
            "e^(k eps) overflows: nan at k eps = 1000",
            _band(
                "p * np.exp(-k * epsilon) / (p * np.exp(-k * epsilon) + 1 - p)",
                "p * np.exp(k * epsilon) / (p * np.exp(k * epsilon) + 1 - p)",
            ),
        ),
        (
            "odds moved by 2^(k eps) (log2 for ln)",
            _band(
                "p * 2.0 ** (-k * epsilon) / (p * 2.0 ** (-k * epsilon) + 1 - p)",
                "p / (p + (1 - p) * 2.0 ** (-k * epsilon))",
            ),
        ),
    ],
    "derived_sensitivities": [
        ("ordered pairs m(m-1)", _sens("m * (m - 1)", "2 * m * (m - 1)", _VAR)),
        (
            "variance: the bound (U-L)^2/n, not the exact sensitivity",
            _sens(_PAIRS, "2 * " + _PAIRS, "(upper - lower) ** 2 / n"),
        ),
        (
            "variance (U-L)^2/(2n): right only at the visible n = 2",
            _sens(_PAIRS, "2 * " + _PAIRS, "(upper - lower) ** 2 / (2 * n)"),
        ),
        ("replace-one given the add/remove value (relation swapped)", _sens(_PAIRS, _PAIRS, _VAR)),
        (
            "an unknown relation accepted (no ValueError)",
            _sens(_PAIRS, "2 * " + _PAIRS, _VAR, strict=False),
        ),
    ],
    "laplace": [
        (
            "dplib's scale, read in help(dplib.laplace_scale): the L1 sensitivity sum(d) / epsilon on "
            "every entry (the old exercise's answer: private, not the least total variance)",
            _laplace(scales="np.sum(d) / epsilon"),
        ),
        (
            "an equal share epsilon / k per entry: k d_i / epsilon (private, not the least)",
            _laplace(scales="k * d / epsilon"),
        ),
        (
            "each entry at the whole epsilon: d_i / epsilon (not private)",
            _laplace(scales="d / epsilon"),
        ),
        (
            "scales proportional to sqrt(d_i) (the least total absolute error, not variance)",
            _laplace(scales="np.sqrt(d) * np.sum(np.sqrt(d)) / epsilon"),
        ),
        (
            "scales proportional to d_i^(2/3) (a wrong power)",
            _laplace(scales="np.cbrt(d) ** 2 * np.sum(np.cbrt(d)) / epsilon"),
        ),
        ("scales 10 % too large", _laplace(scales="1.1 * root * np.sum(root * root) / epsilon")),
        ("scales 10 % too small", _laplace(scales="0.9 * root * np.sum(root * root) / epsilon")),
        (
            "the count of entries off by one: k - 1 shares of epsilon",
            _laplace(scales="max(k - 1, 1) * d / epsilon"),
        ),
        (
            "NaN accepted (epsilon <= 0 checked only)",
            _laplace(check="epsilon <= 0 or np.any(d < 0)"),
        ),
        (
            "the standard deviation taken for the scale (numpy's scale is b)",
            _laplace(draw="rng.laplace(0.0, scales / math.sqrt(2), size=arr.shape)"),
        ),
        (
            "infinite epsilon accepted (the second edition's check)",
            _laplace(check="not epsilon > 0 or not np.all(d >= 0)"),
        ),
        ("one noise value for all entries", _laplace(draw="rng.laplace(0.0, 1.0) * scales")),
        (
            "rng ignored: numpy's global generator",
            _laplace(draw="np.random.laplace(0.0, scales, size=arr.shape)"),
        ),
    ],
    "sample_size": [
        ("union bound ln(k / beta)", _size("math.log(k / beta)")),
        ("rounded, not rounded up", _size(_T, n="round(k * value_range * t / (gamma * epsilon))")),
        (
            "epsilon not split over the k answers",
            _size(_T, n="math.ceil(value_range * t / (gamma * epsilon))"),
        ),
        ("log2 for ln", _size("-math.log2(1.0 - (1.0 - beta) ** (1.0 / k))")),
        ("floor (int) instead of ceiling", _size(_T, n="k * value_range * t / (gamma * epsilon)")),
    ],
    "household_count": [
        (
            "scale 1 / epsilon (protects a person, not a household)",
            _household(scale="1.0 / epsilon"),
        ),
        (
            "scale from the data: the largest capped household present (local sensitivity)",
            _household(scale="max(1, min(m, per.max() if per.size else 0)) / epsilon"),
        ),
        (
            "scale 2m / epsilon (replace-one factor, not the smallest)",
            _household(scale="2 * m / epsilon"),
        ),
        ("NaN epsilon accepted", _household(check="epsilon <= 0 or m < 1")),
        ("no cap per household", _household(capped="per.sum()")),
    ],
    "salary": [
        (
            "(U - L) / n: the plain mean's sensitivity, read in help(dplib.private_mean) (the old answer)",
            _salary(scale="(upper - lower) / (n * epsilon)"),
        ),
        (
            "(U - L) / (n - t): one end's trim counted",
            _salary(scale="(upper - lower) / ((n - t) * epsilon)"),
        ),
        (
            "(U - L) / (n - 2t + 1): the block's size off by one",
            _salary(scale="(upper - lower) / ((n - 2 * t + 1) * epsilon)"),
        ),
        (
            "2 (U - L) / (n - 2t): a replacement counted as two changes (not the smallest)",
            _salary(scale="2 * (upper - lower) / ((n - 2 * t) * epsilon)"),
        ),
        (
            "max(|L|, |U|) / (n - 2t): the add/remove bound of a sum",
            _salary(scale="max(abs(lower), abs(upper)) / ((n - 2 * t) * epsilon)"),
        ),
        ("the 2t highest dropped, not t at each end", _salary(middle="values[: n - 2 * t]")),
        ("no clamping", _salary(values="np.sort(np.asarray(salaries, dtype=float))")),
        (
            "NaN epsilon accepted",
            _salary(check="epsilon <= 0 or lower >= upper"),
        ),
        ("rng ignored: numpy's global generator", _salary(noise="np.random.laplace(0.0, {scale})")),
    ],
    "feature_counts": [
        ("scale 1 / epsilon (one histogram's sensitivity)", _counts(scale="1.0 / epsilon")),
        ("scale 2D / epsilon (replace-one)", _counts(scale="2 * d / epsilon")),
        (
            "scale D n_values / epsilon (every cell of a table)",
            _counts(scale="d * n_values / epsilon"),
        ),
        ("NaN epsilon accepted", _counts(check="epsilon <= 0")),
        ("one noise draw per table, broadcast over classes", _counts(size="(1, d, n_values)")),
    ],
}

# ------------------------------------------------------------------------- correct alternatives

#: grade_id -> two correct answers written differently from the solution; "{burn}" draws that
#: many numbers from the generator first (a shifted seed)
ALTERNATIVES = {
    "group_posterior_band": [
        """
def group_posterior_band(prior, epsilon, k):
    a = math.exp(-k * epsilon)          # underflows to 0 for huge k epsilon, never overflows
    low = prior * a / (prior * a + 1 - prior)
    high = prior / (prior + (1 - prior) * a)
    return float(low), float(high)
""",
        """
def group_posterior_band(prior, epsilon, k):
    z = math.log(prior) - math.log1p(-prior)
    lo, hi = z - k * epsilon, z + k * epsilon
    return (float(np.exp(lo - np.logaddexp(0.0, lo))), float(np.exp(hi - np.logaddexp(0.0, hi))))
""",
    ],
    "derived_sensitivities": [
        """
def pair_count_sensitivity(max_items, neighbouring):
    factor = {"add_remove": 1, "replace": 2}
    if neighbouring not in factor:
        raise ValueError(f"unknown relation {neighbouring!r}")
    return float(factor[neighbouring] * math.comb(max_items, 2))


def variance_sensitivity(lower, upper, n):
    worst = np.full(n, float(lower))
    moved = worst.copy()
    moved[0] = upper
    return float(abs(np.var(moved) - np.var(worst)))
""",
        """
def pair_count_sensitivity(max_items, neighbouring):
    if neighbouring not in ("add_remove", "replace"):
        raise ValueError("neighbouring must be 'add_remove' or 'replace'")
    touched = sum(range(max_items))
    return float(touched if neighbouring == "add_remove" else touched + touched)


def variance_sensitivity(lower, upper, n):
    width = upper - lower
    return width * width * (1.0 / n - 1.0 / (n * n))
""",
    ],
    "laplace": [
        """
def laplace_noise_scales(sensitivities, epsilon):
    # the multiplier by bisection: b_i = (lam d_i)^(1/3), and the loss sum d_i / b_i = eps
    epsilon = float(epsilon)
    if not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError("epsilon must be finite and > 0")
    d = np.array(sensitivities, dtype=float)
    if np.any(np.isnan(d)) or np.any(np.isinf(d)) or np.any(d < 0):
        raise ValueError("sensitivities must be finite and >= 0")
    moving = d > 0

    def loss(lam):
        return float(np.sum(d[moving] / np.cbrt(lam * d[moving])))

    if not moving.any():
        scales = np.zeros_like(d)
    else:
        lo, hi = 1.0, 1.0
        while loss(lo) <= epsilon:
            lo /= 2.0
        while loss(hi) > epsilon:
            hi *= 2.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            lo, hi = (lo, mid) if loss(mid) <= epsilon else (mid, hi)
        scales = np.cbrt(hi * d)
    return float(scales) if scales.ndim == 0 else scales


def my_laplace_mechanism(value, sensitivities, epsilon, rng):
    rng.random({burn})
    b = np.asarray(laplace_noise_scales(sensitivities, epsilon))
    shape = np.shape(value)
    noise = b * (rng.exponential(size=shape) - rng.exponential(size=shape))   # a Laplace(b) draw
    if shape == ():
        return float(value) + float(noise)
    return np.array(value, dtype=float) + noise
""",
        """
def laplace_noise_scales(sensitivities, epsilon):
    for name, x in (("epsilon", epsilon),):
        if math.isnan(x) or math.isinf(x) or x <= 0:
            raise ValueError(f"{name} must be a finite number > 0")
    flat = [float(v) for v in np.ravel(sensitivities)]
    if any(math.isnan(v) or math.isinf(v) or v < 0 for v in flat):
        raise ValueError("every sensitivity must be a finite number >= 0")
    # Hoelder's equality case: b_i = d_i^(1/3) (sum_j d_j^(2/3)) / epsilon
    total = sum(v ** (2.0 / 3.0) for v in flat)
    out = [v ** (1.0 / 3.0) * total / epsilon for v in flat]
    if np.ndim(sensitivities) == 0:
        return out[0]
    return np.array(out).reshape(np.shape(sensitivities))


def my_laplace_mechanism(value, sensitivities, epsilon, rng):
    rng.random({burn})
    b = np.asarray(laplace_noise_scales(sensitivities, epsilon))
    x = np.array(value, dtype=float, copy=True)
    u = rng.uniform(-0.5, 0.5, size=x.shape)
    x = x - b * np.sign(u) * np.log1p(-2 * np.abs(u))                      # inverse CDF
    return float(x) if np.ndim(x) == 0 else x
""",
    ],
    "sample_size": [
        """
def sample_size(value_range, k, gamma, epsilon, beta):
    def enough(n):
        scale = k * value_range / (n * epsilon)
        return k * math.log1p(-math.exp(-gamma / scale)) >= math.log1p(-beta)

    hi = 1
    while not enough(hi):
        hi *= 2
    lo = hi // 2                       # enough(lo) is False (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return int(hi)
""",
        """
def sample_size(value_range, k, gamma, epsilon, beta):
    t = -math.log1p(-math.exp(math.log1p(-beta) / k))
    n = max(1, math.ceil(k * value_range * t / (gamma * epsilon)))

    def ok(m):
        return (1 - math.exp(-gamma * m * epsilon / (k * value_range))) ** k >= 1 - beta

    while n > 1 and ok(n - 1):
        n -= 1
    while not ok(n):
        n += 1
    return int(n)
""",
    ],
    "household_count": [
        """
def private_household_count(household, flag, max_per_household, epsilon, rng):
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError("epsilon must be finite and > 0")
    if max_per_household < 1 or int(max_per_household) != max_per_household:
        raise ValueError("max_per_household must be an integer >= 1")
    rng.random({burn})
    ids = np.sort(np.asarray(household)[np.asarray(flag, dtype=bool)])
    if ids.size == 0:
        total = 0
    else:
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        runs = np.diff(np.r_[starts, ids.size])
        total = int(np.minimum(runs, max_per_household).sum())
    b = max_per_household / epsilon
    return total + b * (rng.exponential() - rng.exponential())
""",
        """
def private_household_count(household, flag, max_per_household, epsilon, rng):
    m = max_per_household
    if math.isnan(epsilon) or math.isinf(epsilon) or epsilon <= 0 or m < 1 or m % 1 != 0:
        raise ValueError("need a finite epsilon > 0 and an integer max_per_household >= 1")
    rng.random({burn})
    _, inverse = np.unique(np.asarray(household), return_inverse=True)
    per = np.bincount(inverse.ravel(), weights=np.asarray(flag, dtype=float))
    return float(np.clip(per, 0, m).sum() + rng.laplace(scale=m / epsilon))
""",
    ],
    "salary": [
        """
def private_trimmed_salary(salaries, lower, upper, trim, epsilon, rng):
    if not all(math.isfinite(x) for x in (lower, upper, epsilon)) or epsilon <= 0 or lower >= upper:
        raise ValueError("need finite lower < upper and a finite epsilon > 0")
    n = len(salaries)
    if trim != math.floor(trim) or not 0 <= 2 * trim < n:
        raise ValueError("trim must be an integer with 0 <= 2 trim < n")
    t = int(trim)
    rng.random({burn})
    s = sorted(min(max(float(x), lower), upper) for x in salaries)
    middle = s[t : n - t]
    width = (upper - lower) / len(middle)          # one value leaves the block, a neighbour enters
    b = width / epsilon
    return float(sum(middle) / len(middle) + b * (rng.exponential() - rng.exponential()))
""",
        """
def private_trimmed_salary(salaries, lower, upper, trim, epsilon, rng):
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon must be finite and > 0")
    if not (np.isfinite(lower) and np.isfinite(upper)) or not lower < upper:
        raise ValueError("need finite bounds with lower < upper")
    x = dplib.clamp(np.array(salaries, dtype=float), lower, upper)
    n = x.size
    if isinstance(trim, bool) or int(trim) != trim or trim < 0 or n - 2 * trim < 1:
        raise ValueError("bad trim")
    t = int(trim)
    rng.random({burn})
    kept = n - 2 * t
    if t > 0:
        x = np.partition(x, (t - 1, n - t))[t : n - t] if n - t < n else np.sort(x)[t : n - t]
    return float(rng.laplace(loc=x.mean(), scale=(upper - lower) / (kept * epsilon)))
""",
    ],
    "feature_counts": [
        """
def private_feature_counts(X, y, n_classes, n_values, epsilon, rng):
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("epsilon must be finite and > 0")
    rng.random({burn})
    X, y = np.asarray(X), np.asarray(y)
    d = X.shape[1]
    onehot_y = np.eye(n_classes)[y]                  # (n, C)
    onehot_x = np.eye(n_values)[X]                   # (n, D, V)
    counts = np.einsum("nc,ndv->cdv", onehot_y, onehot_x)
    return counts + (d / epsilon) * (rng.exponential(size=counts.shape) - rng.exponential(size=counts.shape))
""",
        """
def private_feature_counts(X, y, n_classes, n_values, epsilon, rng):
    if np.isnan(epsilon) or np.isinf(epsilon) or epsilon <= 0:
        raise ValueError("epsilon must be a finite number > 0")
    rng.random({burn})
    X, y = np.array(X), np.array(y)
    d = X.shape[1]
    tables = []
    for j in range(d):
        table, _, _ = np.histogram2d(y, X[:, j], bins=[np.arange(n_classes + 1) - 0.5, np.arange(n_values + 1) - 0.5])
        tables.append(table)
    counts = np.stack(tables, axis=1)
    return counts + rng.laplace(0.0, d / epsilon, size=counts.shape)
""",
    ],
}

# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
