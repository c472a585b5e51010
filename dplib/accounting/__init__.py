"""Privacy accounting: budgets, composition theorems, Renyi DP and privacy-loss distributions."""

from dplib.accounting.accountant import PrivacyAccountant, Spend

__all__ = ["PrivacyAccountant", "Spend"]
