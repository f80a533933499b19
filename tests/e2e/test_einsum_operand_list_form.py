"""np.einsum's operand-list form, np.einsum(a, [0, 1], b, [1, 2], [0, 2]), binds its first
operand to the rule's ``subscripts``, which no derivative reached: a silently wrong
gradient (zeros under both policies) and jvp (0.0 where central differences give 18.3) where
the argument is the first operand alone, and half the jvp where it is both operands (reverse
mode refused that one). Both modes now refuse a derivative reaching
the first operand, at the user's line, pointing to the subscripts-string form; a constant
first operand with a differentiated second one is right in forward mode, and the string form
is right in both."""

import numpy as np
import pytest

import adgen
from adgen.errors import AdgenError
from tests.gradcheck import central

M = np.array([[1.3, 0.2, -0.4], [0.5, 2.2, 0.1], [-0.3, 0.6, 1.9]])
V = np.linspace(0.3, 1.1, 9).reshape(3, 3)


def first_operand(a):
    return np.sum(np.einsum(a, [0, 1], M, [1, 2]) ** 2)


def both_operands(a):
    return np.sum(np.einsum(a, [0, 1], a, [1, 2], [0, 2]) ** 2)


def second_operand(a):
    return np.sum(np.einsum(M, [0, 1], a, [1, 2], [0, 2]) ** 2)


def string_form(a):
    return np.sum(np.einsum("ij,jk->ik", a, a) ** 2)


def directional(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


@pytest.mark.parametrize("f", [first_operand, both_operands])
def test_a_derivative_at_the_first_operand_is_refused_in_forward_mode(f):
    with pytest.raises(AdgenError, match="subscripts-string form") as info:
        adgen.jvp(f, (M.copy(),), (V,))
    assert "test_einsum_operand_list_form.py" in str(info.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [first_operand, both_operands])
def test_a_derivative_at_the_first_operand_is_refused_in_reverse_mode(f, mutation):
    with pytest.raises(AdgenError, match="subscripts-string form"):
        adgen.grad(f, mutation=mutation)(M.copy())


def test_a_constant_first_operand_keeps_the_forward_tangent():
    _, t = adgen.jvp(second_operand, (M.copy(),), (V,))
    np.testing.assert_allclose(t, directional(second_operand, M, V), rtol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_string_form_in_both_modes(mutation):
    g = adgen.grad(string_form, mutation=mutation)(M.copy())
    np.testing.assert_allclose(g, central(string_form, M), rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(string_form, (M.copy(),), (V,))
    np.testing.assert_allclose(t, directional(string_form, M, V), rtol=1e-6)
