"""Refusals raised while a pullback runs name the user's line, as users write the code.

Two of them named nothing: a list written in place by a helper the differentiated function
calls (the helper's pullback reads its arguments' adjoints before its first ``# line N:``
comment, where ``runtime.locate`` stopped looking), and list repetition ``l * 2`` reaching the
loss (``helpers_core.unsupported`` raised a bare ``RuleError``). Both now name the file and
the line: the call of the helper, and the repetition (which adgen differentiates since
session 18: tests/e2e/test_list_repetition.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def scale_each(ws, x):
    # a slot of the list stored into, in a helper compiled without knowing ws is a list
    # (the arrays' own writes, w *= x over the items, are followed since session 16)
    for i in range(len(ws)):
        ws[i] = ws[i] * x


def loss_through_a_helper(x):
    ws = [x * 1.0, x * 2.0]
    scale_each(ws, x)
    return np.sum(ws[0] * ws[1])


def loss_of_a_repeated_list(x):
    parts = [x * 1.0, np.sin(x)]
    twice = parts * 2
    return np.sum(twice[3] * twice[0])


X = np.array([0.5, -1.0, 0.2])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_helper_storing_into_list_slots_is_differentiated(mutation):
    # refused at the helper's line ('ws[i] = ws[i] * x') until session 24, when b31ef4a
    # compiled such helpers for the containers their calls pass: sum(x^2 * 2x^2) -> 8 x^3
    g = adgen.grad(loss_through_a_helper, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, 8 * X ** 3, rtol=1e-12)
    _, t = adgen.jvp(loss_through_a_helper, (X.copy(),), (np.ones(3),))
    assert t == pytest.approx(np.sum(8 * X ** 3), rel=1e-12)
    np.testing.assert_allclose(adgen.hessian(loss_through_a_helper)(X.copy()),
                               np.diag(24 * X ** 2), rtol=1e-12, atol=1e-12)


def test_list_repetition_is_differentiated():
    # refused at its line before session 18; each copy's gradient now goes to its item:
    # sum(sin(x) * x) -> sin(x) + x cos(x)
    g = adgen.grad(loss_of_a_repeated_list)(X.copy())
    np.testing.assert_allclose(g, np.sin(X) + X * np.cos(X), rtol=1e-12)
