"""A function of the user's named like one of adgen's forward-mode helpers (``eigh`` calling
``np.linalg.eigh``: runtime's ``eigh_jvp``) under jvp and jacfwd.

Its jvp code was named ``eigh_jvp`` and replaced runtime's helper of that name where it was
defined, so the call of np.linalg.eigh in it ran the user's jvp code: TypeError 'eigh_jvp()
takes from 1 to 2 positional arguments but 4 were given' (found by H6, session 23).
"""

from __future__ import annotations

import numpy as np
from gradcheck import numerical_grad

import adgen

A = np.random.default_rng(0).standard_normal((3, 3))
V = np.random.default_rng(1).standard_normal((3, 3))


def eigh(a):
    return np.sum(np.linalg.eigh(a + a.T)[0] ** 3)


def doubled(a):
    return eigh(a) * 2.0


def test_jvp_of_a_function_named_eigh():
    out, tangent = adgen.jvp(eigh, (A,), (V,))
    assert out == eigh(A)
    np.testing.assert_allclose(tangent, np.sum(numerical_grad(eigh, (A,), 0) * V), rtol=1e-6)


def test_jvp_through_it_as_a_callee_and_jacfwd():
    _, tangent = adgen.jvp(doubled, (A,), (V,))
    np.testing.assert_allclose(tangent, np.sum(numerical_grad(doubled, (A,), 0) * V), rtol=1e-6)
    np.testing.assert_allclose(adgen.jacfwd(eigh)(A), numerical_grad(eigh, (A,), 0), rtol=1e-6,
                               atol=1e-8)
