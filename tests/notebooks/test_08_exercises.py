"""Notebook 08's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every new or rewritten exercise of ``solutions/08_dp_in_practice``
(the noisy geography, the consistent children, the tree of noisy counts and its range queries,
whose derivations now come after the exercise; the noisy aggregation error and the data-aware
view, HDPView-style; the private characteristic-function sketch and the mixture's characteristic
function, PEARL-style; the witness against data-dependent clamping bounds, issue 39, whose
hidden test decides every witness exactly; issue 40: the sensitivity of a capped per-key sum, the private
cap on rows per user checked seed for seed against dplib; issue 50, item 9: the private cap on rows per (user, key), one value per user (their largest count in
one key), seed for seed against dplib.private_quantiles (dplib's private_rows_cap hands over rows per user);
the capped sum's sensitivities with a cap on each user's total too (dplib hands
over m r B and sqrt(m) r B), against the test's enumeration of the change's vertices;
the fewest signed nodes for a range (dplib hands over the greedy cover of additions),
sizes against a brute force over signed node sets and the test's own recursion;
the tree of noisy counts under replace-one (the root public, 2h/epsilon below it;
dplib hands over add/remove's (h + 1)/epsilon), its scale from a brute-force sensitivity in the test;
the consistent children under weighted least squares (one variance per child;
dplib hands over the equal-variance projection), judged against the KKT point computed in the test;
the threshold of
partition selection on weighted counts (Gopi et al. 2020; dplib hands over the Laplace rule's), whose
delta for the worst user the hidden test computes itself), three or more plausible wrong answers (a wrong noise scale, epsilon
vs epsilon/2, a budget spent twice, variance vs standard deviation, a NaN accepted where the
contract says raise, an add/remove sensitivity where the relation is replace-one, an L1 bound
where L2 is asked, a special case that fits only the visible inputs...) are handed in and graded
by the real trusted grader (:func:`coursetools.grading.grade.grade_job`, as ``tests/coursetools/authoring/test_release.py``
grades the solution); each must score 0 on its exercise. Two correct alternatives per exercise,
written differently from the solution, must get full marks under five seeds: a correct answer's
random draws are shifted by burning ``s`` draws of its generator first (``s = 0..4``), which
changes every random outcome the hidden tests see.

To keep the runtime modest the graded notebook is the course notebook without its figures and
experiments (markdown, the setup cell, the two locked helpers the answers use, every answer and
every test cell are kept; the same cells are removed from the source, the release and the
submission), and one submission carries the i-th wrong answer of *every* exercise at once: the
exercises' tests are independent (a wrong ``data_aware_view`` carries its own correct noisy
aggregation error, so that the exercise it depends on stays right). So 6 wrong submissions and
10 correct ones are graded, two at a time.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "08_dp_in_practice"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "noisy_geography": "noisy_geography_tests",
    "consistent_children": "consistent_children_tests",
    "tree_release": "tree_release_tests",
    "tree_range_query": "tree_range_query_tests",
    "noisy_aggregation_error": "noisy_aggregation_error_tests",
    "data_aware_view": "data_aware_view_tests",
    "cf_sketch": "cf_sketch_tests",
    "mixture_cf": "mixture_cf_tests",
    "sample_chain": "sample_chain_tests",
    "fp_attack": "fp_attack_tests",
    "audit_vendor": "audit_vendor_tests",
    "counterexample_autobound": "counterexample_autobound_tests",
    "contribution_capped_sum": "contribution_capped_sum_tests",
    "contribution_rows_cap": "contribution_rows_cap_tests",
    "partition_laplace_threshold": "partition_laplace_threshold_tests",
}
#: code cells without a grade_id that answers use (textbook_laplace, the vendor): kept
KEPT_CODE = {"nb08-038", "nb08-046"}

# ------------------------------------------------------------------------------ wrong answers


def _geography(
    scale: str, county_noise: str = "rng.laplace(0.0, scale, size=counties.size)"
) -> str:
    return f"""
def noisy_geography(block_counts, county_of_block, epsilon, rng):
    blocks = np.asarray(block_counts, dtype=float)
    cob = np.asarray(county_of_block)
    counties = np.bincount(cob, weights=blocks)
    scale = {scale}
    block_noise = rng.laplace(0.0, scale, size=blocks.size)
    county_noise = {county_noise}
    return float(blocks.sum() + rng.laplace(0.0, scale)), counties + county_noise, blocks + block_noise
"""


def _children(body: str) -> str:
    return f"""
def _simplex(y, t):
    # the equal-variance projection (Duchi et al.), help(dplib.views.hierarchy.project_to_total)
    u = np.sort(y)[::-1]
    excess = np.cumsum(u) - t
    j = np.arange(1, u.size + 1)
    keep = np.nonzero(u - excess / j > 0)[0][-1]
    return np.maximum(y - excess[keep] / (keep + 1), 0.0)


def _weighted(y, w, t):
    # x = max(y - tau w, 0) with sum(x) = t, by bisection then an exact solve on the positive set
    lo, hi = float(np.min((y - t) / w)) - 1.0, float(np.max(y / w))
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if np.maximum(y - mid * w, 0).sum() > t else (lo, mid)
    on = y - hi * w > 0
    return np.maximum(y - (y[on].sum() - t) / w[on].sum() * w, 0.0)


def consistent_children(noisy_children, variances, parent_total):
    y = np.asarray(noisy_children, dtype=float)
    v = np.asarray(variances, dtype=float)
    t = float(parent_total)
    if t <= 0:
        return np.zeros_like(y)
{body}
"""


def _tree(
    scale: str, consistent: bool = False, root_exact: bool = True, draw: str = "rng.laplace"
) -> str:
    noise = (
        (
            "leaves = exact[0] + rng.laplace(0.0, scale, size=exact[0].size)\n"
            "    out = [leaves]\n"
            "    while out[-1].size > 1:\n"
            "        out.append(out[-1].reshape(-1, branching).sum(axis=1))\n"
            "    out = out[::-1]\n"
            "    out[0] = exact[-1].copy()\n"
            "    return out"
        )
        if consistent
        else "tree = [lv + {draw}(0.0, scale, size=lv.size) for lv in exact[::-1]]\n"
        "    if {root_exact}:\n"
        "        tree[0] = exact[-1].copy()\n"
        "    return tree"
    ).format(draw=draw, root_exact=root_exact)
    return f"""
def tree_release(hist, epsilon, branching, rng):
    level = np.asarray(hist, dtype=float)
    exact = [level]
    while level.size > 1:
        level = level.reshape(-1, branching).sum(axis=1)
        exact.append(level)
    levels = len(exact)
    h = levels - 1
    scale = {scale}
    {noise}
"""


_GREEDY = """
def greedy(lo, hi, height, branching, sign=1, level=0, index=0):
    # help(range_decomposition): a node inside the range whole, a node cut by it replaced by its children
    width = branching ** (height - level)
    start, stop = index * width, (index + 1) * width
    if stop <= lo or start >= hi or hi <= lo:
        return []
    if lo <= start and stop <= hi:
        return [(level, index, sign)]
    return [t for j in range(branching) for t in greedy(lo, hi, height, branching, sign, level + 1, branching * index + j)]
