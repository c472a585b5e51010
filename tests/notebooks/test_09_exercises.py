"""Notebook 09's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

For every exercise of ``solutions/09_beyond_global_sensitivity`` (issue 39, item 3), three or more
plausible wrong answers are handed in and graded by the real trusted grader
(:func:`coursetools.grading.grade.grade_job`); each must score 0 on its exercise:

* an order statistic's local sensitivity at distance k (issue 50: the r-th smallest value, not the
  median dplib hands over): the median's rank whatever r, r counted from 0, no padding by the
  range's ends, moving only outwards from the value, values not clamped;
* the counterexample to noise scaled to the local sensitivity (issue 50: both outputs continuous):
  the point-mass witness of dplib's docstring, tables that differ in two records, an event whose
  probability ratio is within e, tables of different sizes, an event of probability 0 on both sides;
* the smooth sensitivity of the r-th value: the median's rank whatever r, the local sensitivity only, distances cut at 20 (fits small tables),
  the discount e^{-beta (k+1)}, distances up to n - 1 only (misses the whole range at small beta);
* propose-test-release: the distance to instability one too large (caught at epsilon = 4 > 2 ln 2),
  the average of the two middle values for even n, delta forgotten (threshold 0), the textbook
  threshold ln(1/delta)/eps0 (issue 50: the contract asks for the smallest; dplib's docstring
  prints the textbook one), the whole epsilon
  on the test and on the release (the split forgotten), release noise scaled to the local
  sensitivity instead of the proposed bound, release noise of scale b / epsilon;
* sample-and-aggregate over a visit log, one person with many rows (issue 50: dplib hands over one
  record per person): a block per row instead of per person, contiguous blocks by position (caught
  by removing the first person), the median of the block values with the add/remove sensitivity,
  blocks that overlap (a bootstrap resample per block), no split (the statistic of the whole table in
  every block), an empty block's np.std (NaN) passed on;
* the packing bound for a k-bin histogram (issue 50: dplib states the marginals' one): the
  marginals' 2^k tables, beta forgotten, log2 for ln, a factor 2 too many, more than the ceiling of
  the sharpest bound the argument proves (the hidden test accepts every value from the
  every-box-alike bound to that ceiling).

Two correct alternatives per exercise, written differently from the solution, must get full marks
under five seeds (``{burn}`` draws of the generator are burnt first where randomness is used).
One submission carries the i-th wrong answer of every exercise at once.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "09_beyond_global_sensitivity"

EXERCISES = {
    "local_sensitivity_median": "local_sensitivity_median_tests",
    "local_sensitivity_attack": "local_sensitivity_attack_tests",
    "smooth_sensitivity": "smooth_sensitivity_tests",
    "ptr_median": "ptr_median_tests",
    "sample_and_aggregate": "sample_and_aggregate_tests",
    "lower_bound": "lower_bound_tests",
}


def _ls(*, m: str = "r", pad: bool = True, clamp: bool = True, outwards: bool = False) -> str:
    values = (
        "np.clip(np.asarray(x, dtype=float), lower, upper)"
        if clamp
        else "np.asarray(x, dtype=float)"
    )
    padded = (
        "np.concatenate(([lower], v, [upper]))" if pad else "np.concatenate(([v[0]], v, [v[-1]]))"
    )
    if outwards:
        body = """    up = padded[min(m + k + 1, n + 1)] - padded[m]
    down = padded[m] - padded[max(m - k - 1, 0)]
    return float(max(up, down))"""
    else:
        body = """    k = min(int(k), n + 1)
    t = np.arange(k + 2)
    return float(np.max(padded[np.minimum(m + t, n + 1)] - padded[np.maximum(m + t - k - 1, 0)]))"""
    return f"""
def order_stat_local_sensitivity(x, r, k, lower, upper):
    v = np.sort({values})
    n = v.size
    if n == 0:
        return 0.0
    m = {m}
    padded = {padded}
{body}
"""


def _attack(x: str, y: str, event: str) -> str:
    return f"""
x_attack = {x}
y_attack = {y}
event = {event}
"""


def _smooth(
    *, last_k: str = "n", discount: str = "k", only_local: bool = False, m: str = "int(r)"
) -> str:
    loop = "range(1)" if only_local else f"range(min({last_k}, n) + 1)"
    return f"""
def smooth_sensitivity(x, r, beta, lower, upper):
    v = np.sort(np.clip(np.asarray(x, dtype=float), lower, upper))
    n = v.size
    if n == 0:
        return float(upper - lower)
    m = {m}
    p = np.concatenate(([lower], v, [upper]))
    best = 0.0
    for k in {loop}:
        t = np.arange(k + 2)
        a = np.max(p[np.minimum(m + t, n + 1)] - p[np.maximum(m + t - k - 1, 0)])
        best = max(best, math.exp(-beta * ({discount})) * float(a))
    return best
