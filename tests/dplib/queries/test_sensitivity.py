"""L1 sensitivity of a workload of linear queries answered on a histogram.

Reference: Li, Hay, Rastogi, Miklau & McGregor (2010), "Optimizing linear counting queries under
differential privacy", Proposition 2: under add/remove neighbours the L1 sensitivity of the
workload matrix W is the largest L1 norm of one of its columns. Closed forms used below: the
identity workload (a histogram) has sensitivity 1 (add/remove) and 2 (replace-one), as
dplib.histogram_sensitivity; the d prefix queries have d (every prefix holds the first element);
the d(d+1)/2 range queries of a domain of size d have max_j j (d - j + 1) (Hay, Rastogi, Miklau &
Suciu 2010, Section 3: the element j lies in j (d - j + 1) ranges).
"""

import numpy as np
import pytest

from dplib import histogram_sensitivity, linear_query_sensitivity


def _all_ranges(d):
    return np.array([[1.0 if a <= j <= b else 0.0 for j in range(d)] for a in range(d) for b in range(a, d)])


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace"])
def test_identity_is_a_histogram(neighbouring):
    assert linear_query_sensitivity(np.eye(7), neighbouring) == histogram_sensitivity(neighbouring)


def test_prefix_queries():
    d = 9
    prefixes = np.tril(np.ones((d, d)))
    assert linear_query_sensitivity(prefixes) == d
    # replace-one: moving a person from element 0 (in all d prefixes) to element d-1 (in one)
    assert linear_query_sensitivity(prefixes, "replace") == d - 1


@pytest.mark.parametrize("d", [1, 2, 5, 10, 17])
def test_all_range_queries(d):
    expected = max((j + 1) * (d - j) for j in range(d))
    assert linear_query_sensitivity(_all_ranges(d)) == expected


def test_replace_is_the_largest_column_difference_and_at_most_twice_add_remove():
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = rng.uniform(0, 1, size=(rng.integers(1, 8), rng.integers(2, 8)))
        brute = max(np.abs(q[:, j] - q[:, k]).sum() for j in range(q.shape[1]) for k in range(q.shape[1]))
        assert linear_query_sensitivity(q, "replace") == pytest.approx(brute, rel=1e-12)
        assert linear_query_sensitivity(q, "replace") <= 2 * linear_query_sensitivity(q) + 1e-12


def test_single_domain_element_under_replace_is_zero():
    # one possible record: replacing it by another record changes nothing
    assert linear_query_sensitivity([[1.0], [0.5]], "replace") == 0.0


def test_signed_weights_use_absolute_values():
    assert linear_query_sensitivity([[1.0, -2.0], [-3.0, 0.5]]) == 4.0


@pytest.mark.parametrize(
    ("queries", "neighbouring", "exc", "match"),
    [
        ([1.0, 0.0], "add_remove", ValueError, "2-d"),
        ([[1.0, np.nan]], "add_remove", ValueError, "queries"),
        ([[1.0, np.inf]], "add_remove", ValueError, "queries"),
        (np.zeros((0, 3)), "add_remove", ValueError, "queries"),
        ([["a", "b"]], "add_remove", TypeError, "queries"),
        ([[1.0]], "bounded", ValueError, "neighbouring"),
        ([[1.0]], None, TypeError, "neighbouring"),
    ],
)
def test_bad_input_refused(queries, neighbouring, exc, match):
    with pytest.raises(exc, match=match):
        linear_query_sensitivity(queries, neighbouring)


def test_replace_refuses_a_workload_too_large_to_compare_every_pair():
    # 1 x 65536 and 64 x 65536 hung inside the old cap (d <= 65536, d * d * m work).
    # The cap is now on the work of the cheaper exact method: 64 x 65536 is refused at once ...
    with pytest.raises(ValueError, match=r"queries is too large for neighbouring='replace'"):
        linear_query_sensitivity(np.zeros((64, 65_536)), "replace")
    # ... and one row of any width is max - min (its 2**0 sign vector), 70000 columns included
    row = np.zeros((1, 70_000))
    row[0, 5], row[0, 9] = 3.0, -1.5
    assert linear_query_sensitivity(row, "replace") == 4.5


def test_sign_vectors_give_the_pairwise_l1_diameter():
    # ||x||_1 = max_s s.x over s in {-1, 1}^m: the projection method equals the brute force over
    # every pair of columns (to rounding), including when it is the one chosen (d > 2**(m-1))
    from dplib.queries.sensitivity import _l1_diameter_by_signs

    rng = np.random.default_rng(5)
    for m, d in ((1, 7), (3, 40), (6, 50), (9, 30)):
        w = rng.normal(size=(m, d))
        brute = max(float(np.abs(w - w[:, j : j + 1]).sum(axis=0).max()) for j in range(d))
        assert _l1_diameter_by_signs(w) == pytest.approx(brute, rel=1e-12)
        assert linear_query_sensitivity(w, "replace") == pytest.approx(brute, rel=1e-12)
