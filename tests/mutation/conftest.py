"""Puts tests/ and tests/mutation/ on sys.path so the shared helpers import by plain name.

``progen`` (the random-program generator, shared with tests/fuzz) lives in tests/, and
``harness`` (the finite-difference checks) in tests/mutation/. Neither folder is a package, so
pytest's default import mode would only see this folder.
"""

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@pytest.fixture(scope="module")
def shrink_budget():
    """Caps shrinking time of a random-program test in CI mode (see progen.shrink_budget)."""
    import progen

    with progen.shrink_budget():
        yield
