"""Notebook 00's hidden tests have power: plausible wrong answers score 0, correct alternatives pass.

Issue 31 (third edition): for every exercise of ``solutions/00_anonymization_failures``, three or
more plausible wrong answers (distinct combinations counted instead of records, columns glued as
text, the Poisson approximation or m for m - 1 where the exact expectation is asked, a power of a
number close to 1 that loses precision, a NaN accepted where the contract says raise, an
unsalted table where the release is salted, a
linkage on exact combinations where the release blurs values with '*', a
similarity score that counts unrated films, never counts a clear mismatch against or ignores rarity or dates, a partly suppressed
class, a budget compared with < for <=, a jump read where a threshold
ends, the round-down platform's rule where the platform rounds to the nearest, a half-step
that is not whole for an odd step, a special case that fits only the visible inputs...) are handed in and graded by the
trusted grader; each must score 0 on its exercise. Two correct alternatives per exercise, written
differently from the solution, must get full marks under five runs (the exercises are
deterministic, so the five runs repeat one grading; ``{burn}`` is unused). The figures and
demonstrations (the ``code-N`` cells but the setup cell) are left out of the graded notebook.
"""

from __future__ import annotations

from notebook_probes import Probe, install

NAME = "00_anonymization_failures"

#: answer cell grade_id -> test cell grade_id
EXERCISES = {
    "uniqueness_fraction": "uniqueness_fraction_tests",
    "expected_unique_fraction": "expected_unique_fraction_tests",
    "link": "link_tests",
    "unhash_medallions": "unhash_medallions_tests",
    "similarity_scores": "similarity_scores_tests",
    "k_anonymity": "k_anonymity_tests",
    "exact_audience_size": "exact_audience_size_tests",
    "count_age_tuples": "count_age_tuples_tests",
}
#: demonstrations and figures (graded-cell metadata, no points): not needed by any test
DROPPED = {f"code-{i}" for i in range(2, 20)}

# ------------------------------------------------------------------------------ wrong answers

_KEYS = "list(zip(*(np.asarray(table[c]).tolist() for c in columns)))"
_GLUED = "['|'.join([]) + ''.join(str(v) for v in row) for row in zip(*(np.asarray(table[c]).tolist() for c in columns))]"
_ADDED = "[sum(row) if all(isinstance(v, int) for v in row) else row for row in zip(*(np.asarray(table[c]).tolist() for c in columns))]"


def _uniq(body: str, keys: str = _KEYS) -> str:
    return f"""
def uniqueness_fraction(table, columns):
    keys = {keys}
    counts = Counter(keys)
{body}
"""


_UNIQ_RIGHT = "    return float(sum(counts[k] == 1 for k in keys) / len(keys))"


def _expected(body: str, check: bool = True) -> str:
    guard = (
        """
    if p.size == 0 or not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9 or m < 1:
        raise ValueError("bad input")"""
        if check
        else ""
    )
    return f"""
def expected_unique_fraction(cell_probs, m):
    p = np.asarray(cell_probs, dtype=float).ravel(){guard}
    return float({body})
"""


_EXP_RIGHT = (
    "np.sum(p * np.exp(__import__('scipy.special', fromlist=['xlog1py']).xlog1py(m - 1, -p)))"
)


_FITS = "len(p) == len(v) and all(a == '*' or a == b for a, b in zip(p, v))"


def _wild(
    fits: str = _FITS,
    keep: str = "len(js) == 1 and per_voter[js[0]] == 1",
    rows: str = "list(zip(*(np.asarray(t[c]).astype(str).tolist() for c in quasi_identifiers)))",
    dedupe: bool = False,
) -> str:
    med = "list(dict.fromkeys(rows(medical)))" if dedupe else "rows(medical)"
    diag = (
        "[dict(zip(rows(medical), np.asarray(medical['diagnosis']).tolist()))[m] for m in med]"
        if dedupe
        else "np.asarray(medical['diagnosis']).tolist()"
    )
    return f"""
def link(medical, voters, quasi_identifiers):
    def rows(t):
        return {rows}

    def fits(p, v):
        return {fits}

    med, vot = {med}, rows(voters)
    could = [[j for j, w in enumerate(vot) if all(fits(p, v) for p, v in zip(m, w))] for m in med]
    per_voter = Counter(j for js in could for j in js)
    names, diagnoses = np.asarray(voters["name"]).tolist(), {diag}
    return {{str(names[js[0]]): str(diagnoses[i]) for i, js in enumerate(could) if {keep}}}
"""


