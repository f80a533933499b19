"""``functools.reduce`` in a differentiated function, as users fold a list of terms, arrays or
functions: it was refused ("reduce() has no derivative rule: it calls a Python function in a
loop adgen cannot see; write the loop in Python"). adgen now differentiates it as that loop
(rules/folds.py), with the function it calls: a lambda, a function of the user's, np.add,
np.matmul, operator.mul, max."""
import functools
import operator
from functools import reduce

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_hessian

U = np.array([0.3, -0.7, 1.1])
T = np.array([1.0, -2.0, 0.5])


def summed_terms(u):
    terms = [u ** 2, np.sin(u), 3.0 * u]
    return np.sum(functools.reduce(lambda a, b: a + b, terms))


def added_arrays(u):
    arrays = [u, u ** 3, np.cos(u)]
    return np.sum(functools.reduce(np.add, arrays))


def product_with_initial(u):
    return np.sum(functools.reduce(np.multiply, [u, u + 1.0, np.exp(u)], 1.0))


def matrix_chain(u):
    A = np.outer(u, u)
    return np.sum(functools.reduce(np.matmul, [A, A + np.eye(3), A]))


def operator_product(u):
    return np.sum(reduce(operator.mul, [u, np.sin(u), u]))


def over_a_generator(u):
    return reduce(lambda a, b: a + b * b, (np.sum(u ** k) for k in range(1, 4)), 0.0)


def rows_of_a_matrix(u):
    return np.sum(reduce(np.add, np.outer(u, u)) ** 2)


def values_of_a_dict(u):
    d = {"a": u, "b": 2 * u, "c": u ** 3}
    return np.sum(reduce(np.multiply, d.values()))


def composed_functions(u):
    return np.sum(reduce(lambda acc, f: f(acc), [np.sin, np.cos, np.tanh], u))


def largest(u):
    return reduce(max, [np.sum(u), np.sum(u ** 2), 0.5])


def horner(u):
    # a closure over an array: p(u) = ((u w + u^2) w + cos u)
    w = np.array([1.0, 2.0, 3.0])
    return np.sum(reduce(lambda a, b: a * w + b, [u, u ** 2, np.cos(u)]))


def scaled(a, b):
    return 0.5 * a + np.tanh(b)


def with_a_function_of_yours(u):
    return np.sum(reduce(scaled, [u, u ** 2, np.sin(u), u]))


LOSSES = [summed_terms, added_arrays, product_with_initial, matrix_chain, operator_product,
          over_a_generator, rows_of_a_matrix, values_of_a_dict, composed_functions, largest,
          horner, with_a_function_of_yours]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(U),
                               numerical_grad(f, (U,), 0), rtol=1e-6, atol=1e-8)


def test_gradient_by_hand():
    # sum(u^2 + sin u + 3u) -> 2u + cos u + 3
    np.testing.assert_allclose(adgen.grad(summed_terms)(U), 2 * U + np.cos(U) + 3.0,
                               rtol=1e-12)
    # sum(u * sin u * u) -> 2 u sin u + u^2 cos u
    np.testing.assert_allclose(adgen.grad(operator_product)(U),
                               2 * U * np.sin(U) + U ** 2 * np.cos(U), rtol=1e-12)


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_jvp(f):
    y, dy = adgen.jvp(f, (U,), (T,))
    assert y == pytest.approx(f(U))
    assert dy == pytest.approx(np.dot(numerical_grad(f, (U,), 0), T), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("f", LOSSES, ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(U), numerical_hessian(f, U),
                               rtol=1e-4, atol=1e-4)


def add_into(a, b):
    a += b
    return a


def folded_in_place(u):
    return np.sum(reduce(add_into, [u * 1.0, u ** 2, np.sin(u)]) ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_function_writing_its_accumulator_is_refused_at_the_line(mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(folded_in_place, mutation=mutation)(U)
    assert info.value.location.file == __file__
    assert "add_into" in info.value.message


def test_an_empty_sequence_without_initial_raises_as_python():
    with pytest.raises(TypeError):
        adgen.grad(lambda u: reduce(np.add, []) + np.sum(u))(U)
