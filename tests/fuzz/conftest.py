"""Puts tests/ and tests/mutation/ on sys.path: the fuzzer shares ``progen`` and ``harness``.

Profiles (selected with the environment variable ``ADGEN_FUZZ``):

- unset / ``ci``: a bounded campaign that stays well under 2 minutes (see test_fuzz_differential).
- ``long``: thousands of programs, for a campaign run by hand.
"""

import sys
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent, _HERE.parent / "mutation"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@pytest.fixture(scope="module")
def shrink_budget():
    """Caps shrinking time of a random-program test in CI mode (see progen.shrink_budget)."""
    import progen

    with progen.shrink_budget():
        yield