"""

_SIGNED = """
def signed_cover(lo, hi, height, branching):
    def cheapest(level, index, u):
        width = branching ** (height - level)
        start, stop = index * width, (index + 1) * width
        overlap = max(0, min(stop, hi) - max(start, lo))
        if overlap in (0, width):
            value = (1 if overlap else 0) - u
            return [] if value == 0 else [(level, index, {leaf_sign})]
        kids = [(level + 1, branching * index + j) for j in range(branching)]
        without = [t for lv, i in kids for t in cheapest(lv, i, u)]
        take = [(level, index, {node_sign})] + [t for lv, i in kids for t in cheapest(lv, i, 1 - u)]
        return without if {prefer} else take

    return cheapest(0, 0, 0) if hi > lo else []
"""


def _signed(
    leaf_sign: str = "value",
    node_sign: str = "1 - 2 * u",
    prefer: str = "len(without) <= len(take)",
) -> str:
    return _SIGNED.format(leaf_sign=leaf_sign, node_sign=node_sign, prefer=prefer)


_CHECK_AE = """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError("epsilon")
    x = np.asarray(block, dtype=float)
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("block")"""


def _ae(
    statistic: str = "np.abs(x - x.mean()).sum()", scale: str = "2.0 / epsilon", check: bool = True
) -> str:
    head = (
        _CHECK_AE
        if check
        else _CHECK_AE.split("\n    x = ")[0] + "\n    x = np.asarray(block, dtype=float)"
    )
    return f"""
def noisy_aggregation_error(block, epsilon, rng):{head}
    return float({statistic}) + float(rng.laplace(0.0, {scale}))
"""


def _view(
    *,
    decision_eps: str = "epsilon / 2 / max_depth",
    theta: str = "2.0 / epsilon",
    count_scale: str = "2.0 / epsilon",
    noisy: bool = True,
    check: bool = True,
) -> str:
    checks = """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError("epsilon")
    if isinstance(max_depth, bool) or not isinstance(max_depth, (int, np.integer)) or max_depth < 1:
        raise ValueError("max_depth")""" + (
        """
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError("table")"""
        if check
        else ""
    )
    decide = (
        "_own_noisy_ae(cells, eps_decision, rng)"
        if noisy
        else "float(np.abs(cells - cells.mean()).sum())"
    )
    return f"""
def _own_noisy_ae(cells, eps, rng):
    return float(np.abs(cells - cells.mean()).sum()) + float(rng.laplace(0.0, 2.0 / eps))


def data_aware_view(table, epsilon, max_depth, rng):
    table = np.asarray(table, dtype=float){checks}
    eps_decision = {decision_eps}
    theta = {theta}
    todo, blocks = [((0, table.shape[0]), (0, table.shape[1]), 0)], []
    while todo:
        (r0, r1), (c0, c1), depth = todo.pop(0)
        cells = table[r0:r1, c0:c1]
        if depth < max_depth and cells.size > 1 and {decide} > theta:
            if r1 - r0 >= c1 - c0:
                mid = r0 + (r1 - r0) // 2
                todo += [((r0, mid), (c0, c1), depth + 1), ((mid, r1), (c0, c1), depth + 1)]
            else:
                mid = c0 + (c1 - c0) // 2
                todo += [((r0, r1), (c0, mid), depth + 1), ((r0, r1), (mid, c1), depth + 1)]
        else:
            blocks.append(((r0, r1), (c0, c1)))
    estimate = np.empty_like(table)
    for (r0, r1), (c0, c1) in blocks:
        value = table[r0:r1, c0:c1].sum() + rng.laplace(0.0, {count_scale})
        estimate[r0:r1, c0:c1] = value / ((r1 - r0) * (c1 - c0))
    return estimate, blocks
"""


def _sketch(
    *,
    sigma: str = "gaussian_sigma(2.0 * math.sqrt(k) / n, epsilon, delta)",
    mean: str = "mean",
    check: bool = True,
) -> str:
    checks = (
        """
    if X.ndim != 2 or X.shape[0] == 0 or not np.all(np.isfinite(X)) or not np.all(np.isfinite(W)):
        raise ValueError("X")"""
        if check
        else ""
    )
    return f"""
def cf_sketch(X, freqs, epsilon, delta, rng):
    X = np.asarray(X, dtype=float)
    W = np.asarray(freqs, dtype=float){checks}
    n, k = X.shape[0], W.shape[0]
    proj = X @ W.T
    exact = np.concatenate([np.cos(proj).{mean}(axis=0), np.sin(proj).{mean}(axis=0)])
    sigma = {sigma}
    return exact + rng.normal(0.0, sigma, size=2 * k)
"""


def _mixture(
    *, damp: str = "np.exp(-0.5 * (W**2) @ (s**2).T)", sign: str = "", check: bool = True
) -> str:
    checks = (
        """
    if not all(np.all(np.isfinite(a)) for a in (W, w, mu, s)) or mu.shape != (w.size, W.shape[1]) or s.shape != mu.shape:
        raise ValueError("shapes")
    if np.any(w < 0) or abs(w.sum() - 1.0) > 1e-9 or np.any(s < 0):
        raise ValueError("weights or stds")"""
        if check
        else ""
    )
    return f"""
def mixture_cf(freqs, weights, means, stds):
    W, w = np.asarray(freqs, dtype=float), np.asarray(weights, dtype=float)
    mu, s = np.asarray(means, dtype=float), np.asarray(stds, dtype=float){checks}
    damp = {damp}
    phase = W @ mu.T
    return np.concatenate([(damp * np.cos(phase)) @ w, {sign}(damp * np.sin(phase)) @ w])
"""


def _chain(
    p_c: str,
    pick_c: str = "np.array([rng.choice(kc, p=p_c[bi]) for bi in b])",
    fallback: bool = True,
) -> str:
    ab_default = "np.full(ab.shape, 1.0 / ab.size)" if fallback else "ab / ab.sum()"
    return f"""
def sample_chain(ab_counts, bc_counts, n, rng):
    ab = np.maximum(np.asarray(ab_counts, dtype=float), 0.0)
    bc = np.maximum(np.asarray(bc_counts, dtype=float), 0.0)
    ka, kb = ab.shape
    kc = bc.shape[1]
    p_ab = ab / ab.sum() if ab.sum() > 0 else {ab_default}
    p_c = {p_c}
    cell = rng.choice(ab.size, size=n, p=p_ab.ravel())
    a, b = cell // kb, cell % kb
    c = {pick_c}
    return np.stack([a, b, c], axis=1).astype(int)