"""


def _ptr(
    *,
    threshold: str = "math.log(1.0 / (2.0 * delta)) / eps0",
    test_scale: str = "1.0 / eps0",
    release_scale: str = "bound / eps0",
    eps0: str = "epsilon / 2",
    gamma_plus: str = "0",
    median: str = "p[m]",
) -> str:
    return f"""
def my_ptr_median(x, lower, upper, bound, epsilon, delta, rng):
    v = np.sort(np.clip(np.asarray(x, dtype=float), lower, upper))
    n = v.size
    m = (n + 1) // 2
    p = np.concatenate(([lower], v, [upper]))

    def a_k(k):
        if n == 0:
            return 0.0
        t = np.arange(min(k, n + 1) + 2)
        return float(np.max(p[np.minimum(m + t, n + 1)] - p[np.maximum(m + t - k - 1, 0)]))

    gamma = 0
    while gamma <= n and a_k(gamma) <= bound:
        gamma += 1
    gamma += {gamma_plus}
    eps0 = {eps0}
    if gamma + rng.laplace(0.0, {test_scale}) <= {threshold}:
        return None
    return float({median} + rng.laplace(0.0, {release_scale}))
"""


def _sa(*, blocks_of: str, empty: str = "lower", relation: str = "replace") -> str:
    return f"""
def my_sample_and_aggregate_std(users, x, lower, upper, epsilon, blocks, grid, rng):
    users = np.asarray(users)
    x = np.asarray(x, dtype=float)
    parts = {blocks_of}
    values = np.array([np.std(b) if b.size else {empty} for b in parts])
    values = np.clip(values, lower, upper)
    return float(private_median(values, lower, upper, epsilon, grid=grid, neighbouring="{relation}", rng=rng))
"""


# a block per person: np.unique's inverse maps each row to its person
_DISJOINT = (
    "[x[w == j] for w in [rng.integers(0, blocks, size=np.unique(users).size)"
    "[np.unique(users, return_inverse=True)[1]]] for j in range(blocks)]"
)


def _bound(expr: str) -> str:
    return f"""
def histogram_min_rows(k, epsilon, beta):
    return max(0.0, float({expr}))
