"""Public names that break the library-wide contract today (tests/dplib/test_contract.py).

The work left on the library contract. Each entry: the shortest reproducing call the contract test found and
what goes wrong (the number of breaches found across all perturbations in brackets; run
``python tests/dplib/test_contract.py NAME`` to list them all). The test fails when a name not listed
here breaks the contract, and when a listed name no longer does: delete its entry when you fix it,
so that this list only shrinks.
"""

KNOWN_GAPS: dict[str, str] = {}