"""


_ROWS = (
    "np.where(bc.sum(axis=1, keepdims=True) > 0, bc / np.maximum(bc.sum(axis=1, keepdims=True), 1e-300), "
    "1.0 / bc.shape[1])"
)


def _fp(
    *,
    around: str = "range(k0 - 2, k0 + 3)",
    equal: str = "out == y",
    guess: str = "0 if from_0 and not from_1 else 1 if from_1 and not from_0 else int(y > 0.5)",
) -> str:
    return f"""
def could_output(y, x, scale):
    noise = y - x
    for low in (True, False):
        if low and noise > 0 or not low and noise < 0:
            continue
        u0 = math.exp(noise / scale) / 2 if low else 1 - math.exp(-noise / scale) / 2
        k0 = round(u0 * 2.0**53)
        for k in {around}:
            u = k * 2.0**-53
            if not 0.0 < u < 1.0 or (u < 0.5) != low:
                continue
            out = x + scale * math.log(u + u) if u < 0.5 else x - scale * math.log(2.0 - u - u)
            if {equal}:
                return True
    return False


def guess_input(y, scale):
    from_0, from_1 = could_output(y, 0.0, scale), could_output(y, 1.0, scale)
    return {guess}
"""


def _audit(neighbours: str, call: str) -> str:
    return f"""
def vendor_neighbours():
    return {neighbours}


def audit_vendor(a, b, n_samples, rng):
    def mech(x, rng, size):
        return vendor_private_mean(x, CLAIMED_EPSILON, rng=rng, size=size)

    return float({call}.epsilon_lower_bound)
"""


_AUDIT_CALL = (
    "audit_mechanism(mech, a, b, CLAIMED_EPSILON, n_samples=n_samples, vectorized=True, rng=rng)"
)
_WORST = "[0.0] * 10, [200_000.0] + [0.0] * 9"


def _capped(l1: str, l2: str, check_nan: bool = True) -> str:
    nan = "math.isnan(user_total) or " if check_nan else ""
    return f"""
def capped_sum_sensitivity(max_partitions, max_rows, value_bound, user_total):
    for cap in (max_partitions, max_rows):
        if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
            raise ValueError("caps")
    if not math.isfinite(value_bound) or value_bound < 0:
        raise ValueError("value_bound")
    if {nan}user_total < 0:
        raise ValueError("user_total")
    m, r, b, c = int(max_partitions), int(max_rows), float(value_bound), float(user_total)
    k = m if not c < m * r * b else (math.floor(c / (r * b)) if r * b > 0 else 0)
    rest = min(r * b, c - k * r * b) if k < m else 0.0
    return float({l1}), float({l2})
"""


_L1 = "min(m * r * b, c)"


def _cap(call: str) -> str:
    return f"""
def rows_cap(user_ids, keys, epsilon, rng):
    user_ids, keys = np.asarray(user_ids), np.asarray(keys)
    if user_ids.shape != keys.shape or not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError("bad input")
    _, users = np.unique(user_ids, return_inverse=True)
    _, kidx = np.unique(keys, return_inverse=True)
    pairs, per_pair = np.unique(np.stack([users, kidx]), axis=1, return_counts=True)
    largest = np.zeros(users.max() + 1)
    np.maximum.at(largest, pairs[0], per_pair)
    smallest = np.full(users.max() + 1, np.inf)
    np.minimum.at(smallest, pairs[0], per_pair)
    total = np.bincount(users).astype(float)
    mean = total / np.bincount(pairs[0])
    return int({call})
"""


def _pq(
    values: str, level: str = "0.9", grid: str = "np.arange(1, 101)", eps: str = "epsilon"
) -> str:
    lower = "0" if "0, 101" in grid else "1"
    return f"dplib.private_quantiles({values}, [{level}], {lower}, 100, {eps}, grid={grid}, rng=rng)[0]"


def _weighted(
    *,
    term: str = "some(tail(t - 1.0 / j, 1.0 / epsilon), j)",
    keys: str = "range(1, m + 1)",
    check: str = "not math.isfinite(epsilon) or epsilon <= 0",
) -> str:
    return f"""
def tail(k, s):
    # P(Z >= k) for Z continuous Laplace of scale s
    return 0.5 * math.exp(-k / s) if k >= 0 else 1 - 0.5 * math.exp(k / s)


def some(p, j):
    # the probability that at least one of j independent keys, each kept with probability p, appears
    return -math.expm1(j * math.log1p(-p)) if p < 1 else 1.0


def discrete_tail(k, s):
    # P(Z >= k) for Z discrete Laplace of scale s (k real: the integers from ceil(k))
    q, k = math.exp(-1.0 / s), math.ceil(k)
    return q**k / (1 + q) if k >= 0 else 1 - q ** (1 - k) / (1 + q)


def weighted_delta(threshold, epsilon, max_partitions):
    if {check}:
        raise ValueError("epsilon")
    if isinstance(max_partitions, bool) or not isinstance(max_partitions, (int, np.integer)) or max_partitions < 1:
        raise ValueError("max_partitions")
    if not math.isfinite(threshold):
        raise ValueError("threshold")
    t, m = float(threshold), int(max_partitions)
    return float(max([{term} for j in {keys}], default=0.0))


def weighted_threshold(epsilon, delta, max_partitions):
    if not 0 < delta < 1:
        raise ValueError("delta")
    weighted_delta(0.0, epsilon, max_partitions)
    lo, hi = -200.0 / epsilon - 10, 400.0 * max_partitions / epsilon + 10
    for _ in range(300):                              # bisection: delta(t) falls with t
        mid = (lo + hi) / 2
        if weighted_delta(mid, epsilon, max_partitions) <= delta:
            hi = mid
        else:
            lo = mid
    return float(hi)