def _unhash(
    spaces: str,
    missing: str = "None",
    salted: str = "salt + m",
    salts: str = "itertools.product(U, repeat=3)",
    find: str = "hashlib.md5((s + known_medallion).encode()).hexdigest() == str(hashed[known_index])",
) -> str:
    return f"""
def unhash_medallions(hashed, known_index, known_medallion):
    D, U = string.digits, string.ascii_uppercase
    salt = next(("".join(t) for t in {salts} if (lambda s: {find})("".join(t))), "")
    space = []
    for pattern in {spaces}:
        space += ["".join(t) for t in itertools.product(*pattern)]
    table = {{hashlib.md5(({salted}).encode()).hexdigest(): m for m in space}}
    return [table.get(str(h), {missing}) for h in hashed]
"""


_BOTH = "[(D, U, D, D), (U, U, D, D, D)]"


def _sim(
    weights: str = "1.0 / np.log1p(support)",
    mask: bool = True,
    close_r: str = "np.exp(-gap_r / 1.5)",
    close_d: str = "np.exp(-gap_d / 30.0)",
    items: str = "np.asarray(aux_items, dtype=int)",
    total: str = "(combined * weights).sum(axis=1)",
    offset: str = "1.138",
) -> str:
    combine = "np.where(sub_r > 0, sim, 0.0)" if mask else "sim"
    return f"""
def similarity_scores(aux_items, aux_ratings, aux_days, ratings, days):
    aux_items = {items}
    support = (ratings > 0).sum(axis=0)[aux_items]
    weights = {weights}
    sub_r = ratings[:, aux_items].astype(float)
    sub_d = days[:, aux_items].astype(float)
    gap_r = np.abs(sub_r - np.asarray(aux_ratings, dtype=float))
    gap_d = np.abs(sub_d - np.asarray(aux_days, dtype=float))
    sim = {close_r} + {close_d} - {offset}
    combined = {combine}
    return {total}
"""


def _kanon(loop: str, check: bool = True) -> str:
    guard = (
        """
    if max_suppressed < 0:
        raise ValueError("max_suppressed must be >= 0")"""
        if check
        else ""
    )
    return f"""
def k_anonymity(table, quasi_identifiers, max_suppressed=0):{guard}
    keys = list(zip(*(np.asarray(table[c]).tolist() for c in quasi_identifiers)))
    sizes = sorted(Counter(keys).values())
{loop}
"""


_KANON_RIGHT = """    best, deleted = sizes[0], 0
    for size, following in zip(sizes, sizes[1:]):
        deleted += size
        if deleted > max_suppressed:
            break
        best = following
    return int(best)"""


def _audience(body: str) -> str:
    return f"""
def exact_audience_size(estimates, step):
{body}
    raise ValueError("no jump")
"""


def _ages(
    median_rule: str = "(full[mid - 1] + full[mid]) / 2",
    total: str = "mean * count",
    top: str = "max_age + 1",
    integral: bool = True,
) -> str:
    check = "        if abs(last - round(last)) > 1e-9:\n            continue\n" if integral else ""
    return f"""
def count_age_tuples(count, median, mean, max_age):
    total = {total}
    found = 0
    if count == 1:
        return int(abs(median - total) < 1e-9 and 0 <= median <= max_age and float(median).is_integer())
    for ages in itertools.combinations_with_replacement(range({top}), count - 1):
        last = total - sum(ages)
{check}        last = int(round(last))
        if last < ages[-1] or last > max_age:
            continue
        full = (*ages, last)
        mid = count // 2
        med = full[mid] if count % 2 else {median_rule}
        found += abs(med - median) < 1e-9
    return int(found)
"""


