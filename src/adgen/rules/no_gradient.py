"""Functions whose output holds no gradient: integer or boolean results (indices, counts,
tests), registered with a zero rule so that a call on a float array passes through.

The gradient of an integer or boolean output is zero wherever it is defined (a piecewise
constant function), as in JAX, where such outputs carry no tangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adgen.rules.registry import defvjp