"""


#: grade_id -> [(what is wrong, the answer cell's source)]
WRONG = {
    "noisy_geography": [
        ("no budget split: Lap(1/epsilon) on every level", _geography("1.0 / epsilon")),
        ("state treated as free: Lap(2/epsilon)", _geography("2.0 / epsilon")),
        (
            "county noise = the sum of its blocks' noise",
            _geography(
                "3.0 / epsilon", "np.bincount(cob, weights=block_noise, minlength=counties.size)"
            ),
        ),
    ],
    "consistent_children": [
        (
            "the variances ignored: help(project_to_total)'s projection (the old answer)",
            _children("    return _simplex(y, t)"),
        ),
        (
            "the weights inverted: max(y - tau / v, 0)",
            _children("    return _weighted(y, 1.0 / v, t)"),
        ),
        (
            "standard deviations for variances: max(y - tau sqrt(v), 0)",
            _children("    return _weighted(y, np.sqrt(v), t)"),
        ),
        (
            "clip at 0, then scale proportionally",
            _children(
                "    x = np.maximum(y, 0.0)\n    return x * t / x.sum() if x.sum() > 0 else np.full_like(y, t / y.size)"
            ),
        ),
        (
            "one shift proportional to v, then clip (no re-solve)",
            _children("    return np.maximum(y - (y.sum() - t) / v.sum() * v, 0.0)"),
        ),
        (
            "the children sorted by y, not by y / v",
            _children(
                "    order = np.argsort(-y)\n    ys, vs = y[order], v[order]\n"
                "    tau = (np.cumsum(ys) - t) / np.cumsum(vs)\n    keep = np.nonzero(ys / vs > tau)[0][-1]\n"
                "    return np.maximum(y - tau[keep] * v, 0.0)"
            ),
        ),
    ],
    "tree_release": [
        (
            "help(hierarchical_histogram)'s add/remove tree: Lap((h + 1)/epsilon) on every node (the old answer)",
            _tree("levels / epsilon", root_exact=False),
        ),
        ("the add/remove scale (h + 1)/epsilon below an exact root", _tree("levels / epsilon")),
        ("2 (h + 1)/epsilon: the root counted too", _tree("2 * levels / epsilon")),
        ("h/epsilon: a replacement counted as one change per level", _tree("h / epsilon")),
        ("2/epsilon: one level's sensitivity for the whole tree", _tree("2.0 / epsilon")),
        (
            "noisy leaves summed up (a consistent tree, correlated noise)",
            _tree("2 * h / epsilon", consistent=True),
        ),
        (
            "rng ignored: numpy's global generator",
            _tree("2 * h / epsilon", draw="np.random.laplace"),
        ),
    ],
    "tree_range_query": [
        (
            "help(range_decomposition)'s greedy cover, additions only (the old answer)",
            _GREEDY
            + "\n\ndef signed_cover(lo, hi, height, branching):\n    return greedy(lo, hi, height, branching)\n",
        ),
        (
            "the complement taken at the root only",
            _GREEDY
            + """

def signed_cover(lo, hi, height, branching):
    plain = greedy(lo, hi, height, branching)
    if hi <= lo:
        return plain
    outside = greedy(0, lo, height, branching, -1) + greedy(hi, branching**height, height, branching, -1)
    return plain if len(plain) <= 1 + len(outside) else [(0, 0, 1)] + outside
""",
        ),
        ("every sign +1", _signed(leaf_sign="1", node_sign="1")),
        (
            "a node taken whole whenever the range covers more than half of it",
            _signed(prefer="2 * max(0, min(start + width, hi) - max(start, lo)) <= width"),
        ),
        (
            "the closed range [lo, hi]",
            _signed().replace(
                "overlap = max(0, min(stop, hi) - max(start, lo))",
                "overlap = max(0, min(stop, hi + 1) - max(start, lo))",
            ),
        ),
        (
            "levels counted from the leaves",
            _signed().replace(
                "return cheapest(0, 0, 0) if hi > lo else []",
                "return [(height - l, i, s) for l, i, s in cheapest(0, 0, 0)] if hi > lo else []",
            ),
        ),
    ],
    "noisy_aggregation_error": [
        ("sensitivity 1 (the mean's move forgotten)", _ae(scale="1.0 / epsilon")),
        ("NaN and negative counts accepted", _ae(check=False)),
        ("squared deviations (a variance-like AE)", _ae(statistic="((x - x.mean()) ** 2).sum()")),
        ("epsilon / 2: scale 4 / epsilon", _ae(scale="4.0 / epsilon")),
        ("a mean's sensitivity 2 / m", _ae(scale="2.0 / (x.size * epsilon)")),
    ],
    "data_aware_view": [
        ("budget spent twice: counts at the whole epsilon", _view(count_scale="1.0 / epsilon")),
        ("every decision at epsilon / 2 (depths not composed)", _view(decision_eps="epsilon / 2")),
        ("theta = 1 / epsilon (the count noise of the whole budget)", _view(theta="1.0 / epsilon")),
        ("decisions on the exact AE (no noise)", _view(noisy=False)),
        ("NaN and negative counts accepted", _view(check=False)),
        ("theta = the noise's standard deviation", _view(theta="math.sqrt(2) * 2.0 / epsilon")),
    ],
    "cf_sketch": [
        (
            "add/remove sensitivity sqrt(k) / n",
            _sketch(sigma="gaussian_sigma(math.sqrt(k) / n, epsilon, delta)"),
        ),
        (
            "L1 bound 2k / n used as the L2 sensitivity",
            _sketch(sigma="gaussian_sigma(2.0 * k / n, epsilon, delta)"),
        ),
        (
            "variance passed as the standard deviation",
            _sketch(sigma="gaussian_sigma(2.0 * math.sqrt(k) / n, epsilon, delta) ** 2"),
        ),
        ("NaN in X accepted", _sketch(check=False)),
        (
            "epsilon / 2 (cos and sin each charged)",
            _sketch(sigma="gaussian_sigma(2.0 * math.sqrt(k) / n, epsilon / 2, delta)"),
        ),
        (
            "sums instead of means",
            _sketch(mean="sum", sigma="gaussian_sigma(2.0 * math.sqrt(k), epsilon, delta)"),
        ),
    ],
    "mixture_cf": [
        (
            "std where the variance goes: exp(-w^2 s / 2)",
            _mixture(damp="np.exp(-0.5 * (W**2) @ s.T)"),
        ),
        ("the 1/2 dropped", _mixture(damp="np.exp(-(W**2) @ (s**2).T)")),
        ("conjugate: minus sign on the imaginary part", _mixture(sign="-")),
        (
            "(omega . s)^2: right only for one-dimensional frequencies",
            _mixture(damp="np.exp(-0.5 * (W @ s.T) ** 2)"),
        ),
        ("weights not checked", _mixture(check=False)),
    ],
    "sample_chain": [
        ("the (B, C) table normalised as a whole, not row by row", _chain("bc / bc.sum()")),
        (
            "c drawn from the marginal of C, ignoring the record's b",
            _chain(_ROWS, pick_c="rng.choice(kc, size=n, p=bc.sum(axis=0) / bc.sum())"),
        ),
        ("no uniform fallback for an all-zero (A, B) table", _chain(_ROWS, fallback=False)),
    ],
    "fp_attack": [
        ("only the rounded k tried (the inversion is off by a few units)", _fp(around="(k0,)")),
        ("outputs compared approximately", _fp(equal="abs(out - y) <= 1e-12 * max(1.0, abs(y))")),
        ("guess from the value only", _fp(guess="int(y > 0.5)")),
    ],
    "audit_vendor": [
        (
            "a small replacement (0 -> 50 000): the audit sees nothing",
            _audit("[0.0] * 10, [50_000.0] + [0.0] * 9", _AUDIT_CALL),
        ),
        ("rng ignored: a fixed seed", _audit(_WORST, _AUDIT_CALL.replace("rng=rng", "rng=0"))),
        (
            "another confidence than the one asked (1 - 1e-6)",
            _audit(_WORST, _AUDIT_CALL.replace("rng=rng)", "confidence=1 - 1e-6, rng=rng)")),
        ),
    ],
    "counterexample_autobound": [
        (
            "the roles swapped: the event is likelier on x_prime",
            "\ndef autobound_witness():\n    return [30, 30, 31], [30, 30, 30], {90}\n",
        ),
        (
            "add/remove instead of replace-one (one person fewer)",
            "\ndef autobound_witness():\n    return [30, 30, 30], [30, 30], {90}\n",
        ),
        (
            "two ages changed: not neighbours",
            "\ndef autobound_witness():\n    return [0, 0, 0], [0, 120, 120], {0}\n",
        ),
        (
            "the same range on both sides: ratio e^(1/100) <= e",
            "\ndef autobound_witness():\n    return [0, 50, 100], [0, 51, 100], {150}\n",
        ),
        (
            "an event impossible on both sides",
            "\ndef autobound_witness():\n    return [7], [8], {100}\n",
        ),
        (
            "an age outside the public domain 0..120",
            "\ndef autobound_witness():\n    return [0, 0, 1000], [0, 0, 0], {1000}\n",
        ),
    ],
    "contribution_capped_sum": [
        (
            "help(dplib.contribution_sensitivity)'s pair, the total cap ignored (the old answer)",
            _capped("m * r * b", "math.sqrt(m) * r * b"),
        ),
        ("L2 = min(sqrt(m) r B, C)", _capped(_L1, "min(math.sqrt(m) * r * b, c)")),
        (
            "L2 with the total spread evenly over the m keys",
            _capped(_L1, "math.sqrt(m) * min(r * b, c / m)"),
        ),
        ("L2 without the last, partly filled key", _capped(_L1, "math.sqrt(k) * r * b")),
        (
            "L2 = sqrt(L1 Linf), a bound that is not tight",
            _capped(_L1, "math.sqrt(min(m * r * b, c) * r * b)"),
        ),
        (
            "L2 with the last key filled up (ceil)",
            _capped(_L1, "math.sqrt(m if not c < m * r * b else math.ceil(c / (r * b))) * r * b"),
        ),
        (
            "NaN user_total accepted",
            _capped(_L1, "math.sqrt(k * (r * b) ** 2 + rest**2)", check_nan=False),
        ),
    ],
    "contribution_rows_cap": [
        (
            "help(dplib.private_rows_cap)'s value: rows per user in all keys (the old answer)",
            _cap(_pq("total")),
        ),
        ("one value per (user, key) pair: private for pairs, not users", _cap(_pq("per_pair"))),
        ("each user's smallest rows in one key", _cap(_pq("smallest"))),
        ("each user's mean rows per key", _cap(_pq("mean"))),
        (
            "candidates 0..100 (a cap of 0 rows allowed)",
            _cap(_pq("largest", grid="np.arange(0, 101)")),
        ),
        ("half the budget (epsilon / 2)", _cap(_pq("largest", eps="epsilon / 2"))),
        (
            "the exact quantile, not private (rng ignored)",
            _cap("np.clip(np.ceil(np.quantile(largest, 0.9)), 1, 100)"),
        ),
    ],
    "partition_laplace_threshold": [
        (
            "help(dplib.partition_selection_delta)'s rule: counts of users, discrete noise of scale m / epsilon "
            "(the old answer)",
            _weighted(term="some(discrete_tail(t - 1, m / epsilon), m)", keys="[m]"),
        ),
        ("only a user with all m keys (weights 1 / m)", _weighted(keys="[m]")),
        ("only a user with one key (weight 1)", _weighted(keys="[1]")),
        ("j = m forgotten: range(1, m)", _weighted(keys="range(1, m)")),
        (
            "weights forgotten: m keys of weight 1",
            _weighted(term="some(tail(t - 1.0, 1.0 / epsilon), m)", keys="[m]"),
        ),
        (
            "the union bound j p taken as delta",
            _weighted(term="j * tail(t - 1.0 / j, 1.0 / epsilon)"),
        ),
        (
            "noise scale m / epsilon with the weights",
            _weighted(term="some(tail(t - 1.0 / j, m / epsilon), j)"),
        ),
        ("NaN epsilon accepted", _weighted(check="epsilon <= 0 or epsilon == math.inf")),
    ],
}

# ------------------------------------------------------------------------- correct alternatives

#: grade_id -> two correct answers written differently from the solution; "{burn}" draws that
#: shift every later random draw (the five seeds)
ALTERNATIVES = {
    "noisy_geography": [
        """