#: grade_id -> plausible wrong answers, each with what it gets wrong
WRONG = {
    "uniqueness_fraction": [
        (
            "unique combinations over distinct combinations",
            _uniq("    return float(sum(v == 1 for v in counts.values()) / len(counts))"),
        ),
        ("distinct combinations over records", _uniq("    return float(len(counts) / len(keys))")),
        ("columns glued together as text", _uniq(_UNIQ_RIGHT, keys=_GLUED)),
        ("integer columns added up", _uniq(_UNIQ_RIGHT, keys=_ADDED)),
    ],
    "expected_unique_fraction": [
        ("the Poisson approximation", _expected("np.sum(p * np.exp(-(m - 1) * p))")),
        ("m for m - 1", _expected("np.sum(p * (1 - p) ** m)")),
        ("equal cells assumed", _expected("(1 - 1 / p.size) ** (m - 1)")),
        (
            "(1 - p) ** (m - 1): precision lost for tiny p and huge m",
            _expected("np.sum(p * (1 - p) ** (m - 1))"),
        ),
        ("NaN accepted (no check)", _expected(_EXP_RIGHT, check=False)),
        ("cells averaged without their weights", _expected("np.mean((1 - p) ** (m - 1))")),
    ],
    "link": [
        (
            "exact combinations once in each table, help(dplib.attacks.linkage_matches)'s rule (the old answer)",
            _wild(fits="p == v"),
        ),
        (
            "the patient's side only (a voter two patients fit still linked)",
            _wild(keep="len(js) == 1"),
        ),
        (
            "the voter's side only (the first voter of a patient who fits several)",
            _wild(keep="len(js) >= 1 and per_voter[js[0]] == 1"),
        ),
        (
            "'*' as any run of characters (fnmatch)",
            _wild(fits="fnmatch.fnmatchcase(v, p)").replace(
                "def link(", "import fnmatch\n\n\ndef link("
            ),
        ),
        (
            "a prefix before the stars, the length ignored",
            _wild(fits="v.startswith(p.rstrip('*'))"),
        ),
        (
            "columns glued together as text",
            _wild(
                rows="[(''.join(row),) for row in zip(*(np.asarray(t[c]).astype(str).tolist() for c in quasi_identifiers))]"
            ),
        ),
        ("patients published alike counted once", _wild(dedupe=True)),
    ],
    "unhash_medallions": [
        (
            "the unsalted table, help(dplib.attacks.hashed_ids)'s attack (the old answer)",
            _unhash(_BOTH, salted="m"),
        ),
        (
            "the salt written behind the medallion",
            _unhash(
                _BOTH,
                salted="m + salt",
                find="hashlib.md5((known_medallion + s).encode()).hexdigest() == str(hashed[known_index])",
            ),
        ),
        (
            "salts of lower-case letters",
            _unhash(_BOTH, salts="itertools.product(string.ascii_lowercase, repeat=3)"),
        ),
        ("salts of two letters", _unhash(_BOTH, salts="itertools.product(U, repeat=2)")),
        (
            "the visible example's salt QED for every release",
            _unhash(_BOTH, salts="[('Q', 'E', 'D')]", find="True"),
        ),
        ("only the first format", _unhash("[(D, U, D, D)]")),
        ("digits 1-9 only", _unhash("[(D[1:], U, D[1:], D[1:]), (U, U, D[1:], D[1:], D[1:])]")),
        ("empty string for a non-medallion", _unhash(_BOTH, missing="''")),
        (
            "the input overwritten once looked up",
            _unhash(_BOTH).replace(
                "    return [table.get(str(h), None) for h in hashed]",
                "    found = [table.get(str(h), None) for h in hashed]\n    hashed[:] = ''\n    return found",
            ),
        ),
    ],
    "similarity_scores": [
        (
            "Narayanan and Shmatikov's score, never negative, printed by help(dplib.attacks.sparse) (the old answer)",
            _sim(offset="0.0"),
        ),
        ("their score minus 1, a mismatch of 3 stars still counted for", _sim(offset="1.0")),
        (
            "mismatches counted against on the stars only, the days ignored",
            _sim(close_r="(1.0 - gap_r / 2.5)", close_d="0.0", offset="0.0"),
        ),
        (
            "an unrated film counted against",
            _sim(mask=False, close_r="np.where(sub_r > 0, np.exp(-gap_r / 1.5), 0.0)"),
        ),
        ("films the user did not rate still score", _sim(mask=False)),
        ("all films weigh the same", _sim(weights="np.ones(len(aux_items))")),
        ("popular films weigh more", _sim(weights="np.log1p(support)")),
        (
            "support counted over every user, rated or not",
            _sim(weights="1.0 / np.log1p((ratings >= 0).sum(axis=0)[aux_items])"),
        ),
        ("exact matches only", _sim(close_r="(gap_r == 0)", close_d="(gap_d == 0)")),
        (
            "films sorted, their remembered ratings and days not",
            _sim(items="np.sort(np.asarray(aux_items, dtype=int))"),
        ),
        (
            "a weighted average instead of a sum",
            _sim(total="(combined * weights).sum(axis=1) / weights.sum()"),
        ),
    ],
    "k_anonymity": [
        ("the budget ignored", _kanon("    return int(sizes[0])")),
        (
            "records deleted one at a time, a class partly deleted",
            _kanon(
                """    sizes = list(sizes)
    budget = max_suppressed
    while budget > 0 and len(sizes) > 1:
        take = min(budget, sizes[0])
        sizes[0] -= take
        budget -= take
        if sizes[0] == 0:
            sizes.pop(0)
        sizes.sort()
    return int(sizes[0])"""
            ),
        ),
        (
            "budget compared with < for <=",
            _kanon(_KANON_RIGHT.replace("deleted > max_suppressed", "deleted >= max_suppressed")),
        ),
        ("a negative budget accepted", _kanon(_KANON_RIGHT, check=False)),
        (
            "the second-smallest class whenever there is a budget (fits the visible case)",
            _kanon(
                "    return int(sizes[1] if max_suppressed > 0 and len(sizes) > 1 else sizes[0])"
            ),
        ),
    ],
    "exact_audience_size": [
        (
            "estimates[j] - j, the round-down platform's answer in help(exact_size_from_rounded) (the old answer)",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if before is not None and after is not None and after > before:
            return int(after - j)"""
            ),
        ),
        (
            "step / 2 truncated by int(): right for even steps only",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if before is not None and after is not None and after > before:
            return int(after - step / 2 - j)"""
            ),
        ),
        (
            "round(step / 2): Python rounds 2.5 down and 3.5 up",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if before is not None and after is not None and after > before:
            return int(after - round(step / 2) - j)"""
            ),
        ),
        (
            "ceil(step / 2): the half-step counted up",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if before is not None and after is not None and after > before:
            return int(after - (-(-step // 2)) - j)"""
            ),
        ),
        (
            "the first estimate shown after None taken for a jump",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if after is not None and (before is None or after > before):
            return int(after - step // 2 - j)"""
            ),
        ),
        (
            "the padding counted from 1 (j - 1 for j)",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if before is not None and after is not None and after > before:
            return int(after - step // 2 - (j - 1))"""
            ),
        ),
        (
            "a jump of exactly 10 (the visible step) with its half, 5",
            _audience(
                """    for j in range(1, len(estimates)):
        before, after = estimates[j - 1], estimates[j]
        if before is not None and after is not None and after == before + 10:
            return int(after - 5 - j)"""
            ),
        ),
    ],
    "count_age_tuples": [
        ("even count: the lower middle age as the median", _ages(median_rule="full[mid - 1]")),
        ("a sum that is not whole accepted (rounded)", _ages(total="round(mean * count)")),
        ("max_age excluded", _ages(top="max_age")),
        ("a sum that is not whole truncated", _ages(total="int(mean * count)")),
    ],
}

