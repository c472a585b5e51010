"""pyproject.toml and environment.yml list the same packages, and the pins satisfy the ranges."""

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def _pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    for extra in ("course", "hub", "browser", "dev"):
        requirements += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return {r.name.lower(): r for r in requirements if r.name != "dplib"}


def _conda_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "environment.yml").read_text().splitlines():
        # conda =, pip == (a pip line may end in an environment marker: "; sys_platform == ...")
        match = re.fullmatch(r"\s*-\s+([A-Za-z0-9_.\-]+)==?([0-9.]+)\s*(?:;.*)?", line)
        if match:
            pins[match.group(1).lower()] = match.group(2)
    return pins


def test_same_packages_in_both_files():
    pins = _conda_pins()
    pins.pop("python")
    assert set(pins) == set(_pyproject_requirements())


def test_conda_pins_satisfy_pyproject_ranges():
    requirements = _pyproject_requirements()
    for name, pin in _conda_pins().items():
        if name == "python":
            continue
        assert requirements[name].specifier.contains(Version(pin + ".0")), (name, pin)


def test_python_version_agrees():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert Version(_conda_pins()["python"] + ".0") in Requirement(f"python{project['requires-python']}").specifier


def test_environment_installs_dplib_editable():
    assert re.search(r"^\s*-\s+-e \.\s*$", (ROOT / "environment.yml").read_text(), re.M)


def test_importing_nbformat_builds_no_iri_parsers():
    """Every grader, hub service and nbgrader command imports nbformat; with jsonschema 4.25 or
    later that imports rfc3987-syntax, which builds 35 Earley parsers (0.8 s of CPU) for formats
    no notebook schema uses. pyproject.toml keeps jsonschema below it."""
    import subprocess
    import sys

    probe = "import sys, nbformat; print('rfc3987_syntax' in sys.modules, 'lark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"], done.stdout


def test_the_readmes_layout_names_every_package_and_names_only_what_exists():
    """The README's map of the tree (its ``## Layout`` block): every package of dplib and
    coursetools, and every module at coursetools' root, is named there (``name/`` or ``name.py``),
    and every folder or file the block names at the top level exists."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    named = set(re.findall(r"([A-Za-z_][\w.-]*/|[A-Za-z_][\w-]*\.(?:py|md|toml|yml|txt))", block))
    packages = {
        f"{init.parent.name}/"
        for top in ("dplib", "coursetools")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    root_modules = {p.name for p in (ROOT / "coursetools").glob("*.py") if not p.name.startswith("_")}
    missing = sorted((packages | root_modules) - named)
    assert not missing, f"the README's layout does not name {missing}"
    tops = [line.split()[0] for line in block.splitlines() if line and not line.startswith(" ")]
    assert all((ROOT / name.rstrip("/")).exists() for name in tops), tops