def noisy_geography(block_counts, county_of_block, epsilon, rng):
    rng.random({burn})
    b = np.array(block_counts, dtype=float)
    cob = np.asarray(county_of_block)
    c = np.array([b[cob == j].sum() for j in range(cob.max() + 1)])
    lap = lambda size: 3.0 / epsilon * (rng.exponential(size=size) - rng.exponential(size=size))
    return float(b.sum() + lap(None)), c + lap(c.size), b + lap(b.size)
""",
        """
def noisy_geography(block_counts, county_of_block, epsilon, rng):
    rng.random({burn})
    b = np.asarray(block_counts, dtype=float).copy()
    c = np.zeros(int(np.max(county_of_block)) + 1)
    np.add.at(c, np.asarray(county_of_block), b)
    scale = 1.0 / (epsilon / 3.0)
    state = float(b.sum()) + float(rng.laplace(0.0, scale))
    return state, np.array([v + rng.laplace(0.0, scale) for v in c]), np.array([v + rng.laplace(0.0, scale) for v in b])
""",
    ],
    "consistent_children": [
        """
def consistent_children(noisy_children, variances, parent_total):
    y = np.asarray(noisy_children, dtype=float)
    v = np.asarray(variances, dtype=float)
    if parent_total <= 0:
        return np.zeros(y.shape)
    lo, hi = np.min((y - parent_total) / v), np.max(y / v)   # sum(max(y - tau v, 0)) >= t at lo, 0 at hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.maximum(y - mid * v, 0.0).sum() > parent_total:
            lo = mid
        else:
            hi = mid
    x = np.maximum(y - (lo + hi) / 2 * v, 0.0)
    pos = x > 0
    x[pos] += (parent_total - x.sum()) * v[pos] / v[pos].sum()   # polish the sum along the same direction
    return x
""",
        """
def consistent_children(noisy_children, variances, parent_total):
    y = [float(a) for a in noisy_children]
    v = [float(b) for b in variances]
    if parent_total == 0:
        return np.zeros(len(y))
    active = set(range(len(y)))
    while True:                                    # drop the children the common tau would push below 0
        tau = (sum(y[i] for i in active) - parent_total) / sum(v[i] for i in active)
        out = {i for i in active if y[i] - tau * v[i] <= 0}
        if not out:
            break
        active -= out
    return np.array([y[i] - tau * v[i] if i in active else 0.0 for i in range(len(y))])
""",
    ],
    "tree_release": [
        """
def tree_release(hist, epsilon, branching, rng):
    rng.random({burn})
    leaves = np.array(hist, dtype=float)
    h = int(round(math.log(leaves.size, branching))) if leaves.size > 1 else 0
    out = [np.array([leaves.sum()])]                     # the panel's size, public
    for level in range(1, h + 1):
        exact = leaves.reshape(branching ** level, -1).sum(axis=1)
        out.append(exact + rng.laplace(0.0, 2 * h / epsilon, size=exact.size))   # two nodes per level move
    return out
