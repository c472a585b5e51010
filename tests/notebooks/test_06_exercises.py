"""Notebook 06's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/06_dp_sgd``, three or more plausible
wrong answers are handed in and graded by the real trusted grader
(:func:`coursetools.grading.grade.grade_job`, as ``tests/coursetools/authoring/test_release.py`` grades the solution);
each must score 0 on its exercise. Issue 50 (no answer one ``help()`` away) changed four exercises
to variants dplib does not hand over, and the answer a student can read in dplib's docstring is
one of the wrong answers of each:

* the Brier loss's per-example gradients: the cross-entropy's (p - y)(x, 1) (dplib's
  ``per_example_gradients``), the square's factor 2 forgotten, the sign flipped, the average
  loss's gradients, no bias column, sigmoid' taken as p;
* per-layer clipping: flat clipping of the whole row (dplib's ``clip_gradients``), each block to C
  (the bound not split), each block to C / L, each coordinate, a NaN C or bad blocks accepted,
  short blocks lengthened;
* the noisy step with a threshold per layer: noise sigma max c_j, sigma sum c_j, sigma c_j on block
  j (dplib's sigma C read block by block), no clipping, the realised batch size or N as divisor, a
  variance as standard deviation, twice the sensitivity (replace-one), numpy's global generator
  instead of ``rng``, a NaN sigma or bad thresholds accepted;
* the subsampled Laplace count's Renyi divergence: the subsampled Gaussian's (dplib's
  ``rdp_subsampled_gaussian``, with sigma = b and with the same variance), / alpha, the moments
  bounded by e^((k-1)/b) instead of computed, one term of the moment dropped, the direct sum
  (overflow), no q = 1 case, b read as epsilon, NaN accepted;
* the budget's steps (rounding where the budget needs a floor, a minimum over orders where the
  inverse needs a maximum, log10 for ln, no clamp at 0, / alpha, no check) and the auditor's
  guesses (unchanged).

Two correct alternatives per exercise, written differently from the solution, must get full marks
under five seeds: a correct answer's random draws are shifted by burning ``s`` draws of the
generator first (``s = 0..4``), which changes every random outcome the hidden tests see.

To keep the runtime modest the graded notebook is the course notebook without its figures and
experiments (markdown, the setup cell, every answer and every test cell are kept; the same cells
are removed from the source, the release and the submission), and one submission carries the i-th
wrong answer of *every* exercise at once. The exercises' tests are independent: each checks its
own answer against dplib or the test's own reference, and the wrong answers of Exercise 3 clip
inline rather than call ``clip_per_layer`` (whose wrong variants ride in the same submission).
So 11 wrong submissions and 10 correct ones are graded, two at a time.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "06_dp_sgd"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "per_example_grads": "per_example_grads_tests",
    "clip_per_example": "clip_per_example_tests",
    "noisy_average_gradient": "noisy_average_gradient_tests",
    "rdp_accountant": "rdp_accountant_tests",
    "max_steps": "max_steps_tests",
    "one_run_guesses": "one_run_guesses_tests",
}

# ------------------------------------------------------------------------------ wrong answers

_GRADS = """
def brier_per_example_grads(w, b, X, y):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    p = special.expit(X @ np.asarray(w, dtype=float) + b)
    f = {factor}
    return {body}
