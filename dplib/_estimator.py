"""The scikit-learn estimator protocol for dplib's models, without depending on scikit-learn.

``get_params`` / ``set_params`` read the constructor's signature, so ``sklearn.base.clone``,
grid searches and pipelines work with :class:`dplib.DPNaiveBayes` and
:class:`dplib.DPSGDClassifier` (scikit-learn's "Developing estimators" guide: ``__init__`` only
stores its arguments under the same names).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

__all__ = ["ClassifierProtocol"]


class ClassifierProtocol:
    """Mixin: ``get_params``, ``set_params``, ``score`` (accuracy) and a readable ``repr``."""

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [name for name in signature.parameters if name != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments (scikit-learn's estimator protocol)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Any:
        """Set constructor arguments (scikit-learn's estimator protocol); unknown names are refused."""
        valid = self._param_names()
        for key in params:
            if key not in valid:
                raise ValueError(
                    f"invalid parameter {key!r} for {type(self).__name__}; valid ones: {sorted(valid)}"
                )
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def score(self, X: Any, y: Any) -> float:
        """Accuracy of ``predict(X)`` against ``y``."""
        return float(np.mean(self.predict(X) == np.asarray(y)))  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        # Like scikit-learn: only the arguments that differ from their defaults.
        defaults = inspect.signature(type(self).__init__).parameters
        shown = []
        for name, value in self.get_params().items():
            default = defaults[name].default
            differs = default is inspect.Parameter.empty or not _same(value, default)
            if differs:
                text = "..." if isinstance(value, np.ndarray) else repr(value)
                shown.append(f"{name}={text}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _same(value: Any, default: Any) -> bool:
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # arrays compare elementwise
        return False