""",
        """
def tree_release(hist, epsilon, branching, rng):
    rng.random({burn})
    levels = [np.asarray(hist, dtype=float)]
    while len(levels[0]) > 1:
        levels.insert(0, levels[0].reshape(-1, branching).sum(axis=1))
    b = 2 * (len(levels) - 1) / epsilon
    noisy = [lv + b * (rng.exponential(size=lv.size) - rng.exponential(size=lv.size)) for lv in levels[1:]]
    return [levels[0].copy()] + noisy
""",
    ],
    "tree_range_query": [
        """
from functools import lru_cache


def signed_cover(lo, hi, height, branching):
    if hi <= lo:
        return []

    @lru_cache(maxsize=None)
    def best(level, index, flip):
        # the target on this node: 1 on [lo, hi), 0 elsewhere, minus 1 everywhere when flip
        w = branching ** (height - level)
        a = max(index * w, lo)
        inside = max(0, min((index + 1) * w, hi) - a)
        if inside == 0 or inside == w:
            v = int(inside == w) - int(flip)
            return () if v == 0 else ((level, index, v),)
        kids = range(branching * index, branching * index + branching)
        skip = sum((best(level + 1, k, flip) for k in kids), ())
        whole = ((level, index, -1 if flip else 1),) + sum((best(level + 1, k, not flip) for k in kids), ())
        return whole if len(whole) < len(skip) else skip

    return list(best(0, 0, False))
""",
        """
def signed_cover(lo, hi, height, branching):
    def both(level, index):
        # (fewest nodes for 1 on the range, fewest for -1 off the range), restricted to this node's cells
        w = branching ** (height - level)
        s, e = index * w, index * w + w
        cut = max(0, min(e, hi) - max(s, lo))
        if cut == 0:
            return [], [(level, index, -1)]
        if cut == w:
            return [(level, index, 1)], []
        pos, neg = [], []
        for j in range(branching):
            p, n = both(level + 1, branching * index + j)
            pos += p
            neg += n
        pos2 = [(level, index, 1)] + neg          # the whole node, minus what lies off the range
        neg2 = [(level, index, -1)] + pos         # minus the whole node, plus what lies on the range
        return min(pos, pos2, key=len), min(neg, neg2, key=len)

    return both(0, 0)[0] if hi > lo else []
""",
    ],
    "noisy_aggregation_error": [
        """
def noisy_aggregation_error(block, epsilon, rng):
    rng.random({burn})
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon < math.inf):
        raise ValueError("epsilon must be finite and > 0")
    x = np.asarray(block, dtype=float).ravel()
    if x.size == 0 or not np.isfinite(x).all() or (x < 0).any():
        raise ValueError("block")
    m = x.size
    sensitivity = 2.0 * (1.0 - 1.0 / m)              # the tight bound: 0 for a single cell
    return float(np.abs(x - x.mean()).sum() + rng.laplace(0.0, sensitivity / epsilon))
""",
        """
def noisy_aggregation_error(block, epsilon, rng):
    rng.random({burn})
    if not isinstance(epsilon, (int, float)) or not epsilon > 0 or epsilon == math.inf:
        raise ValueError("epsilon must be finite and > 0")
    x = np.asarray(block, dtype=float)
    if not x.size or np.isnan(x).any() or np.isinf(x).any() or x.min() < 0:
        raise ValueError("block")
    ae = x.size * np.mean(np.abs(x - np.mean(x)))
    return float(ae + 2.0 / epsilon * (rng.exponential() - rng.exponential()))
""",
    ],
    "data_aware_view": [
        """
def data_aware_view(table, epsilon, max_depth, rng):
    rng.random({burn})
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon < math.inf):
        raise ValueError("epsilon")
    if not isinstance(max_depth, (int, np.integer)) or isinstance(max_depth, bool) or max_depth < 1:
        raise ValueError("max_depth")
    t = np.array(table, dtype=float)
    if not np.isfinite(t).all() or (t < 0).any():
        raise ValueError("table")
    blocks = []

    def grow(r0, r1, c0, c1, depth):                  # depth first: another order of draws
        cells = t[r0:r1, c0:c1]
        if depth < max_depth and cells.size > 1 and \\
                noisy_aggregation_error(cells, epsilon / (2 * max_depth), rng) > 2 / epsilon:
            if r1 - r0 >= c1 - c0:
                m = (r0 + r1) // 2 if (r1 - r0) % 2 == 0 else r0 + (r1 - r0) // 2
                grow(r0, m, c0, c1, depth + 1)
                grow(m, r1, c0, c1, depth + 1)
            else:
                m = c0 + (c1 - c0) // 2
                grow(r0, r1, c0, m, depth + 1)
                grow(r0, r1, m, c1, depth + 1)
        else:
            blocks.append(((r0, r1), (c0, c1)))

    grow(0, t.shape[0], 0, t.shape[1], 0)
    noise = rng.laplace(0.0, 2 / epsilon, size=len(blocks))
    est = np.zeros_like(t)
    for ((r0, r1), (c0, c1)), z in zip(blocks, noise):
        est[r0:r1, c0:c1] = (t[r0:r1, c0:c1].sum() + z) / t[r0:r1, c0:c1].size
    return est, blocks
""",
        """
def data_aware_view(table, epsilon, max_depth, rng):
    rng.random({burn})
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError("epsilon")
    if type(max_depth) is not int or max_depth < 1:
        raise ValueError("max_depth")
    t = np.asarray(table, dtype=float)
    if np.isnan(t).any() or np.isinf(t).any() or (t < 0).any():
        raise ValueError("table")
    frontier, final = [(0, t.shape[0], 0, t.shape[1])], []
    for depth in range(max_depth + 1):                # level by level
        nxt = []
        for r0, r1, c0, c1 in frontier:
            cells = t[r0:r1, c0:c1]
            if depth == max_depth or cells.size == 1 or \\
                    noisy_aggregation_error(cells, 0.5 * epsilon / max_depth, rng) <= 2 / epsilon:
                final.append(((r0, r1), (c0, c1)))
            elif r1 - r0 >= c1 - c0:
                m = r0 + (r1 - r0) // 2
                nxt += [(r0, m, c0, c1), (m, r1, c0, c1)]
            else:
                m = c0 + (c1 - c0) // 2
                nxt += [(r0, r1, c0, m), (r0, r1, m, c1)]
        frontier = nxt
    est = np.zeros(t.shape)
    for (r0, r1), (c0, c1) in final:
        noisy = t[r0:r1, c0:c1].sum() + (2 / epsilon) * (rng.exponential() - rng.exponential())
        est[r0:r1, c0:c1] = noisy / ((r1 - r0) * (c1 - c0))
    return est, final
""",
    ],
    "cf_sketch": [
        """
