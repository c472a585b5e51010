"""Generate an example class of submissions from the real source notebooks.

The regular students (``ada_full``, ``bob_partial``, ``cy_blank``) are
:mod:`coursetools.authoring.example_class`'s, re-exported here; ``make course`` writes them into
``build/example-class/`` at build time. :func:`make_hostile` adds submissions that attack the grader (an endless loop, a kernel that
exits, memory exhaustion, tampered tests, monkeypatched checkers, warnings, invalid JSON, a
missing notebook, snooping on the instructor's files). Their expected grades depend on the
notebook, so ``tests/coursetools/grading/test_grade.py`` runs them on the pilot fixture, where they are known.

Usage: ``python examples/make_class.py SOURCE_DIR OUT_DIR``.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coursetools.authoring.example_class import (  # noqa: E402
    STUDENTS,
    answered,
    make_class,
    solution_text,
    student_notebooks,
)
from coursetools.authoring.release import notebook_bytes, release_notebook  # noqa: E402

__all__ = ["STUDENTS", "answered", "make_class", "make_hostile", "solution_text", "student_notebooks"]
_answered, _solution_text = answered, solution_text  # the names the hostile suite uses

# ------------------------------------------------------------------------ the hostile students


def _with_cell_before(nb, grade_id: str, code: str, *, inside: bool = False):
    """Prepend ``code`` to the answer cell ``grade_id`` (inside) or add a cell before it."""
    nb = copy.deepcopy(nb)
    for i, cell in enumerate(nb.cells):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            if inside:
                cell.source = code + "\n" + cell.source
            else:
                nb.cells.insert(i, nbformat.v4.new_code_cell(code))
            return nb
    raise KeyError(grade_id)


def _cell(nb, grade_id: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def make_hostile(source_path: Path, out: Path, *, probe_paths: list[str] = ()) -> dict[str, str]:
    """Hostile submissions for the pilot notebook (answers ``clamp``, ``validate_epsilon``,
    ``rr_estimate``, tests ``*_tests``). Returns {student: what it does}."""
    name = source_path.stem
    source = nbformat.read(source_path, as_version=4)
    full = _answered(source, release_notebook(source, name), 1.0)
    cases: dict[str, tuple[str, object]] = {}

    # An endless loop in the first answer cell: that cell is stopped at the cell timeout (its
    # function is never defined, so the clamp tests fail); the rest is graded.
    cases["h_loop"] = (
        "endless loop in the clamp cell",
        _with_cell_before(full, "clamp", "while True:\n    pass", inside=True),
    )

    # The kernel exits in the second answer cell: restarted, the rest is graded.
    cases["h_exit"] = (
        "os._exit in the validate_epsilon cell",
        _with_cell_before(full, "validate_epsilon", "import os\nos._exit(1)", inside=True),
    )

    # Memory exhaustion inside rr_estimate: the address-space limit makes it a MemoryError.
    nb = copy.deepcopy(full)
    _cell(nb, "rr_estimate").source = (
        "def rr_estimate(answers, p):\n    hog = np.ones(2**36)  # 512 GiB\n"
        "    return (np.mean(answers) - (1 - p) / 2) / p"
    )
    cases["h_oom"] = ("allocates 512 GiB in rr_estimate", nb)

    # Test cells tampered with: clamp is wrong but its test cell was emptied; validate_epsilon
    # is wrong and its test cell deleted; rr_estimate is right and its test cell pasted twice
    # (duplicate grade_id), the copy edited to always pass.
    nb = copy.deepcopy(full)
    _cell(nb, "clamp").source = "def clamp(x, lower, upper):\n    return x"
    _cell(nb, "clamp_tests").source = "pass"
    _cell(nb, "validate_epsilon").source = "def validate_epsilon(epsilon):\n    return epsilon"
    nb.cells = [
        c
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") != "validate_epsilon_tests"
    ]
    tests = _cell(nb, "rr_estimate_tests")
    twin = copy.deepcopy(tests)
    twin.source = "assert True"
    twin.id = "twin"
    nb.cells.insert(nb.cells.index(tests) + 1, twin)
    cases["h_tamper"] = ("tests emptied, deleted and pasted twice", nb)

    # Monkeypatched checkers and a kernel turned against the grader: every answer is wrong, but
    # the helpers a test would use are patched to pass (numpy.testing, np.allclose, a code-object
    # swap, builtins), IPython's error display is silenced, an AST transformer swallows every
    # error, a raw _thread keeps re-patching, the hidden tests' helpers module is replaced (the
    # kernel cannot import it, so it is planted). None of it is in the process that runs the tests.
    nb = copy.deepcopy(full)
    _cell(nb, "clamp").source = (
        "import ast, builtins, _thread, time, sys, types\nimport numpy.testing\n"
        "def clamp(x, lower, upper):\n    return np.asarray(x, dtype=float)\n"
        "np.testing.assert_allclose = lambda *a, **k: None\n"
        "np.allclose = lambda *a, **k: True\n"
        "numpy.testing.assert_allclose.__code__ = (lambda *a, **k: None).__code__\n"
        "builtins.abs = lambda x: 0\n"
        "builtins.AssertionError = type('AssertionError', (Exception,), {})\n"
        "_helpers = 'coursetools.authoring.hidden_tests'\n"
        "sys.modules[_helpers] = types.ModuleType(_helpers)\n"
        "def _repatch():\n    while True:\n        np.allclose = lambda *a, **k: True\n"
        "        time.sleep(0.001)\n"
        "_thread.start_new_thread(_repatch, ())\n"
        "class Swallow(ast.NodeTransformer):\n"
        "    def visit_Module(self, node):\n"
        "        body = node.body or [ast.Pass()]\n"
        "        handler = ast.ExceptHandler(type=ast.Name('BaseException', ast.Load()), name=None, body=[ast.Pass()])\n"
        "        node.body = [ast.Try(body=body, handlers=[handler], orelse=[], finalbody=[])]\n"
        "        return ast.fix_missing_locations(node)\n"
        "get_ipython().ast_transformers.append(Swallow())\n"
        "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n"
        "get_ipython().showtraceback = lambda *a, **k: None"
    )
    _cell(nb, "validate_epsilon").source = (
        "import dplib._validation\n"
        "def validate_epsilon(epsilon):\n    return dplib._validation.check_epsilon(epsilon)"
    )
    _cell(nb, "rr_estimate").source = "def rr_estimate(answers, p):\n    return np.mean(answers)"
    cases["h_patch"] = ("monkeypatched checkers and kernel, wrong answers", nb)

    # Around the ban: copies of the banned function's code object, a lazy object that calls it
    # when the test converts the result, the function fetched from the module's source file.
    nb = copy.deepcopy(full)
    _cell(nb, "validate_epsilon").source = (
        "import types, inspect, dplib._validation as _v\n"
        "_copy = types.FunctionType(_v.check_epsilon.__code__, _v.__dict__)\n"
        "class _Lazy(float):\n"
        "    def __new__(cls, e):\n        return float.__new__(cls, 0.0)\n"
        "    def __init__(self, e):\n        self.e = e\n"
        "    def __float__(self):\n        return _v.check_epsilon(self.e)\n"
        "    def __eq__(self, other):\n        return _v.check_epsilon(self.e) == other\n"
        "def validate_epsilon(epsilon):\n"
        "    try:\n        src = inspect.getsource(_v)\n        ns = {}\n"
        "        exec(compile(src, 'x', 'exec'), ns)\n        return ns['check_epsilon'](epsilon)\n"
        "    except Exception:\n        pass\n"
        "    try:\n        return _copy(epsilon)\n    except Exception:\n        return _Lazy(epsilon)\n"
    )
    cases["h_ban"] = ("calls the banned function through copies and lazy objects", nb)

    # Configuration handed in beside an untouched release: an IPython startup file, a profile
    # config, a module named like the kernel launcher and sitecustomize. If any of them ran, it
    # would define the right answers after every cell.
    nb = copy.deepcopy(release_notebook(source, name))
    right = "\n\n".join(
        _solution_text(c.source) for c in source.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    )
    planted = (
        "import numpy as np\n" + right + "\n"
        "def _answers(*a, **k):\n    get_ipython().user_ns.update(clamp=clamp, validate_epsilon=validate_epsilon, rr_estimate=rr_estimate)\n"
        "get_ipython().events.register('post_run_cell', _answers)\n"
    )
    cases["h_config"] = ("an untouched release with startup files and shadowing modules", nb)
    extra_files = {
        "h_config": {
            ".ipython/profile_default/startup/00-answers.py": planted,
            ".ipython/profile_default/ipython_config.py": "c.InteractiveShellApp.exec_lines = ['import numpy']\n",
            "ipython_config.py": "c = get_config()\n",
            "ipykernel_launcher.py": planted,
            "sitecustomize.py": planted,
            "IPython.py": planted,
        }
    }

    # The same from inside: a cell writes startup files wherever a kernel might look and kills
    # its kernel so that the next one would read them.
    nb = copy.deepcopy(release_notebook(source, name))
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "import os, sys\nPLANT = " + repr(planted) + "\n"
            "for base in {os.environ.get('IPYTHONDIR', ''), os.path.expanduser('~/.ipython'), '/tmp/.ipython', os.getcwd() + '/.ipython'}:\n"
            "    try:\n"
            "        d = os.path.join(base, 'profile_default', 'startup')\n"
            "        os.makedirs(d, exist_ok=True)\n"
            "        open(os.path.join(d, '00-answers.py'), 'w').write(PLANT)\n"
            "    except OSError:\n        pass\n"
            "for d in sys.path:\n"
            "    try:\n        open(os.path.join(d, 'sitecustomize.py'), 'w').write(PLANT)\n"
            "    except OSError:\n        pass\n"
            "if not os.path.exists(os.path.expanduser('~/.killed')):\n"
            "    open(os.path.expanduser('~/.killed'), 'w').close()\n"
            "    os._exit(1)\n"
        ),
    )
    cases["h_startup"] = ("plants startup files and kills its kernel", nb)

    # Forged messages: each function sends the grader a forged "idle" status and a forged execute
    # reply saying all went well, then raises.
    nb = copy.deepcopy(full)
    forge = (
        "def _forge():\n"
        "    k = get_ipython().kernel\n"
        "    parent = k.get_parent('shell')\n"
        "    k.session.send(k.iopub_socket, 'status', {'execution_state': 'idle'}, parent=parent)\n"
        "    ident = k._parent_ident.get('shell') if isinstance(k._parent_ident, dict) else k._parent_ident\n"
        "    k.session.send(k.shell_stream, 'execute_reply', {'status': 'ok', 'user_expressions': {'r': {'status': 'ok', 'data': {'application/x-coursetools-reply': '{\"ok\":true,\"value\":null}'}}}}, parent=parent, ident=ident)\n"
        "    raise ValueError('forged')\n"
    )
    _cell(nb, "clamp").source = forge + "def clamp(x, lower, upper):\n    _forge()\n"
    _cell(nb, "validate_epsilon").source = "def validate_epsilon(epsilon):\n    _forge()\n"
    _cell(nb, "rr_estimate").source = "def rr_estimate(answers, p):\n    _forge()\n"
    cases["h_forge"] = ("forges the kernel's idle status and replies", nb)

    # Leaking the hidden tests: every answer searches its stack frames, the garbage collector and
    # every readable file for the hidden tests' text, and raises an exception whose class name
    # and message hold what it found and a canary the feedback must never show.
    nb = copy.deepcopy(full)
    _cell(nb, "clamp").source = (
        "import gc, os, sys\n"
        "CANARY = 'STUDENT-CANARY-7f3a'\n"
        "def _loot():\n"
        "    found = [CANARY]\n"
        "    f = sys._getframe()\n"
        "    while f is not None:\n"
        "        found += [repr(v)[:200] for v in list(f.f_locals.values()) + list(f.f_code.co_consts)]\n"
        "        f = f.f_back\n"
        "    found += [o for o in gc.get_objects() if isinstance(o, str) and 'HIDDEN' in o][:50]\n"
        "    import time\n"
        "    deadline = time.monotonic() + 2\n"
        "    for root in ('.', os.path.expanduser('~'), '/tmp', '..'):\n"
        "        for dirpath, dirs, files in os.walk(root):\n"
        "            if time.monotonic() > deadline:\n"
        "                break\n"
        "            for n in files[:50]:\n"
        "                try:\n                    found.append(open(os.path.join(dirpath, n), errors='replace').read(4000))\n"
        "                except OSError:\n                    pass\n"
        "    return '\\n'.join(found)[:1_000_000]  # a leak, not a flood (h_flood is that)\n"
        "def clamp(x, lower, upper):\n"
        "    loot = _loot()\n"
        "    print(loot)\n"
        "    raise type('Leak_' + CANARY.replace('-', '_'), (ValueError,), {})(loot)\n"
    )
    _cell(nb, "validate_epsilon").source = (
        "def validate_epsilon(epsilon):\n    return CANARY + _loot()\n"
    )
    cases["h_leak"] = ("raises exceptions and returns strings holding what it can find", nb)

    # Symbolic links in place of everything the grader made for the kernel: sockets, the kernel's
    # connection file, the workspace's contents, pointing at a canary directory outside; then the
    # kernel dies so the grader, as root, restarts it and cleans up. Runs after the last test.
    nb = copy.deepcopy(full)
    canary = probe_paths[0] if probe_paths else "/nonexistent"
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import os, glob, json\n"
            f"CANARY = {canary!r}\n"
            "targets = [os.path.join(CANARY, 'victim.txt'), CANARY]\n"
            "cf = [a for a in os.popen('cat /proc/self/cmdline').read().split(chr(0)) if a.endswith('.json')]\n"
            "run = os.path.dirname(cf[0]) if cf else os.environ.get('JUPYTER_RUNTIME_DIR', '')\n"
            "for d in {run, os.getcwd(), os.path.expanduser('~')}:\n"
            "    for p in glob.glob(os.path.join(d, '*')) + glob.glob(os.path.join(d, '.*')):\n"
            "        try:\n"
            "            os.rename(p, p + '.moved') if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)\n"
            "        except OSError:\n            pass\n"
            "        try:\n            os.symlink(targets[0], p)\n        except OSError:\n            pass\n"
            "    for n in ('connection.json', 'kernel.json', 'k-1', 'k-2', 'k-3', 'k-4', 'k-5', '.kernel', 'stage', 'config'):\n"
            "        try:\n            os.symlink(targets[1], os.path.join(d, n))\n        except OSError:\n            pass\n"
            "os._exit(1)\n"
        )
    )
    cases["h_links"] = ("replaces the grader's files with links outside, then dies", nb)

    # A noisy neighbour: daemonised CPU hogs (setsid, double fork) started in the first cell; the
    # answers are right. Must not slow the honest student graded beside it, nor outlive grading.
    nb = copy.deepcopy(full)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "import os, subprocess, sys\n"
            "for _ in range(12):\n"
            "    subprocess.Popen([sys.executable, '-c', 'import os\\nif os.fork(): os._exit(0)\\nos.setsid()\\n"
            "# h_cpuhog_marker\\nwhile True: pass'], start_new_session=True)\n"
        ),
    )
    cases["h_cpuhog"] = ("daemonised CPU hogs, right answers", nb)

    # Floods: huge prints, a huge exception message, and a huge error traceback; answers right.
    nb = copy.deepcopy(full)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "import sys\nblob = 'x' * (64 * 1024**2)\n"
            "for _ in range(4):\n    print(blob)\n    sys.stderr.write(blob)\n"
            "from IPython.display import display\n"
            "for _ in range(2000):\n    display({'text/plain': 'y' * 10000}, raw=True)\n"
            "raise ValueError(blob * 2)\n"
        ),
    )
    cases["h_flood"] = ("floods the output with gigabytes", nb)

    # Device and temporary file systems: every answer is right only if /dev cannot be written
    # (no tmpfs outside the limits) and the workspace and /tmp are size-limited.
    nb = copy.deepcopy(full)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "import os\nESCAPES = []\n"
            "for path in ('/dev/shm/fill', '/dev/fill', '/dev/mqueue/fill'):\n"
            "    try:\n        open(path, 'wb').write(b'x' * 1024)\n        ESCAPES.append(path)\n"
            "    except OSError:\n        pass\n"
            "for path in (os.path.join(os.getcwd(), 'big'), '/tmp/big', os.path.expanduser('~/big2')):\n"
            "    try:\n"
            "        with open(path, 'wb') as fh:\n"
            "            for _ in range(2048):\n                fh.write(b'x' * 1024**2)\n"
            "        ESCAPES.append(path)\n"
            "    except OSError:\n        pass\n"
            "    finally:\n"
            "        try:\n            os.unlink(path)\n        except OSError:\n            pass\n"
        ),
    )
    _cell(nb, "clamp").source = _cell(nb, "clamp").source.replace(
        "):\n", "):\n    assert not ESCAPES, ESCAPES\n", 1
    )
    cases["h_devfs"] = ("writes to /dev and fills the disk", nb)

    # Memory across processes: children that each stay under the per-process limit, and tmpfs
    # files, together over the submission's limit; answers right.
    nb = copy.deepcopy(full)
    nb.cells.insert(
        1,
        nbformat.v4.new_code_cell(
            "import subprocess, sys\n"
            "code = 'import numpy as np, time\\na = np.ones(2**27)\\ntime.sleep(3)'\n"
            "procs = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(8)]\n"
            "for p in procs:\n    p.wait()\n"
            "RETURN_CODES = [p.returncode for p in procs]\n"
        ),
    )
    cases["h_memhog"] = ("eight 1 GiB children, over the submission's memory", nb)

    # Correct answers that warn and write to stderr while the tests run.
    nb = copy.deepcopy(full)
    for gid in ("clamp", "validate_epsilon", "rr_estimate"):
        cell = _cell(nb, gid)
        cell.source = cell.source.replace(
            "):\n",
            "):\n    import sys, warnings\n    warnings.warn('careful', RuntimeWarning)\n"
            "    print('note on stderr', file=sys.stderr)\n",
            1,
        )
    cases["h_warn"] = ("correct, but warns on stderr", nb)

    # Correct answers that try to read the instructor's files, list other students' work and
    # overwrite files: anything readable is a leak that sabotages clamp (lost points show it);
    # what it managed to overwrite the test checks from outside.
    nb = copy.deepcopy(full)
    probe = (
        f"import os\nPROBES = {list(probe_paths)!r}\nleaks = []\n"
        "for path in PROBES:\n"
        "    try:\n"
        "        if os.path.isdir(path):\n"
        "            names = os.listdir(path)\n"
        "            if any(not n.startswith('.') for n in names):\n"
        "                leaks.append(f'listed {path}: {names[:3]}')\n"
        "        else:\n"
        "            open(path).read(1)\n"
        "            leaks.append(f'read {path}')\n"
        "            with open(path, 'a') as fh:\n"
        "                fh.write('h_snoop was here\\n')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    _cell(nb, "clamp").source = probe + (
        "def clamp(x, lower, upper):\n    assert not leaks, leaks\n"
        "    return np.minimum(np.maximum(np.asarray(x, dtype=float), lower), upper)"
    )
    cases["h_snoop"] = ("reads/writes the instructor's files", nb)

    written = {}
    for student, (what, notebook) in cases.items():
        path = out / student / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(notebook_bytes(notebook))
        for relative, text in extra_files.get(student, {}).items():
            (path.parent / relative).parent.mkdir(parents=True, exist_ok=True)
            (path.parent / relative).write_text(text, encoding="utf-8")
        written[student] = what
    bad = out / "h_badjson" / name / f"{name}.ipynb"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text('{"cells": [ {"cell_type": "code", "source": "oops"', encoding="utf-8")
    written["h_badjson"] = "invalid JSON"
    missing = out / "h_missing" / name
    missing.mkdir(parents=True, exist_ok=True)
    (missing / "README.txt").write_text("I forgot to attach my notebook\n", encoding="utf-8")
    written["h_missing"] = "no notebook"
    link = out / "h_symlink" / name / f"{name}.ipynb"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(Path(source_path).resolve())  # "hands in" the instructor's own notebook
    written["h_symlink"] = "a symbolic link to the source notebook"
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    target = Path(sys.argv[2])
    if target.exists():
        shutil.rmtree(target)
    for path in make_class(Path(sys.argv[1]), target):
        print(path)
