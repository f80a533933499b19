"""References for ``scipy.linalg``'s triangular and Cholesky solvers: ``solve_triangular``,
``cholesky``, ``cho_factor``, ``cho_solve`` and ``solve``, written with ``np.linalg`` so that
adgen compiles them as it compiles the user's code (a Gaussian process's
``alpha = solve_triangular(L, y, lower=True)`` was refused: scipy's wrapper reads ``*args``).

Registered by :func:`adgen.rules.registry.load_optional_rules` once the user's code has
imported ``scipy.linalg`` (adgen never imports scipy itself). The references read what scipy
reads: the triangle ``lower`` names (a solver for a symmetric matrix, ``assume_a="pos"``, and
``cholesky`` read one triangle of ``a``; the other gets no gradient, as in scipy, where
changing it changes nothing), and ``cho_factor``'s result holds ``a``'s own entries in the
triangle the factor leaves (scipy's "random data"). A triangular solve runs as
``np.linalg.solve`` of the triangle (an LU solve, O(n^3) where scipy's is O(n^2)): the value is
scipy's to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg

from adgen.rules.composites import dtype_of, refuse_if
from adgen.rules.registry import defreference


@defreference(linalg.solve_triangular, name="scipy.linalg.solve_triangular")
def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: Any = False,
                     unit_diagonal: Any = False, overwrite_b: Any = False,
                     check_finite: Any = True) -> Any:
    refuse_if(np.iscomplexobj(a) or np.iscomplexobj(b),
              "scipy.linalg.solve_triangular: complex matrices are not differentiated")
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        # the diagonal is taken as ones, not read (np.where keeps a float32 a float32)
        t = np.where(np.eye(np.shape(a)[-1], dtype=bool), 1, t)
    if trans in (1, 2, "T", "C"):
        t = np.swapaxes(t, -1, -2)
    return np.linalg.solve(t, b)


@defreference(linalg.cholesky, name="scipy.linalg.cholesky")
def cholesky(a: Any, lower: Any = False, overwrite_a: Any = False,
             check_finite: Any = True) -> Any:
    refuse_if(np.iscomplexobj(a), "scipy.linalg.cholesky: complex matrices are not "
              "differentiated")
    if lower:  # the symmetric matrix of the triangle scipy reads (adgen compiles this code:
        sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)  # no helper function)
    else:
        sym = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    factor = np.linalg.cholesky(sym)
    if lower:
        return factor
    return np.swapaxes(factor, -1, -2)


@defreference(linalg.cho_factor, name="scipy.linalg.cho_factor")
def cho_factor(a: Any, lower: Any = False, overwrite_a: Any = False,
               check_finite: Any = True) -> Any:
    refuse_if(np.iscomplexobj(a), "scipy.linalg.cho_factor: complex matrices are not "
              "differentiated")
    if lower:  # the symmetric matrix of the triangle scipy reads (adgen compiles this code:
        sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)  # no helper function)
    else:
        sym = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    factor = np.linalg.cholesky(sym)
    if lower:
        return factor + np.triu(a, 1), lower   # the other triangle: a's own entries
    return np.swapaxes(factor, -1, -2) + np.tril(a, -1), lower


@defreference(linalg.cho_solve, name="scipy.linalg.cho_solve")
def cho_solve(c_and_lower: Any, b: Any, overwrite_b: Any = False,
              check_finite: Any = True) -> Any:
    c, lower = c_and_lower
    refuse_if(np.iscomplexobj(c) or np.iscomplexobj(b),
              "scipy.linalg.cho_solve: complex matrices are not differentiated")
    if lower:
        factor = np.tril(c)
        return np.linalg.solve(np.swapaxes(factor, -1, -2), np.linalg.solve(factor, b))
    factor = np.triu(c)
    return np.linalg.solve(factor, np.linalg.solve(np.swapaxes(factor, -1, -2), b))


@defreference(linalg.solve, name="scipy.linalg.solve")
def solve(a: Any, b: Any, lower: Any = False, overwrite_a: Any = False,
          overwrite_b: Any = False, check_finite: Any = True, assume_a: Any = None,
          transposed: Any = False) -> Any:
    refuse_if(np.iscomplexobj(a) or np.iscomplexobj(b),
              "scipy.linalg.solve: complex matrices are not differentiated")
    refuse_if(assume_a in ("her", "hermitian", "banded", "tridiagonal"),
              f"scipy.linalg.solve: assume_a={assume_a!r} is not differentiated")
    if assume_a in ("sym", "symmetric", "pos", "positive definite"):
        if lower:  # scipy reads the triangle lower names
            a = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
        else:
            a = np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    elif assume_a in ("lower triangular", "upper triangular"):
        a = np.tril(a) if assume_a == "lower triangular" else np.triu(a)
    elif assume_a == "diagonal":
        a = np.diag(np.diagonal(a))
    if transposed:
        a = np.swapaxes(a, -1, -2)
    return np.linalg.solve(a, b)


# scipy.linalg.expm: Pade approximant of degree 13 after scaling by 2**-s, squared s times
# (Higham 2005, the algorithm scipy runs, always at degree 13): NumPy over functions with rules,
# so the gradient is the derivative of the computation itself (the Frechet derivative to
# rounding), second derivatives included
_EXPM_B = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)


@defreference(linalg.expm, name="scipy.linalg.expm")
def expm(A: Any) -> Any:
    refuse_if(np.iscomplexobj(A), "scipy.linalg.expm: complex matrices are not differentiated")
    a = np.asarray(A, dtype=float)
    refuse_if(np.ndim(a) < 2 or np.shape(a)[-1] != np.shape(a)[-2],
              "scipy.linalg.expm: expected a square matrix (or a stack of them)")
    n = np.shape(a)[-1]
    norm1 = float(np.max(np.sum(np.abs(a), axis=-2), initial=0.0))  # (a constant: the 1-norm)
    s = 0
    if norm1 > 5.371920351148152:
        s = int(np.ceil(np.log2(norm1 / 5.371920351148152)))
    a = a / 2.0 ** s
    b = _EXPM_B
    eye = np.eye(n)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a2 @ a4
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 +
             b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + \
        b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r.astype(dtype_of(A))  # scipy's dtype (float32 stays float32), computed in float64