"""


WRONG = {
    "local_sensitivity_median": [
        (
            "the median's rank whatever r (dplib's median formula, read in help())",
            _ls(m="(n + 1) // 2"),
        ),
        ("r counted from 0 (the (r + 1)-th smallest)", _ls(m="min(r + 1, n)")),
        ("no padding: the data's own ends instead of the range's", _ls(pad=False)),
        ("moving only outwards from the current median", _ls(outwards=True)),
        ("values outside [lower, upper] not clamped", _ls(clamp=False)),
    ],
    "local_sensitivity_attack": [
        (
            "the point-mass witness (5, 5, 5) of dplib's docstring: local sensitivity 0 on one table",
            _attack("[5.0, 5.0, 5.0]", "[5.0, 5.0, 6.0]", "(5.0, 5.0)"),
        ),
        (
            "the tables differ in two records",
            _attack("[40.0, 41.0, 42.0]", "[40.0, 95.0, 95.0]", "(80.0, 100.0)"),
        ),
        (
            "an event holding most outputs, where the ratio is within e",
            _attack("[40.0, 41.0, 42.0]", "[40.0, 41.0, 95.0]", "(0.0, 100.0)"),
        ),
        (
            "tables of different sizes (add/remove)",
            _attack("[40.0, 41.0, 42.0]", "[40.0, 41.0, 42.0, 95.0]", "(80.0, 100.0)"),
        ),
        (
            "a single point where both laws are continuous",
            _attack("[1.0, 5.0, 9.0]", "[1.0, 5.0, 8.0]", "(5.0, 5.0)"),
        ),
    ],
    "smooth_sensitivity": [
        ("the median's rank whatever r (dplib's median formula)", _smooth(m="(n + 1) // 2")),
        ("the local sensitivity (k = 0 only)", _smooth(only_local=True)),
        ("distances cut at k = 20", _smooth(last_k="20")),
        ("the discount e^{-beta (k + 1)}", _smooth(discount="k + 1")),
        ("distances up to n - 1 only", _smooth(last_k="n - 1")),
    ],
    "ptr_median": [
        (
            "the distance to instability one too large (shows once epsilon > 2 ln 2; issue 50)",
            _ptr(gamma_plus="1"),
        ),
        (
            "the average of the two middle values for even n (issue 50)",
            _ptr(median="(0.5 * (v[(n - 1) // 2] + v[n // 2]) if n else lower)"),
        ),
        ("delta forgotten: threshold 0", _ptr(threshold="0.0")),
        (
            "the textbook threshold ln(1/delta)/eps0 (dplib's, read in help()): valid, not the smallest",
            _ptr(threshold="math.log(1.0 / delta) / eps0"),
        ),
        ("the whole epsilon on the test and on the release", _ptr(eps0="epsilon")),
        ("release noise scaled to the local sensitivity", _ptr(release_scale="a_k(0) / eps0")),
        ("release noise of scale bound / epsilon", _ptr(release_scale="bound / epsilon")),
    ],
    "sample_and_aggregate": [
        (
            "a block per row, not per person: a person's visits spread over several blocks (issue 50)",
            _sa(
                blocks_of="[x[w == j] for w in [rng.integers(0, blocks, size=x.size)] for j in range(blocks)]"
            ),
        ),
        (
            "contiguous blocks by position (np.array_split): removing the first person shifts every "
            "block (issue 50)",
            _sa(blocks_of="np.array_split(x, blocks)"),
        ),
        (
            "the block values' median with the add/remove sensitivity",
            _sa(blocks_of=_DISJOINT, relation="add_remove"),
        ),
        (
            "overlapping blocks: a bootstrap resample per block",
            _sa(blocks_of="[rng.choice(x, size=x.size) if x.size else x for j in range(blocks)]"),
        ),
        ("no split: the whole table in every block", _sa(blocks_of="[x for j in range(blocks)]")),
        ("an empty block's np.std (NaN) passed on", _sa(blocks_of=_DISJOINT, empty="np.std(b)")),
    ],
    "lower_bound": [
        (
            "the marginals' 2^k tables for the histogram (dplib's bound, read in help())",
            _bound("(k * math.log(2.0) + math.log(1.0 - beta)) / epsilon"),
        ),
        ("beta forgotten", _bound("math.log(k) / epsilon")),
        ("log2 for ln", _bound("(math.log2(k) + math.log2(1.0 - beta)) / epsilon")),
        ("a factor 2 too many", _bound("(math.log(k) + math.log(1.0 - beta)) / (2.0 * epsilon)")),
        (
            "one more than the ceiling of the sharper bound (more than the argument proves)",
            _bound("math.floor(math.log((k - 1) * (1 - beta) / beta) / epsilon) + 2"),
        ),
    ],
}

ALTERNATIVES = {
    "local_sensitivity_median": [
        """
def order_stat_local_sensitivity(x, r, k, lower, upper):
    v = sorted(min(max(float(a), lower), upper) for a in x)
    n = len(v)
    if n == 0:
        return 0.0
    m = int(r)

    def at(i):  # the padded order statistic x_i
        return lower if i <= 0 else upper if i > n else v[i - 1]

    k = min(int(k), n + 1)
    return float(max(at(m + t) - at(m + t - k - 1) for t in range(k + 2)))
""",
        """
def order_stat_local_sensitivity(x, r, k, lower, upper):
    v = np.sort(np.clip(np.asarray(x, dtype=float), lower, upper))
    n = v.size
    if n == 0:
        return 0.0
    m = int(r)
    p = np.concatenate(([lower], v, [upper]))
    # pairs i <= m <= j, j - i = k + 1, inside the padded list
    i = np.arange(max(m - int(k) - 1, 0), m + 1)
    j = np.minimum(i + int(k) + 1, n + 1)
    keep = j >= m
    return float(np.max(p[j[keep]] - p[i[keep]]))
""",
    ],
    "local_sensitivity_attack": [
        _attack("[0.0, 1.0, 2.0]", "[0.0, 1.0, 100.0]", "(50.0, 100.0)"),
        # a tail witness: Laplace(1) against Laplace(50), both around 50
        _attack("[49.0, 50.0, 51.0]", "[49.0, 50.0, 100.0]", "(90.0, 100.0)"),
    ],
    "smooth_sensitivity": [
        """
def smooth_sensitivity(x, r, beta, lower, upper):
    v = np.sort(np.clip(np.asarray(x, dtype=float), lower, upper))
    n = v.size
    if n == 0:
        return float(upper - lower)
    m = int(r)
    p = np.concatenate(([lower], v, [upper]))
    best = 0.0
    for i in range(0, m + 1):  # pairs i <= m <= j: (x_j - x_i) e^{-beta (j - i - 1)}
        j = np.arange(max(m, i + 1), n + 2)
        best = max(best, float(np.max((p[j] - p[i]) * np.exp(-beta * (j - i - 1)))))
    return best
""",
        """
