"""Tests of coursetools.paths: the one computation of the repository's root."""

from __future__ import annotations

import ast
from pathlib import Path

import coursetools
from coursetools import paths


def test_the_root_is_the_checkout_that_holds_the_packages_and_the_notebooks():
    assert paths.ROOT == Path(coursetools.__file__).resolve().parents[1]
    assert (paths.ROOT / "dplib" / "__init__.py").is_file()
    assert paths.SOLUTIONS.is_dir() and paths.NBGRADER_CONFIG.is_file() and paths.DEPLOY.is_dir()
    for named in (paths.BUILD, paths.NOTEBOOKS, paths.BOOK_OUT, paths.BOOK_CACHE):
        assert paths.ROOT in named.parents


def test_no_other_module_computes_the_root_from_its_own_file():
    # ``Path(__file__).resolve().parents[n]`` (or ``.parent.parent``) anywhere else would be a
    # second root; a module's own folder (``Path(__file__).parent``, its assets) is its own
    offenders = []
    for path in sorted((paths.ROOT / "coursetools").rglob("*.py")):
        if path.name == "paths.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            climbs = (isinstance(node, ast.Attribute) and node.attr == "parents") or (
                isinstance(node, ast.Attribute)
                and node.attr == "parent"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "parent"
            )
            if climbs:
                text = ast.unparse(node)
                if "__file__" in text:
                    offenders.append(f"{path.relative_to(paths.ROOT)}: {text}")
    assert offenders == []
