"""Derivative rules: ``import adgen.rules`` registers every rule module's rules.

The registry and its format are in :mod:`adgen.rules.registry`; the helpers that templates
call are in :mod:`adgen.rules.helpers`; ndarray methods map to rules in
:mod:`adgen.rules.methods`.
"""

from adgen.rules import (  # noqa: F401  (imported for their registrations)
    arithmetic,
    composites,
    creation,
    indexing,
    linalg,
    math_rules,
    reductions,
    shape,
    ufuncs,
)
from adgen.rules import (  # noqa: F401,E402
    composites_callbacks,
    composites_more,
    composites_stats,
    composites_writes,
    decompositions,
    fft,
    folds,
    no_gradient,
    scatter,
    ufunc_methods,
    views,
)
from adgen.rules import jvps  # noqa: F401,E402  (forward mode: needs every rule above)
from adgen.rules.methods import ATTRIBUTES, METHODS, VARARG_METHODS

__all__ = ["ATTRIBUTES", "METHODS", "VARARG_METHODS"]
