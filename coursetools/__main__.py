"""``python -m coursetools``: see :mod:`coursetools.cli`."""

import sys

from coursetools.cli import main

if __name__ == "__main__":
    sys.exit(main())
