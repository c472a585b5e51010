"""Privacy auditing: membership inference, empirical lower bounds on ε, one-run canary audits.

One job per module:

- :mod:`~dplib.auditing.membership` -- the loss-threshold membership-inference attack (Yeom et
  al. 2018) and numpy ROC curves and AUC;
- :mod:`~dplib.auditing.lower_bounds` -- ε lower bounds from an attack's false positives and
  negatives with Clopper-Pearson confidence (Jagielski, Ullman, Oprea 2020), and a black-box
  audit of a mechanism on two neighbouring inputs;
- :mod:`~dplib.auditing.canaries` -- privacy auditing with one training run (Steinke, Nasr,
  Jagielski 2023): canaries included with probability 1/2, guesses, and the ε they refute.

An audit can only ever show that a claim is *false* (its lower bound exceeds the claimed ε);
a bound below the claim is consistent with it, not a proof of it.
"""

from dplib.auditing.canaries import (
    OneRunAudit,
    audit_one_run,
    audit_training_one_run,
    canary_inclusion,
    one_run_epsilon_lower_bound,
    one_run_guesses,
    one_run_p_value,
    random_canaries,
)
from dplib.auditing.lower_bounds import MechanismAudit, audit_mechanism, epsilon_lower_bound
from dplib.auditing.membership import auc, example_losses, loss_threshold_attack, roc_curve

__all__ = [
    "MechanismAudit",
    "OneRunAudit",
    "auc",
    "audit_mechanism",
    "audit_one_run",
    "audit_training_one_run",
    "canary_inclusion",
    "epsilon_lower_bound",
    "example_losses",
    "loss_threshold_attack",
    "one_run_epsilon_lower_bound",
    "one_run_guesses",
    "one_run_p_value",
    "random_canaries",
    "roc_curve",
]