def smooth_sensitivity(x, r, beta, lower, upper):
    v = sorted(min(max(float(a), lower), upper) for a in x)
    n = len(v)
    if n == 0:
        return float(upper - lower)
    m = int(r)
    p = [lower] + v + [upper]
    return float(max(
        math.exp(-beta * k) * max(p[min(m + t, n + 1)] - p[max(m + t - k - 1, 0)] for t in range(k + 2))
        for k in range(n + 1)
    ))
""",
    ],
    "ptr_median": [
        """
def my_ptr_median(x, lower, upper, bound, epsilon, delta, rng):
    rng.random({burn})
    v = np.sort(np.clip(np.asarray(x, dtype=float), lower, upper))
    n = v.size
    m = (n + 1) // 2
    p = np.concatenate(([lower], v, [upper]))

    def unstable(k):
        if n == 0:
            return False
        t = np.arange(min(k, n + 1) + 2)
        return np.max(p[np.minimum(m + t, n + 1)] - p[np.maximum(m + t - k - 1, 0)]) > bound

    lo, hi = 0, n + 1  # binary search: the first k with A^(k) > bound
    while lo < hi:
        mid = (lo + hi) // 2
        if unstable(mid):
            hi = mid
        else:
            lo = mid + 1
    half = epsilon / 2
    if lo + rng.laplace(scale=1 / half) > -math.log(2 * delta) / half:
        return float(p[m] + rng.laplace(scale=bound / half))
    return None
""",
        """
def my_ptr_median(x, lower, upper, bound, epsilon, delta, rng):
    rng.random({burn})
    v = np.sort(np.clip(np.asarray(x, dtype=float), lower, upper))
    n = v.size
    gamma = 0
    while gamma <= n and order_stat_local_sensitivity(v, (n + 1) // 2, gamma, lower, upper) <= bound:
        gamma += 1
    eps0 = epsilon / 2
    # the distance is an integer: discrete Laplace noise for the test; its tail P[Z > j] is
    # q^(j + 1) / (1 + q), q = e^-eps0: the smallest integer threshold whose tail is <= delta
    q = math.exp(-eps0)
    threshold = max(0, math.ceil(math.log(delta * (1 + q)) / math.log(q) - 1 - 1e-12))
    if dplib.discrete_laplace_mechanism(gamma, 1, eps0, rng=rng) <= threshold:
        return None
    median = lower if n == 0 else float(v[(n + 1) // 2 - 1])
    return median + float(rng.laplace(0.0, bound / eps0))
""",
    ],
    "sample_and_aggregate": [
        """
def my_sample_and_aggregate_std(users, x, lower, upper, epsilon, blocks, grid, rng):
    rng.random({burn})
    x = np.asarray(x, dtype=float)
    block_of = {}
    spreads = []
    for u in np.asarray(users).tolist():       # a block drawn for each person, at first sight
        if u not in block_of:
            block_of[u] = int(rng.integers(blocks))
    label = np.array([block_of[u] for u in np.asarray(users).tolist()], dtype=int)
    for j in range(blocks):
        block = x[label == j]
        spreads.append(lower if len(block) == 0 else min(max(float(np.std(block)), lower), upper))
    return float(private_median(spreads, lower, upper, epsilon, grid=grid, neighbouring="replace", rng=rng))
""",
        """
def my_sample_and_aggregate_std(users, x, lower, upper, epsilon, blocks, grid, rng):
    # a fixed function of the person's own id: adding or removing a person moves no one else
    label = np.asarray(users, dtype=np.int64) % blocks
    x = np.asarray(x, dtype=float)
    count = np.bincount(label, minlength=blocks)
    mean = np.bincount(label, weights=x, minlength=blocks) / np.maximum(count, 1)
    second = np.bincount(label, weights=(x - mean[label]) ** 2, minlength=blocks) / np.maximum(count, 1)
    values = np.where(count > 0, np.sqrt(np.maximum(second, 0.0)), lower)
    return float(private_median(np.clip(values, lower, upper), lower, upper, epsilon, grid=grid,
                                neighbouring="replace", rng=rng))
""",
    ],
    "lower_bound": [
        """
def histogram_min_rows(k, epsilon, beta):
    # k disjoint boxes, each with probability >= (1 - beta) e^{-epsilon n} under D_1
    n = math.log(k * (1 - beta)) / epsilon
    return n if n > 0 else 0.0
""",
        """
def histogram_min_rows(k, epsilon, beta):
    # issue 50: the sharper count (D_1's own box apart), rounded up since n is an integer
    n = (math.log(k - 1) + math.log((1 - beta) / beta)) / epsilon
    return float(max(0, math.ceil(n)))
""",
    ],
}

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
