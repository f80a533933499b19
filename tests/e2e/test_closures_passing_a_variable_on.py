"""A closure whose nested def reads a variable of the function two levels up: ``f`` only
passes ``scale`` on to ``g`` (its code carries ``scale`` as a free variable). adgen refused it
with "the source of closure_make.<locals>.f ... is not the code Python runs for it: the file
was edited": the check compiled ``f``'s def alone, where ``g`` reads ``scale`` as a global,
so the two codes differed. Expected values: hand formulas and central differences (save,
strict)."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

X = np.array([0.3, -1.2, 2.0])
SCALE = np.array([1.0, 2.0, 0.5])


def closure_make():
    scale = SCALE.copy()

    def f(x):
        def g(y):
            return np.sum(scale * y ** 3)

        return g(x) + g(np.sin(x))

    return f


def closure_reading_it_too():
    scale = SCALE.copy()

    def f(x):
        def g(y):
            return np.sum(scale * y ** 2)

        return g(x) * np.sum(scale)

    return f


class Model:
    def loss_function(self):
        w = SCALE.copy()

        def f(x):
            def g(y):
                return np.sum(w * y ** 2)

            return g(x)

        return f


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_a_variable_passed_on_to_a_nested_def(policy):
    f = closure_make()
    # d/dx sum(s x^3) + sum(s sin(x)^3) = 3 s x^2 + 3 s sin(x)^2 cos(x)
    expected = 3 * SCALE * X ** 2 + 3 * SCALE * np.sin(X) ** 2 * np.cos(X)
    assert_grad_close(adgen.grad(f, mutation=policy)(X), expected)
    g = closure_reading_it_too()
    assert_grad_close(adgen.grad(g, mutation=policy)(X), numerical_grad(g, (X,), 0))
    h = Model().loss_function()
    assert_grad_close(adgen.grad(h, mutation=policy)(X), 2 * SCALE * X)
