"""A loop accumulating through ``try`` / ``except`` (``acc = acc + math.sqrt(xi)`` in the body,
``acc = acc - xi`` in the handler): differentiated since session 29 (the body binds ``acc``
last, so the except arm reads the ``acc`` from before the try). A body binding the name
before its last statement is refused, naming both lines and the rewriting adgen
differentiates, checked here against central differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.1, -0.2, 0.3])


def accumulate(x):
    acc = 0.0
    for xi in x:
        try:
            acc = acc + math.sqrt(xi)
        except ValueError:
            acc = acc - xi
    return acc


def rewritten(x):
    acc = 0.0
    for xi in x:
        try:
            t = math.sqrt(xi)
        except ValueError:
            t = -xi
        acc = acc + t
    return acc


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_accumulation_is_differentiated(mutation):
    """Refused until session 29 (the message named both lines and the rewriting below): the
    try body binds ``acc`` by its last statement, so the except arm reads the ``acc`` from
    before the try (transforms/ssa.py)."""
    g = adgen.grad(accumulate, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(accumulate, X.copy()), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, [0.5 / math.sqrt(0.1), -1.0, 0.5 / math.sqrt(0.3)])
    _, t = adgen.jvp(accumulate, (X.copy(),), (np.array([1.0, 2.0, 3.0]),))
    assert t == pytest.approx(0.5 / math.sqrt(0.1) - 2.0 + 1.5 / math.sqrt(0.3))
    np.testing.assert_allclose(adgen.hessian(accumulate)(X.copy()),
                               np.diag([-0.25 * 0.1 ** -1.5, 0.0, -0.25 * 0.3 ** -1.5]))


def accumulate_twice(x):
    acc = 0.0
    for xi in x:
        try:
            acc = acc + math.sqrt(xi)
            acc = acc * 2.0
        except ValueError:
            acc = acc - xi
    return acc


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_body_rebinding_before_its_last_statement_is_refused(mutation):
    """``acc`` bound twice in the body: the except arm may see either value."""
    first = accumulate_twice.__code__.co_firstlineno
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(accumulate_twice, mutation=mutation)(X.copy())
    message = info.value.message
    assert f"'acc' (line {first + 7})" in message and f"(line {first + 4})" in message
    assert "after the try statement" in info.value.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_rewriting_is_differentiated(mutation):
    g = adgen.grad(rewritten, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(rewritten, X.copy()), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, [0.5 / math.sqrt(0.1), -1.0, 0.5 / math.sqrt(0.3)])
