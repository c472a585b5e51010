"""Reference figures from independent implementations, shared by the accounting tests.

dp-accounting 0.6.0 (Google), computed once in a separate environment (dplib's tests do not need
it installed): RdpAccountant(orders=DEFAULT_RDP_ORDERS) and PLDAccountant()
(value_discretization_interval=1e-4, ADD_OR_REMOVE_ONE), each composed with
SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(sigma)), steps), then
get_epsilon_and_optimal_order(1e-5) / get_epsilon(1e-5).
"""

from typing import NamedTuple


class DpsgdSetting(NamedTuple):
    name: str
    q: float
    sigma: float
    steps: int
    rdp_epsilon: float
    rdp_order: float
    pld_epsilon: float


DELTA = 1e-5

DP_ACCOUNTING_DPSGD = [
    DpsgdSetting("mnist", 256 / 60000, 1.1, 14062, 2.5965558697943036, 8.1, 2.3816860032302603),
    DpsgdSetting("q0.01_s1", 0.01, 1.0, 1000, 2.101366525420273, 7.8, 1.8282436461194622),
    DpsgdSetting("q1_s1", 1.0, 1.0, 1, 4.728507067217623, 5.4, 4.377178100047932),
    DpsgdSetting("q0.001_s4", 0.001, 4.0, 10000, 0.08622744109193696, 128.0, 0.07763631171031687),
    DpsgdSetting("q0.1_s0.7", 0.1, 0.7, 100, 16.439431469513035, 2.1, 14.592362367941357),
    DpsgdSetting("q0.02_s0.5", 0.02, 0.5, 5000, 69.9072409110725, 1.4, 61.00563502970497),
]
MNIST = DP_ACCOUNTING_DPSGD[0]
