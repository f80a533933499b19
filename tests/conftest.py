"""Puts ``tests/`` on sys.path so every test directory can ``import gradcheck``."""

import os
import sys

_TESTS = os.path.dirname(os.path.abspath(__file__))
# every frozen block of the compiler (transforms/node_index.py) checks that nothing changed
# the tree it froze: a pass that rewrites it there would leave the analyses' lists stale
os.environ.setdefault("ADGEN_CHECK_FROZEN", "1")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# The rules for scipy.special (.linalg, .stats) register once it is imported (never by adgen itself):
# import it here when the extra is installed, so every test sees one registry whatever ran first
try:
    import scipy.linalg  # noqa: F401
    import scipy.special  # noqa: F401
    import scipy.stats  # noqa: F401
except ImportError:  # pragma: no cover - the extra is not installed
    pass
else:
    from adgen.rules.registry import load_optional_rules

    load_optional_rules()