# ------------------------------------------------------------------------- correct alternatives

ALTERNATIVES = {
    "uniqueness_fraction": [
        """
def uniqueness_fraction(table, columns):
    codes = [np.unique(np.asarray(table[c]).astype(str), return_inverse=True)[1].ravel() for c in columns]
    rows = np.stack(codes, axis=1)
    _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return float(np.mean(counts[inverse.ravel()] == 1))
""",
        """
def uniqueness_fraction(table, columns):
    seen = {}
    n = len(np.asarray(table[columns[0]]))
    for i in range(n):
        key = tuple(np.asarray(table[c])[i].item() for c in columns)
        seen[key] = seen.get(key, 0) + 1
    alone = sum(1 for i in range(n) if seen[tuple(np.asarray(table[c])[i].item() for c in columns)] == 1)
    return alone / n
""",
    ],
    "expected_unique_fraction": [
        """
import math


def expected_unique_fraction(cell_probs, m):
    from scipy.special import xlog1py
    p = np.array(cell_probs, dtype=float)
    if p.ndim != 1 or p.size == 0 or np.isnan(p).any() or np.isinf(p).any() or (p < 0).any():
        raise ValueError("cell_probs: finite probabilities >= 0")
    if not math.isclose(p.sum(), 1.0, rel_tol=0, abs_tol=1e-9):
        raise ValueError("cell_probs must sum to 1")
    if m < 1 or m != int(m):
        raise ValueError("m must be an integer >= 1")
    return float((p * np.exp(xlog1py(m - 1, -p))).sum())
""",
        """
import math


def expected_unique_fraction(cell_probs, m):
    probs = [float(x) for x in np.ravel(cell_probs)]
    if not probs or any(not math.isfinite(x) or x < 0 for x in probs) or abs(math.fsum(probs) - 1) > 1e-9:
        raise ValueError("bad cell_probs")
    if int(m) != m or m < 1:
        raise ValueError("bad m")
    if m == 1:
        return 1.0 * math.fsum(probs)
    total = 0.0
    for x in probs:
        if x < 1:
            total += x * math.exp((m - 1) * math.log1p(-x))
    return float(total)
""",
    ],
    "link": [
        """
import re


def link(medical, voters, quasi_identifiers):
    cols = list(quasi_identifiers)
    n_med, n_vot = len(medical["diagnosis"]), len(voters["name"])
    voters_of = {}
    patients_of = {}
    for i in range(n_med):
        rx = [re.compile(re.escape(str(medical[c][i])).replace("\\\\*", ".")) for c in cols]
        for j in range(n_vot):
            if all(r.fullmatch(str(voters[c][j])) for r, c in zip(rx, cols)):
                voters_of.setdefault(i, []).append(j)
                patients_of.setdefault(j, []).append(i)
    out = {}
    for i, js in voters_of.items():
        if len(js) == 1 and len(patients_of[js[0]]) == 1:
            out[str(voters["name"][js[0]])] = str(medical["diagnosis"][i])
    return out
""",
        """
def link(medical, voters, quasi_identifiers):
    fit = np.ones((len(medical["diagnosis"]), len(voters["name"])), dtype=bool)
    for c in quasi_identifiers:
        pats = [str(x) for x in np.asarray(medical[c]).tolist()]
        vals = [str(x) for x in np.asarray(voters[c]).tolist()]
        col = np.zeros_like(fit)
        for i, p in enumerate(pats):
            for j, v in enumerate(vals):
                col[i, j] = len(p) == len(v) and all(a in ("*", b) for a, b in zip(p, v))
        fit &= col
    rows, cols = fit.sum(axis=1), fit.sum(axis=0)
    out = {}
    for i in np.flatnonzero(rows == 1):
        j = int(np.argmax(fit[i]))
        if cols[j] == 1:
            out[str(voters["name"][j])] = str(medical["diagnosis"][i])
    return out
""",
    ],
    "unhash_medallions": [
        """
def unhash_medallions(hashed, known_index, known_medallion):
    target = str(hashed[known_index])
    salt = None
    for a in string.ascii_uppercase:
        for b in string.ascii_uppercase:
            for c in string.ascii_uppercase:
                if hashlib.md5(f"{a}{b}{c}{known_medallion}".encode()).hexdigest() == target:
                    salt = a + b + c
    table = {}
    for d1 in string.digits:
        for l1 in string.ascii_uppercase:
            for d2 in string.digits:
                for d3 in string.digits:
                    m = d1 + l1 + d2 + d3
                    table[hashlib.md5((salt + m).encode()).hexdigest()] = m
    for a in string.ascii_uppercase:
        for b in string.ascii_uppercase:
            for n in range(1000):
                m = f"{a}{b}{n:03d}"
                table[hashlib.md5((salt + m).encode()).hexdigest()] = m
    return [table[h] if h in table else None for h in (str(x) for x in hashed)]
""",
        """
def unhash_medallions(hashed, known_index, known_medallion):
    wanted = {str(h) for h in hashed}
    digits, letters = string.digits, string.ascii_uppercase
    salts = ("".join(t) for t in itertools.product(letters, letters, letters))
    salt = next(s for s in salts if hashlib.md5((s + known_medallion).encode("ascii")).hexdigest() == str(hashed[known_index]))
    found = {}
    for parts in itertools.chain(itertools.product(digits, letters, digits, digits),
                                 itertools.product(letters, letters, digits, digits, digits)):
        m = "".join(parts)
        h = hashlib.md5((salt + m).encode("ascii")).hexdigest()
        if h in wanted:
            found[h] = m
    return [found.get(str(h)) for h in hashed]
""",
    ],
    "similarity_scores": [
        # inverse support as the weight, the two closeness terms multiplied, minus 0.1; a loop over films
        """
def similarity_scores(aux_items, aux_ratings, aux_days, ratings, days):
    scores = np.zeros(ratings.shape[0])
    for item, stars, day in zip(np.asarray(aux_items, dtype=int), aux_ratings, aux_days):
        rated = ratings[:, item] > 0
        weight = 1.0 / int(rated.sum()) if rated.any() else 0.0
        near = np.exp(-np.abs(ratings[:, item] - float(stars))) * np.exp(-np.abs(days[:, item] - float(day)) / 20.0)
        scores += np.where(rated, weight * (near - 0.1), 0.0)
    return scores
""",
        # log10 inverse frequency, the paper's two closeness terms minus 1.138 (the narrow window)
        """
def similarity_scores(aux_items, aux_ratings, aux_days, ratings, days):
    items = np.asarray(aux_items, dtype=int)
    R = ratings[:, items].astype(float)
    Dd = days[:, items].astype(float)
    rated = R > 0
    w = 1.0 / np.log10(1.0 + np.maximum(rated.sum(axis=0), 1))
    near_r = np.exp(-np.abs(R - np.asarray(aux_ratings, float)[None, :]) / 1.5)
    near_d = np.exp(-np.abs(Dd - np.asarray(aux_days, float)[None, :]) / 30.0)
    return ((near_r + near_d - 1.138) * rated) @ w
""",
    ],
    "k_anonymity": [
        """
def k_anonymity(table, quasi_identifiers, max_suppressed=0):
    if max_suppressed < 0 or int(max_suppressed) != max_suppressed:
        raise ValueError("max_suppressed must be an integer >= 0")
    keys = list(zip(*(np.asarray(table[c]).tolist() for c in quasi_identifiers)))
    sizes = np.array(list(Counter(keys).values()))
    feasible = [k for k in range(1, int(sizes.max()) + 1) if sizes[sizes < k].sum() <= max_suppressed]
    return int(max(feasible))
""",
        """
def k_anonymity(table, quasi_identifiers, max_suppressed=0):
    if not max_suppressed >= 0:
        raise ValueError("negative budget")
    cols = [np.asarray(table[c]).tolist() for c in quasi_identifiers]
    sizes = sorted(Counter(zip(*cols)).values(), reverse=True)   # largest first
    kept = len(sizes)
    spent = sum(sizes)
    # keep the j largest classes: cost = everything else, k = the j-th largest size
    best = sizes[-1]
    for j in range(1, len(sizes) + 1):
        cost = sum(sizes[j:])
        if cost <= max_suppressed:
            best = max(best, sizes[j - 1])
    return int(best)
""",
    ],
    "exact_audience_size": [
        """
def exact_audience_size(estimates, step):
    shown = [(j, e) for j, e in enumerate(estimates) if e is not None]
    for (j0, e0), (j1, e1) in zip(shown, shown[1:]):
        if j1 == j0 + 1 and e1 != e0:
            # e1 = m * step is first shown at the smallest count that rounds up to it
            first = next(x for x in range(e1 - step, e1 + 1) if 2 * (x - (e1 - step)) >= step)
            return int(first) - j1
    raise ValueError("pad with more accounts")
""",
        """
def exact_audience_size(estimates, step):
    est = list(estimates)

    def shown(x):  # the platform's rule, threshold aside
        return step * ((2 * x + step) // (2 * step))

    top = max(e for e in est if e is not None)
    fits = [
        s
        for s in range(0, top + step + 1)
        if all(e is None or shown(s + j) == e for j, e in enumerate(est))
    ]
    if len(fits) != 1:
        raise ValueError("not enough padding")
    return int(fits[0])
""",
    ],
    "count_age_tuples": [
        """
def count_age_tuples(count, median, mean, max_age):
    total = mean * count
    if abs(total - round(total)) > 1e-9:
        return 0
    total = int(round(total))
    ways = 0
    if count == 1:
        return int(total == median and 0 <= total <= max_age)
    if count == 2:
        return int(sum(1 for a in range(max_age + 1) for b in [total - a] if a <= b <= max_age and abs((a + b) / 2 - median) < 1e-9))
    if count == 3:
        m = median
        if m != int(m):
            return 0
        m = int(m)
        return int(sum(1 for a in range(0, m + 1) if m <= total - m - a <= max_age))
    for b in range(max_age + 1):                      # count == 4: the two middle ages b <= c
        c2 = 2 * median - b
        if abs(c2 - round(c2)) > 1e-9:
            continue
        c = int(round(c2))
        if c < b or c > max_age:
            continue
        rest = total - b - c                           # a + d with 0 <= a <= b and c <= d <= max_age
        ways += sum(1 for a in range(0, b + 1) if c <= rest - a <= max_age)
    return int(ways)
""",
        """
def count_age_tuples(count, median, mean, max_age):
    target = mean * count
    if abs(target - round(target)) > 1e-9:
        return 0
    target = int(round(target))

    def tuples(k, low, budget):
        if k == 0:
            if budget == 0:
                yield ()
            return
        for a in range(low, max_age + 1):
            if a * k > budget:
                break
            for rest in tuples(k - 1, a, budget - a):
                yield (a,) + rest

    def med(t):
        h = len(t) // 2
        return t[h] if len(t) % 2 else (t[h - 1] + t[h]) / 2

    return sum(1 for t in tuples(count, 0, target) if abs(med(t) - median) < 1e-9)
""",
    ],
}

# ------------------------------------------------------------------------------------- grading

PROBE = Probe(NAME, EXERCISES, WRONG, ALTERNATIVES, seeds=range(5), dropped=frozenset(DROPPED))
install(PROBE, globals())  # the fixture and the three tests: tests/support/notebook_probes.py
