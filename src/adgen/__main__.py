"""``python -m adgen``: the same as the ``adgen`` command."""

import sys

from adgen.cli import main

if __name__ == "__main__":
    sys.exit(main())