def cf_sketch(X, freqs, epsilon, delta, rng):
    rng.random({burn})
    X, W = np.asarray(X, dtype=float), np.asarray(freqs, dtype=float)
    if X.ndim != 2 or len(X) == 0 or W.ndim != 2 or W.shape[1] != X.shape[1]:
        raise ValueError("shapes")
    if not (np.isfinite(X).all() and np.isfinite(W).all()):
        raise ValueError("values")
    if not (math.isfinite(epsilon) and epsilon > 0 and 0 < delta < 1):
        raise ValueError("epsilon or delta")
    n, k = X.shape[0], W.shape[0]
    sens = 2 * math.sqrt(k) / n
    if epsilon < 1:                                   # the classic calibration, valid here
        sigma = sens * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    else:
        sigma = gaussian_sigma(sens, epsilon, delta)
    z = np.exp(1j * (X @ W.T)).mean(axis=0)
    return np.concatenate([z.real, z.imag]) + sigma * rng.standard_normal(2 * k)
""",
        """
def cf_sketch(X, freqs, epsilon, delta, rng):
    rng.random({burn})
    X = np.array(X, dtype=float)
    W = np.array(freqs, dtype=float)
    if X.ndim != 2 or X.size == 0 or np.isnan(X).any() or np.isinf(X).any() or not np.isfinite(W).all():
        raise ValueError("X or freqs")
    k = len(W)
    sigma = gaussian_sigma(2 * np.sqrt(k) / len(X), epsilon, delta)
    re = np.array([np.mean(np.cos(X @ w)) for w in W])
    im = np.array([np.mean(np.sin(X @ w)) for w in W])
    return np.concatenate([re + rng.normal(0, sigma, k), im + rng.normal(0, sigma, k)])
""",
    ],
    "mixture_cf": [
        """
def mixture_cf(freqs, weights, means, stds):
    W, w = np.asarray(freqs, dtype=float), np.asarray(weights, dtype=float)
    mu, s = np.asarray(means, dtype=float), np.asarray(stds, dtype=float)
    if mu.shape != s.shape or mu.shape != (len(w), W.shape[1]):
        raise ValueError("shapes")
    if not (np.isfinite(W).all() and np.isfinite(w).all() and np.isfinite(mu).all() and np.isfinite(s).all()):
        raise ValueError("values")
    if (w < 0).any() or not math.isclose(w.sum(), 1.0, rel_tol=0, abs_tol=1e-9) or (s < 0).any():
        raise ValueError("weights or stds")
    phi = np.exp(1j * W @ mu.T - 0.5 * (W**2) @ (s**2).T) @ w
    return np.concatenate([phi.real, phi.imag])
""",
        """
def mixture_cf(freqs, weights, means, stds):
    W, w = np.asarray(freqs, dtype=float), np.asarray(weights, dtype=float)
    mu, s = np.asarray(means, dtype=float), np.asarray(stds, dtype=float)
    ok = mu.shape == s.shape == (len(w), W.shape[1]) and all(np.all(np.isfinite(a)) for a in (W, w, mu, s))
    if not ok or np.any(w < 0) or abs(np.sum(w) - 1) > 1e-9 or np.any(s < 0):
        raise ValueError("bad mixture")
    re, im = np.zeros(len(W)), np.zeros(len(W))
    for j, omega in enumerate(W):
        for c in range(len(w)):
            amp = w[c] * math.exp(-0.5 * float(np.sum((omega * s[c]) ** 2)))
            re[j] += amp * math.cos(float(omega @ mu[c]))
            im[j] += amp * math.sin(float(omega @ mu[c]))
    return np.concatenate([re, im])
""",
    ],
    "sample_chain": [
        """
def sample_chain(ab_counts, bc_counts, n, rng):
    rng.random({burn})
    ab = np.clip(np.array(ab_counts, dtype=float), 0, None)
    bc = np.clip(np.array(bc_counts, dtype=float), 0, None)
    joint = (ab / ab.sum() if ab.sum() > 0 else np.ones_like(ab) / ab.size)[:, :, None] * np.stack(
        [row / row.sum() if row.sum() > 0 else np.ones_like(row) / row.size for row in bc])[None, :, :]
    codes = rng.choice(joint.size, size=n, p=joint.ravel() / joint.sum())
    return np.stack(np.unravel_index(codes, joint.shape), axis=1).astype(np.int64)
""",
        """
def sample_chain(ab_counts, bc_counts, n, rng):
    rng.random({burn})
    ab = np.maximum(np.asarray(ab_counts, dtype=float), 0)
    bc = np.maximum(np.asarray(bc_counts, dtype=float), 0)
    kb, kc = bc.shape
    p_ab = (ab if ab.sum() > 0 else np.ones(ab.shape)).ravel()
    cells = rng.choice(p_ab.size, size=n, p=p_ab / p_ab.sum())
    out = np.zeros((n, 3), dtype=int)
    out[:, 0], out[:, 1] = np.divmod(cells, ab.shape[1])
    for b in range(kb):                                # one batch of draws per value of b
        rows = np.flatnonzero(out[:, 1] == b)
        p = bc[b] if bc[b].sum() > 0 else np.ones(kc)
        out[rows, 2] = rng.choice(kc, size=rows.size, p=p / p.sum())
    return out
""",
    ],
    "fp_attack": [
        _fp(around="range(k0 - 4, k0 + 5)"),
        """
def could_output(y, x, scale):
    d = (y - x) / scale
    candidates = []
    if d <= 0:
        candidates.append(math.exp(d) / 2)
    if d >= 0:
        candidates.append(1 - math.exp(-d) / 2)
    for u0 in candidates:
        k0 = int(u0 * 2**53)
        for k in range(k0 - 3, k0 + 4):
            if 0 < k < 2**53:
                u = k / 2**53
                out = x + scale * math.log(u + u) if u < 0.5 else x - scale * math.log(2.0 - u - u)
                if out == y:
                    return True
    return False


def guess_input(y, scale):
    zero, one = could_output(y, 0.0, scale), could_output(y, 1.0, scale)
    if zero != one:
        return 0 if zero else 1
    return 0 if abs(y) < abs(y - 1.0) else 1          # the Laplace likelihood is higher for the closer input
""",
    ],
    "audit_vendor": [
        _audit(_WORST, _AUDIT_CALL),
        """
def vendor_neighbours():
    n = 1
    return [200_000.0] * n, [0.0] * n                  # one person, top of the range against the bottom


def audit_vendor(a, b, n_samples, rng):
    result = audit_mechanism(lambda x, rng, size: vendor_private_mean(x, CLAIMED_EPSILON, rng=rng, size=size),
                             list(a), list(b), CLAIMED_EPSILON, n_samples=n_samples, vectorized=True, rng=rng)
    return float(result.epsilon_lower_bound)
""",
    ],
    "counterexample_autobound": [
        """
def autobound_witness():
    # range 1 against range 120: noise of scale 1 against scale 120, at the smaller total
    return [0, 0, 1], [0, 0, 120], {1}
