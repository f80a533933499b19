"""Helpers that rule templates call when an adjoint needs more than one expression.

Generated code imports these by name (``adgen.runtime`` star-imports this module), and
standalone output (``adgen FILE -o OUT``) copies the source of the ones it uses, with the
helpers those call, into the module it writes. So every helper is a public (``__all__``),
top-level function that uses only ``np``, builtins and the other helpers: no other imports,
and annotations that evaluate with numpy and builtins alone. They live in modules by area
(complex values and FFTs, core, decompositions, jvps, linalg, scatter ufuncs' ``at``,
shape, special functions, tangents, windows), all
re-exported here.

Conventions:
- ``g`` is the cotangent of the primal's output; a helper returns the cotangent of one input
  (or a tuple of them, in argument order, where the primal takes a sequence of operands).
- A cotangent has its input's structure: an array's shape; a numpy float (or 0-d array) for
  a float; a list for a list and a tuple for a tuple, with zeros (never None) in untouched
  entries.
- Where an adjoint is not implemented, the helper raises ``adgen.errors.RuleError`` (through
  :func:`unsupported`) rather than return something wrong.
- Ties in max/min are split evenly between the tied entries, as JAX does: the gradient of
  ``max(x, x)`` gives each argument half, and ``np.max`` of an array with k tied maxima gives
  each of them ``g / k``. Any convex combination is a valid subgradient; the even split is the
  one that is symmetric in its arguments.
"""

from adgen.rules.helpers_complex import *
from adgen.rules.helpers_complex import __all__ as _complex
from adgen.rules.helpers_core import *
from adgen.rules.helpers_core import __all__ as _core
from adgen.rules.helpers_decomp import *
from adgen.rules.helpers_decomp import __all__ as _decomp
from adgen.rules.helpers_jvp import *
from adgen.rules.helpers_jvp import __all__ as _jvp
from adgen.rules.helpers_linalg import *
from adgen.rules.helpers_linalg import __all__ as _linalg
from adgen.rules.helpers_scatter import *
from adgen.rules.helpers_scatter import __all__ as _scatter
from adgen.rules.helpers_second import *
from adgen.rules.helpers_second import __all__ as _second
from adgen.rules.helpers_shape import *
from adgen.rules.helpers_shape import __all__ as _shape
from adgen.rules.helpers_special import *
from adgen.rules.helpers_special import __all__ as _special
from adgen.rules.helpers_tangent import *
from adgen.rules.helpers_tangent import __all__ as _tangent
from adgen.rules.helpers_windows import *
from adgen.rules.helpers_windows import __all__ as _windows

__all__ = sorted([*_complex, *_core, *_decomp, *_jvp, *_linalg, *_scatter, *_second, *_shape,
                  *_special, *_tangent, *_windows])  # noqa: PLE0605
