"""The explicit public API in dplib/__init__.py resolves, and each name is public where defined."""

import importlib

import pytest

import dplib


@pytest.mark.parametrize("name", sorted(dplib._EXPORTS))
def test_every_exported_name_resolves_to_its_module_definition(name):
    module = importlib.import_module(dplib._EXPORTS[name])
    assert name in module.__all__, f"{name} is exported by dplib but not in {module.__name__}.__all__"
    assert getattr(dplib, name) is getattr(module, name)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'laplace'"):
        dplib.laplace  # noqa: B018


def test_dir_lists_the_api():
    assert {"laplace_mechanism", "PrivacyAccountant", "testing"} <= set(dir(dplib))
