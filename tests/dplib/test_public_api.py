"""The explicit public API in dplib/__init__.py resolves, and each name is public where defined."""

import importlib

import pytest

import dplib


@pytest.mark.parametrize("name", sorted(dplib._EXPORTS))
def test_every_exported_name_resolves_to_its_module_definition(name):
    module = importlib.import_module(dplib._EXPORTS[name])
    assert name in module.__all__, (
        f"{name} is exported by dplib but not in {module.__name__}.__all__"
    )
    assert getattr(dplib, name) is getattr(module, name)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'laplace'"):
        dplib.laplace  # noqa: B018


def test_dir_lists_the_api():
    assert {"laplace_mechanism", "PrivacyAccountant", "testing"} <= set(dir(dplib))


def _catalogue_items() -> list[str]:
    """The first word of each comma-separated item of the module docstring's catalogue."""
    import re

    catalogue = (
        "Mechanisms\n" + dplib.__doc__.partition("\nMechanisms\n")[2].split("\nSubpackages,")[0]
    )
    items = []
    for line in catalogue.splitlines():
        if line.startswith("    "):
            text = re.sub(r"\([^)]*\)?", "", line)  # annotations in parentheses
            items += [part.split()[0] for part in re.split(r",|;| and ", text) if part.split()]
    return items


def test_the_catalogue_in_dplibs_docstring_lists_exactly_the_exported_names():
    import re

    doc = dplib.__doc__
    missing = [n for n in dplib._EXPORTS if not re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", doc)]
    assert missing == [], f"exported but not in help(dplib)'s catalogue: {missing}"
    words = {"the", "privacy", "events"}  # "the privacy events PureDpEvent, ..."
    stale = [
        w
        for w in _catalogue_items()
        if w not in dplib._EXPORTS and w not in words and not w.startswith("dplib.")
    ]
    assert stale == [], f"in the catalogue but not exported: {stale}"