""",
        """
def autobound_witness():
    x = [10] * 10 + [11]                 # range 1: the total 111 with noise of scale 1
    x_prime = [10] * 10 + [120]          # range 110: the total 220 with noise of scale 110
    return x, x_prime, set(range(100, 121))
""",
    ],
    "contribution_capped_sum": [
        """
def capped_sum_sensitivity(max_partitions, max_rows, value_bound, user_total):
    import numbers
    if not all(isinstance(c, numbers.Integral) and not isinstance(c, bool) and c >= 1
               for c in (max_partitions, max_rows)):
        raise ValueError("max_partitions and max_rows are integers >= 1")
    if not (isinstance(value_bound, numbers.Real) and math.isfinite(value_bound) and value_bound >= 0):
        raise ValueError("value_bound is a finite number >= 0")
    if not (isinstance(user_total, numbers.Real) and user_total >= 0):   # NaN fails the comparison
        raise ValueError("user_total is a number >= 0")
    # greedy: fill the keys one by one up to r B while the total lasts
    left, change = float(user_total), []
    for _ in range(int(max_partitions)):
        amount = min(float(max_rows) * float(value_bound), left)
        change.append(amount)
        left -= amount
    change = np.array(change)
    return float(change.sum()), float(np.linalg.norm(change))
""",
        """
def capped_sum_sensitivity(max_partitions, max_rows, value_bound, user_total):
    for v in (max_partitions, max_rows):
        if type(v) is bool or int(v) != v or v < 1:
            raise ValueError("caps")
    b, c = float(value_bound), float(user_total)
    if b != b or b in (math.inf, -math.inf) or b < 0 or c != c or c < 0:
        raise ValueError("bounds")
    per_key = max_rows * b
    if per_key == 0 or c == 0:
        return 0.0, 0.0
    whole, extra = divmod(c, per_key) if c < math.inf else (math.inf, 0.0)
    if whole >= max_partitions:
        return float(max_partitions * per_key), float(math.sqrt(max_partitions) * per_key)
    return float(c), float(math.hypot(math.sqrt(whole) * per_key, extra))
""",
    ],
    "contribution_rows_cap": [
        """
def rows_cap(user_ids, keys, epsilon, rng):
    from collections import Counter
    if len(user_ids) != len(keys):
        raise ValueError("one user and one key per row")
    if not (isinstance(epsilon, (int, float)) and 0 < epsilon < math.inf):
        raise ValueError("epsilon")
    largest = {}
    for (user, _), n in Counter(zip(list(user_ids), list(keys))).items():
        largest[user] = max(largest.get(user, 0), n)
    values = list(largest.values())
    return int(dplib.private_quantiles(values, [0.9], 1, 100, epsilon, grid=np.arange(1, 101), rng=rng)[0])
""",
        """
def rows_cap(user_ids, keys, epsilon, rng):
    u, k = np.asarray(user_ids), np.asarray(keys)
    if u.size != k.size or np.ndim(u) != 1:
        raise ValueError("user_ids and keys: one entry per row")
    if not np.isfinite(epsilon) or epsilon <= 0:
        raise ValueError("epsilon")
    ui = np.unique(u, return_inverse=True)[1]
    ki = np.unique(k, return_inverse=True)[1]
    code = ui.astype(np.int64) * (ki.max() + 1 if ki.size else 1) + ki      # one code per (user, key)
    codes, rows = np.unique(code, return_counts=True)
    owner = codes // (ki.max() + 1 if ki.size else 1)
    order = np.lexsort((-rows, owner))                        # each user's largest count first
    first = np.r_[True, owner[order][1:] != owner[order][:-1]]
    values = rows[order][first]
    return int(dplib.private_quantiles(values, [0.9], 1, 100, epsilon, grid=100, rng=rng)[0])
""",
    ],
    "partition_laplace_threshold": [
        """
from scipy import optimize as _optimize


def _valid(epsilon, max_partitions):
    if not (isinstance(epsilon, (int, float)) and not isinstance(epsilon, bool) and 0 < epsilon < math.inf):
        raise ValueError("epsilon must be finite and > 0")
    if type(max_partitions) is not int or max_partitions < 1:
        raise ValueError("max_partitions must be an integer >= 1")


def weighted_delta(threshold, epsilon, max_partitions):
    _valid(epsilon, max_partitions)
    if not np.isfinite(threshold):
        raise ValueError("threshold")
    j = np.arange(1, max_partitions + 1)
    gap = threshold - 1.0 / j                             # how far the noise must reach for a key of weight 1/j
    log_keep = np.where(gap >= 0, np.log(0.5) - epsilon * gap, np.log1p(-0.5 * np.exp(np.minimum(gap, 0) * epsilon)))
    log_none = j * np.log1p(-np.exp(log_keep))            # none of the j keys appears
    return float(np.max(-np.expm1(log_none)))


def weighted_threshold(epsilon, delta, max_partitions):
    if not (isinstance(delta, float) and 0 < delta < 1):
        raise ValueError("delta must be in (0, 1)")
    _valid(epsilon, max_partitions)
    lo = -1.0
    while weighted_delta(lo, epsilon, max_partitions) <= delta:
        lo -= 10.0 / epsilon
    hi = 2.0
    while weighted_delta(hi, epsilon, max_partitions) > delta:
        hi += 10.0 / epsilon
    f = lambda t: math.log(weighted_delta(t, epsilon, max_partitions)) - math.log(delta)
    return float(_optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-14))
""",
        """
def weighted_delta(threshold, epsilon, max_partitions):
    if isinstance(epsilon, bool) or not epsilon > 0 or epsilon == math.inf:
        raise ValueError("epsilon")
    if isinstance(max_partitions, bool) or not isinstance(max_partitions, int) or max_partitions < 1:
        raise ValueError("max_partitions")
    if threshold != threshold or abs(threshold) == math.inf:
        raise ValueError("threshold")
    worst = 0.0
    for keys in range(max_partitions, 0, -1):
        p = float(stats.laplace(loc=1.0 / keys, scale=1.0 / epsilon).sf(threshold))   # 1/j + Z >= t
        worst = max(worst, 1.0 - math.exp(keys * math.log1p(-p)) if p < 1 else 1.0)
    return worst


def weighted_threshold(epsilon, delta, max_partitions):
    if isinstance(delta, bool) or not 0 < delta < 1:
        raise ValueError("delta")
    weighted_delta(1.0, epsilon, max_partitions)
    best = -math.inf
    for keys in range(1, max_partitions + 1):
        per_key = -math.expm1(math.log1p(-delta) / keys)   # each of the j keys may appear with this probability
        best = max(best, 1.0 / keys + float(stats.laplace.ppf(1.0 - per_key, scale=1.0 / epsilon))
                   if per_key > 1e-3 else 1.0 / keys + float(stats.laplace.isf(per_key, scale=1.0 / epsilon)))
    return best
""",
    ],
}
# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES, kept_code=frozenset(KEPT_CODE))
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
