"""A nested helper named like one of adgen's runtime helpers (``add``, ``unbroadcast``,
``zeros_like``), as a script names its small local functions:

    def energy(x):
        def add(a, b):
            return a + b
        return np.sum(add(x, x) ** 2)

Problem a new user ran into: NameError "name 'add_1' is not defined" from the gradient. The
generated code renames a user's name that clashes with its own (transforms/rename_reserved.py):
the calls of ``add`` became ``add_1(...)``, but the ``def`` kept its name. Now the def is
renamed with its calls.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]


def energy(x):
    def add(a, b):
        return a + b

    return np.sum(add(x, x) ** 2)


def scaled(x, s):
    def unbroadcast(a):
        return a * s

    def zeros_like(a):
        return np.sin(a)

    return np.sum(unbroadcast(zeros_like(x)) ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
def test_nested_def_named_add(mutation):
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(adgen.grad(energy, mutation=mutation)(x), 8 * x, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_nested_defs_named_like_other_helpers(mutation):
    x = np.array([0.5, -1.0, 2.0])
    check_grad(scaled, (x, 1.5), (0, 1), mutation=mutation, strict_must_compute=True,
               rtol=1e-6, atol=1e-8)


def test_forward_mode():
    x, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, -2.0])
    _, tangent = adgen.jvp(energy, (x,), (v,))
    np.testing.assert_allclose(tangent, np.dot(8 * x, v), rtol=1e-12)