"""
_BOTH = "np.hstack([f[:, None] * X, f[:, None]])"


def _grads(factor: str = "2.0 * (p - y) * p * (1.0 - p)", body: str = _BOTH) -> str:
    return _GRADS.format(factor=factor, body=body)


_CHECK_C = """
    if not (math.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be a finite number > 0")"""
_CHECK_BLOCKS = """
    if any(int(s) != s or s < 1 for s in block_sizes) or sum(block_sizes) != np.shape(G)[1]:
        raise ValueError("bad block_sizes")"""


def _clip(
    *,
    threshold: str = "clip_norm / math.sqrt(len(block_sizes))",
    factor: str = "np.minimum(1.0, c / np.maximum(norms, 1e-300))",
    check: bool = True,
    check_blocks: bool = True,
) -> str:
    return f"""
def clip_per_layer(G, block_sizes, clip_norm):{_CHECK_C if check else ""}{_CHECK_BLOCKS if check_blocks else ""}
    G = np.asarray(G, dtype=float)
    H = G.copy()
    c = {threshold}
    edges = np.cumsum([0] + list(block_sizes))
    for a, e in zip(edges[:-1], edges[1:]):
        norms = np.linalg.norm(G[:, a:e], axis=1, keepdims=True)
        H[:, a:e] = G[:, a:e] * {factor}
    return H
"""


_CLIP_FLAT = (
    """
def clip_per_layer(G, block_sizes, clip_norm):"""
    + _CHECK_C
    + _CHECK_BLOCKS
    + """
    G = np.asarray(G, dtype=float)
    norms = np.linalg.norm(G, axis=1, keepdims=True)
    return G * np.minimum(1.0, clip_norm / np.maximum(norms, 1e-300))
"""
)

_CLIP_COORD = (
    """
def clip_per_layer(G, block_sizes, clip_norm):"""
    + _CHECK_C
    + _CHECK_BLOCKS
    + """
    return np.clip(np.asarray(G, dtype=float), -clip_norm, clip_norm)
"""
)

_CHECK_STEP = """
    if not (noise_multiplier >= 0) or not (0 < sampling_rate <= 1) or not (dataset_size >= 1):
        raise ValueError("bad parameter")"""
_CHECK_NORMS = """
    if len(clip_norms) != len(block_sizes) or not all(math.isfinite(x) and x > 0 for x in clip_norms):
        raise ValueError("bad clip_norms")"""
_NORM2 = "noise_multiplier * math.sqrt(float(np.sum(c ** 2)))"


def _step(
    *,
    clipped: str = "G[:, a:e] * np.minimum(1.0, cj / np.maximum(norms, 1e-300))",
    std: str = _NORM2,
    divisor: str = "sampling_rate * dataset_size",
    draw: str = "rng.normal(0.0, 1.0, size=p)",
    check: bool = True,
    check_norms: bool = True,
) -> str:
    # clips inline: clip_per_layer's wrong variant of the same index rides in the same submission
    return f"""
def noisy_average_gradient(G, block_sizes, clip_norms, noise_multiplier, sampling_rate, dataset_size, rng):{_CHECK_STEP if check else ""}{_CHECK_NORMS if check_norms else ""}
    G = np.asarray(G, dtype=float)
    c = np.asarray(clip_norms, dtype=float)
    p = G.shape[1]
    edges = np.cumsum([0] + list(block_sizes))
    H = G.copy()
    scale = np.zeros(p)
    for a, e, cj in zip(edges[:-1], edges[1:], c):
        norms = np.linalg.norm(G[:, a:e], axis=1, keepdims=True)
        H[:, a:e] = {clipped}
        scale[a:e] = {std}
    noise = {draw} * scale
    return (H.sum(axis=0) + noise) / ({divisor})
"""


_CHECK_LAP = """
    if not (0 < q <= 1) or not (math.isfinite(b) and b > 0):
        raise ValueError("bad q or b")
    if not isinstance(alpha, (int, np.integer)) or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")"""
_MOMENT = "np.logaddexp(np.log(kk / (2 * kk - 1)) + (kk - 1) / b, np.log((kk - 1) / (2 * kk - 1)) - kk / b)"


def _lap(
    *,
    moment: str = _MOMENT,
    first: int = 2,
    divide: str = "alpha - 1",
    q_one: bool = True,
    check: bool = True,
) -> str:
    special_case = (
        f"\n    if q == 1.0:\n        return float(m[alpha] / ({divide}))" if q_one else ""
    )
    return f"""
def subsampled_laplace_rdp(q, b, alpha):{_CHECK_LAP if check else ""}
    k = np.arange(alpha + 1, dtype=float)
    m = np.zeros(alpha + 1)
    kk = k[{first}:]
    m[{first}:] = {moment}{special_case}
    log_binom = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
    log_terms = log_binom + (alpha - k) * np.log1p(-q) + k * math.log(q) + m
    return float(special.logsumexp(log_terms) / ({divide}))
"""


_LAP_NAIVE = (
    """
def subsampled_laplace_rdp(q, b, alpha):"""
    + _CHECK_LAP
    + """
    total = 0.0
    for k in range(alpha + 1):
        moment = 1.0 if k < 2 else k / (2 * k - 1) * np.exp((k - 1) / b) + (k - 1) / (2 * k - 1) * np.exp(-k / b)
        total += math.comb(alpha, k) * (1 - q) ** (alpha - k) * q**k * moment
    return float(np.log(total) / (alpha - 1))
"""
)

_CHECK_BUDGET = """
    if not (math.isfinite(target_epsilon) and target_epsilon > 0) or not (0 < delta < 1):
        raise ValueError("bad target_epsilon or delta")"""


def _budget(
    *,
    log: str = "math.log(1.0 / delta)",
    denominator: str = "orders - 1",
    per_order: str = "np.floor(room / rho)",
    pick: str = "np.max",
    clamp: bool = True,
    check: bool = True,
) -> str:
    result = f"max(0.0, {pick}(per_order))" if clamp else f"{pick}(per_order)"
    return f"""
def max_steps(rdp_per_step, orders, delta, target_epsilon):{_CHECK_BUDGET if check else ""}
    rho = np.asarray(rdp_per_step, dtype=float)
    orders = np.asarray(orders, dtype=float)
    room = target_epsilon - {log} / ({denominator})
    per_order = {per_order}
    return int({result})
"""


def _guesses(body: str, check: bool = True) -> str:
    guard = (
        """
    if k_pos + k_neg > len(scores):
        raise ValueError("k_pos + k_neg exceeds the number of canaries")"""
        if check
        else ""
    )
    return f"""
def one_run_correct_guesses(scores, included, k_pos, k_neg):{guard}
    included = np.asarray(included, dtype=bool)
{body}
"""


_ORDER = "    order = np.argsort(-np.asarray(scores, dtype=float))\n"

#: answer cell grade_id -> [(what is wrong, answer cell source)], each scoring 0 on its exercise
WRONG: dict[str, list[tuple[str, str]]] = {
    "per_example_grads": [
        (
            "the cross-entropy's gradient (p - y)(x, 1) (dplib's per_example_gradients, read in help())",
            _grads(factor="p - y"),
        ),
        ("the factor 2 of the square forgotten", _grads(factor="(p - y) * p * (1.0 - p)")),
        ("sign flipped: 2 (y - p) p (1 - p)", _grads(factor="2.0 * (y - p) * p * (1.0 - p)")),
        (
            "gradients of the average loss",
            _grads(body=_BOTH + " / max(len(X), 1)"),
        ),
        ("bias column missing", _grads(body="f[:, None] * X")),
        ("sigmoid' taken as p instead of p (1 - p)", _grads(factor="2.0 * (p - y) * p")),
    ],
    "clip_per_example": [
        (
            "flat clipping of the whole row to C (dplib's clip_gradients, read in help())",
            _CLIP_FLAT,
        ),
        (
            "each block clipped to C: a row of L long blocks has length C sqrt(L)",
            _clip(threshold="clip_norm"),
        ),
        (
            "each block clipped to C / L: more than needed",
            _clip(threshold="clip_norm / len(block_sizes)"),
        ),
        ("each coordinate clipped to [-C, C]", _CLIP_COORD),
        ("NaN clip_norm accepted (no check)", _clip(check=False)),
        (
            "block sizes not checked (blocks that do not add up to p accepted)",
            _clip(check_blocks=False),
        ),
        (
            "every block rescaled to length c (short blocks lengthened)",
            _clip(factor="np.where(norms > 0, c / np.maximum(norms, 1e-300), 0.0)"),
        ),
    ],
    "noisy_average_gradient": [
        (
            "noise sigma max_j c_j (the largest threshold taken as the sensitivity)",
            _step(std="noise_multiplier * c.max()"),
        ),
        (
            "noise sigma sum_j c_j (more noise than the bound needs)",
            _step(std="noise_multiplier * c.sum()"),
        ),
        (
            "noise sigma c_j on block j (dplib's sigma C read block by block)",
            _step(std="noise_multiplier * cj"),
        ),
        ("no clipping", _step(clipped="G[:, a:e]")),
        (
            "divided by the batch size drawn (fits the visible q = 1 test)",
            _step(divisor="max(len(G), 1)"),
        ),
        ("divided by N instead of q N", _step(divisor="dataset_size")),
        ("variance used as the standard deviation", _step(std=f"({_NORM2}) ** 2")),
        ("noise 2 sigma ||c|| (the replace-one sensitivity)", _step(std=f"2 * {_NORM2}")),
        (
            "noise from numpy's global generator, not rng",
            _step(draw="np.random.normal(0.0, 1.0, size=p)"),
        ),
        ("NaN noise multiplier accepted (no check)", _step(check=False)),
        ("thresholds not checked (NaN, 0 or one too few accepted)", _step(check_norms=False)),
    ],
    "rdp_accountant": [
        (
            "the subsampled Gaussian's divergence with sigma = b (dplib's rdp_subsampled_gaussian, read in help())",
            _lap(moment="(k * k - k) / (2.0 * b**2)", first=0),
        ),
        (
            "the Gaussian with the same variance, sigma = b sqrt 2",
            _lap(moment="(k * k - k) / (4.0 * b**2)", first=0),
        ),
        ("ln A divided by alpha, not alpha - 1", _lap(divide="alpha")),
        (
            "E_Q[L^k] bounded by e^((k-1)/b) (the pure-DP bound), not computed",
            _lap(moment="(kk - 1) / b"),
        ),
        (
            "the moment's second term dropped",
            _lap(moment="np.log(kk / (2 * kk - 1)) + (kk - 1) / b"),
        ),
        ("the terms summed directly: overflow at alpha = 256, b = 0.05", _LAP_NAIVE),
        ("no special case at q = 1: 0 * log(0) = nan", _lap(q_one=False)),
        (
            "b read as epsilon: e^((k-1) b) for e^((k-1)/b)",
            _lap(moment=_MOMENT.replace("/ b", "* b")),
        ),
        ("NaN q or b accepted (no check)", _lap(check=False)),
    ],
    "max_steps": [
        ("rounded where the budget needs the floor", _budget(per_order="np.round(room / rho)")),
        ("minimum over orders instead of maximum", _budget(pick="np.min")),
        ("log10(1/delta) instead of ln", _budget(log="math.log10(1.0 / delta)")),
        ("no clamp at 0: a negative number of steps", _budget(clamp=False)),
        ("ln(1/delta) / alpha instead of / (alpha - 1)", _budget(denominator="orders")),
        ("no check: NaN, infinite or zero budgets accepted", _budget(check=False)),
    ],
    "one_run_guesses": [
        (
            "'included' guessed for the lowest scores",
            _guesses(
                "    order = np.argsort(np.asarray(scores, dtype=float))\n"
                "    return int(included[order[:k_pos]].sum() + (~included[order[len(order) - k_neg:]]).sum())"
            ),
        ),
        (
            "order[-k_neg:] is the whole array when k_neg = 0",
            _guesses(
                _ORDER
                + "    return int(included[order[:k_pos]].sum() + (~included[order[-k_neg:]]).sum())"
            ),
        ),
        (
            "sorts the caller's scores in place",
            _guesses(
                "    s = scores\n    s.sort()\n    s = s[::-1]\n"
                "    return int(included[:k_pos].sum() + (~included[len(s) - k_neg:]).sum())"
            ),
        ),
        (
            "k_pos + k_neg > m not refused",
            _guesses(
                _ORDER
                + "    return int(included[order[:k_pos]].sum() + (~included[order[len(order) - k_neg:]]).sum())",
                check=False,
            ),
        ),
    ],
}

# ------------------------------------------------------------------------ correct alternatives

#: answer cell grade_id -> two correct answers written differently; {burn} = draws burnt first
ALTERNATIVES: dict[str, list[str]] = {
    "per_example_grads": [
        """
def brier_per_example_grads(w, b, X, y):
    X = np.array(X, dtype=float, ndmin=2)
    z = X.dot(np.asarray(w, dtype=float)) + float(b)
    p = np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))
    d = 2.0 * (p - np.asarray(y, dtype=float)) * p * (1.0 - p)
    return np.column_stack([X * d[:, None], d]) if len(X) else np.zeros((0, X.shape[1] + 1))
""",
        """
def brier_per_example_grads(w, b, X, y):
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    out = np.empty((n, d + 1))
    out[:, :d] = X
    out[:, d] = 1.0
    z = X @ w + b
    p, one_minus_p = special.expit(z), special.expit(-z)       # d/dz (p - y)^2 = 2 (p - y) p (1 - p)
    return out * (2.0 * (p - y) * p * one_minus_p)[:, None]
""",
    ],
    "clip_per_example": [
        """
def clip_per_layer(G, block_sizes, clip_norm):
    if not (np.isfinite(clip_norm) and clip_norm > 0):
        raise ValueError("clip_norm must be finite and > 0")
    sizes = list(block_sizes)
    if not sizes or any(int(s) != s or s <= 0 for s in sizes):
        raise ValueError("block sizes must be positive integers")
    G = np.array(G, dtype=float, copy=True)
    if sum(sizes) != G.shape[1]:
        raise ValueError("block sizes must add up to the number of columns")
    c = clip_norm / np.sqrt(len(sizes))          # all L blocks at c: the row has length C
    out = []
    for part in np.split(G, np.cumsum(sizes)[:-1].astype(int), axis=1):
        lengths = np.sqrt(np.einsum("ij,ij->i", part, part))
        f = np.ones_like(lengths)
        long_ = lengths > c
        f[long_] = c / lengths[long_]
        out.append(part * f[:, None])
    return np.concatenate(out, axis=1)
""",
        """
def clip_per_layer(G, block_sizes, clip_norm):
    if math.isnan(clip_norm) or math.isinf(clip_norm) or clip_norm <= 0:
        raise ValueError("bad clip_norm")
    G = np.asarray(G, dtype=float)
    sizes = np.asarray(block_sizes, dtype=float)
    if sizes.ndim != 1 or sizes.size == 0 or np.any(sizes < 1) or np.any(sizes != np.round(sizes)) \
            or sizes.sum() != G.shape[1]:
        raise ValueError("bad block_sizes")
    ids = np.repeat(np.arange(sizes.size), sizes.astype(int))     # the block of each column
    onehot = (ids[:, None] == np.arange(sizes.size)[None, :]).astype(float)
    lengths = np.sqrt((G * G) @ onehot)                               # (n, L)
    c = clip_norm / math.sqrt(sizes.size)
    factor = np.divide(c, lengths, out=np.ones_like(lengths), where=lengths > c)
    return G * factor[:, ids]
""",
    ],
    "noisy_average_gradient": [
        """
def noisy_average_gradient(G, block_sizes, clip_norms, noise_multiplier, sampling_rate, dataset_size, rng):
    if math.isnan(noise_multiplier) or noise_multiplier < 0:
        raise ValueError("noise_multiplier must be >= 0")
    if math.isnan(sampling_rate) or not 0 < sampling_rate <= 1:
        raise ValueError("sampling_rate must be in (0, 1]")
    if dataset_size < 1:
        raise ValueError("dataset_size must be >= 1")
    c = [float(x) for x in clip_norms]
    if len(c) != len(block_sizes) or not all(math.isfinite(x) and x > 0 for x in c):
        raise ValueError("one finite threshold > 0 per block")
    rng.random({burn})
    G = np.asarray(G, dtype=float)
    edges = np.cumsum([0] + list(block_sizes))
    summed = np.concatenate([clip_per_layer(G[:, a:e], [e - a], cj).sum(axis=0)
                             for a, e, cj in zip(edges[:-1], edges[1:], c)])
    expected_batch = sampling_rate * dataset_size
    return summed / expected_batch + rng.standard_normal(G.shape[1]) * (noise_multiplier * math.hypot(*c) / expected_batch)
""",
        """
def noisy_average_gradient(G, block_sizes, clip_norms, noise_multiplier, sampling_rate, dataset_size, rng):
    for name, ok in (("noise_multiplier", noise_multiplier >= 0), ("sampling_rate", 0 < sampling_rate <= 1),
                     ("dataset_size", dataset_size >= 1), ("clip_norms", len(clip_norms) == len(block_sizes)
                      and all(0 < x < math.inf for x in clip_norms))):
        if not ok:
            raise ValueError(f"bad {name}")
    rng.normal(size={burn})
    G = np.asarray(G, dtype=float)
    p = G.shape[1]
    starts = np.concatenate([[0], np.cumsum(block_sizes)[:-1]]).astype(int)
    total = np.zeros(p)
    for row in G:                                   # a loop over the batch: slower, but correct
        for start, size, cj in zip(starts, block_sizes, clip_norms):
            seg = row[start:start + size]
            length = float(np.sqrt(seg @ seg))
            total[start:start + size] += seg if length <= cj else seg * (cj / length)
    sensitivity = float(np.sqrt(np.sum(np.square(clip_norms))))     # every block at its threshold
    noisy = total + rng.normal(loc=np.zeros(p), scale=noise_multiplier * sensitivity)
    return noisy * (1.0 / (sampling_rate * dataset_size))
""",
    ],
    "rdp_accountant": [
        """
def subsampled_laplace_rdp(q, b, alpha):
    if not (0 < q <= 1):
        raise ValueError("q must be in (0, 1]")
    if not (b > 0 and b < math.inf):
        raise ValueError("b must be finite and > 0")
    if isinstance(alpha, bool) or int(alpha) != alpha or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")
    alpha = int(alpha)

    def log_moment(k):                              # ln E_Q[L^k]
        if k < 2:
            return 0.0
        return float(np.logaddexp(math.log(k / (2 * k - 1)) + (k - 1) / b, math.log((k - 1) / (2 * k - 1)) - k / b))

    logs = []
    for k in range(alpha + 1):
        term = math.lgamma(alpha + 1) - math.lgamma(k + 1) - math.lgamma(alpha - k + 1)
        if k < alpha:
            if q == 1:
                continue                           # (1 - q)^(alpha - k) = 0
            term += (alpha - k) * math.log(1 - q)
        logs.append(term + k * math.log(q) + log_moment(k))
    return float(special.logsumexp(logs)) / (alpha - 1)
""",
        """
def subsampled_laplace_rdp(q, b, alpha):
    # E_Q[(1 - q + q L)^alpha] on the three pieces where L is e^(-1/b), e^((2y-1)/b) and e^(1/b)
    if not (q > 0 and q <= 1 and b > 0 and math.isfinite(b)):
        raise ValueError("need 0 < q <= 1 and a finite b > 0")
    if not isinstance(alpha, (int, np.integer)) or alpha < 2:
        raise ValueError("alpha must be an integer >= 2")
    alpha = int(alpha)
    log1mq = math.log1p(-q) if q < 1 else -math.inf
    left = -math.log(2) + alpha * float(np.logaddexp(log1mq, math.log(q) - 1 / b))          # y < 0, mass 1/2
    right = -math.log(2) - 1 / b + alpha * float(np.logaddexp(log1mq, math.log(q) + 1 / b))  # y > 1, mass e^(-1/b)/2
    k = np.arange(alpha + 1, dtype=float)
    log_binom = special.gammaln(alpha + 1) - special.gammaln(k + 1) - special.gammaln(alpha - k + 1)
    powers = (alpha - k) * log1mq if q < 1 else np.where(k < alpha, -np.inf, 0.0)   # ln (1 - q)^(alpha - k)
    # (1/(2b)) int_0^1 e^(-y/b) e^(k(2y-1)/b) dy = e^(-k/b) |e^((2k-1)/b) - 1| / (2 |2k - 1|)
    span = np.abs(2 * k - 1) / b
    log_integral = -k / b + np.where(k >= 1, span, 0.0) + np.log(-np.expm1(-span)) - np.log(2 * np.abs(2 * k - 1))
    middle = log_binom + powers + k * math.log(q) + log_integral
    return float(special.logsumexp(np.concatenate([[left, right], middle]))) / (alpha - 1)
""",
    ],
    "max_steps": [
        """
def max_steps(rdp_per_step, orders, delta, target_epsilon):
    if math.isnan(target_epsilon) or math.isinf(target_epsilon) or target_epsilon <= 0:
        raise ValueError("target_epsilon must be finite and > 0")
    if math.isnan(delta) or not 0 < delta < 1:
        raise ValueError("delta must be in (0, 1)")
    best = 0
    for rho, alpha in zip(rdp_per_step, orders):
        room = target_epsilon - math.log(1 / delta) / (alpha - 1)
        if room >= 0:
            best = max(best, math.floor(room / rho))
    return int(best)
""",
        """
def max_steps(rdp_per_step, orders, delta, target_epsilon):
    if not (np.isfinite(target_epsilon) and target_epsilon > 0 and 0 < delta < 1):
        raise ValueError("need a finite target_epsilon > 0 and 0 < delta < 1")
    rho, orders = np.asarray(rdp_per_step, float), np.asarray(orders, float)
    slack = -np.log(delta) / (orders - 1)

    def eps(T):
        return float(np.min(T * rho + slack))

    T = int(max(0, np.max(np.floor((target_epsilon - slack) / rho))))
    while T > 0 and eps(T) > target_epsilon:       # guard against rounding at the boundary
        T -= 1
    while eps(T + 1) <= target_epsilon:
        T += 1
    return T
""",
    ],
    "one_run_guesses": [
        """
def one_run_correct_guesses(scores, included, k_pos, k_neg):
    scores = list(map(float, scores))
    if k_pos + k_neg > len(scores):
        raise ValueError("too many guesses")
    ranked = sorted(range(len(scores)), key=lambda i: scores[i])      # lowest first
    right = sum(bool(included[i]) for i in ranked[len(ranked) - k_pos:]) if k_pos else 0
    right += sum(not bool(included[i]) for i in ranked[:k_neg])
    return int(right)
""",
        """
def one_run_correct_guesses(scores, included, k_pos, k_neg):
    s = np.asarray(scores, dtype=float)
    inc = np.asarray(included, dtype=bool)
    if k_pos + k_neg > s.size:
        raise ValueError("k_pos + k_neg > m")
    ranks = s.argsort().argsort()                   # 0 = lowest score
    guessed_in = ranks >= s.size - k_pos
    guessed_out = ranks < k_neg
    return int(np.count_nonzero(guessed_in & inc) + np.count_nonzero(guessed_out & ~inc))
""",
    ],
}
# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES)
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
