"""``x.view()`` (no arguments) is a new array object sharing ``x``'s memory: a write through it
writes ``x``, and the gradient follows (it raised MissingRuleError "x.view() has no derivative
rule", whose hint spoke of x.view(dtype)). ``x.view(dtype)`` reinterprets the bytes: still
refused, at the line, saying so. Checked against central differences under both policies,
with the arguments' final state as a plain call leaves them, and in forward mode."""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen

X = np.array([0.3, -0.7, 1.1, 2.0])


def read_through_a_view(x):
    v = x.view()
    return np.sum(v ** 3) + v[0] * x[1]


def written_through_a_view(x):
    v = x.view()
    v[0] = 3.0  # writes x[0]
    return np.sum(x ** 2)


def scaled_through_a_view(x):
    y = np.sin(x)
    v = y.view()
    v *= y  # y ** 2, in place: the gradient of sin reads x, not y
    return np.sum(y ** 2)


def view_of_a_view_written(x):
    y = x * 2.0
    v = y.view()[1:]
    v[:] = v * x[:3]
    return np.sum(np.tanh(y))


CASES = [read_through_a_view, written_through_a_view, scaled_through_a_view,
         view_of_a_view_written]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_against_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation)


def test_a_write_through_the_view_writes_the_argument():
    x = X.copy()
    g = adgen.grad(written_through_a_view)(x)
    assert x[0] == 3.0  # as a plain call leaves it
    np.testing.assert_allclose(g, [0.0, 2 * X[1], 2 * X[2], 2 * X[3]])  # hand formula


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_forward_mode(f):
    check_jvp(f, (X.copy(),), (np.array([1.0, -0.5, 0.25, 2.0]),))


def test_view_with_a_dtype_is_refused_at_the_line():
    def f(x):
        b = x.view(np.int64)
        return np.sum(b * x)

    with pytest.raises(adgen.AdgenError) as err:
        adgen.grad(f)(X.copy())
    text = str(err.value)
    assert "b = x.view(np.int64)" in text and "reinterprets the bytes" in text
    assert "test_view_method.py" in text


def helper_writing_a_view(x):
    v = x.view()  # in a helper compiled for any argument: mapped when it runs
    v[0] = 3.0
    return np.sum(x ** 2)


def calls_a_helper(x):
    return helper_writing_a_view(x) + np.sum(x)  # reads x after the helper wrote x[0]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_view_in_a_helper(mutation):
    # (strict refuses it: the call through adgen's dispatch keeps its argument, which the
    # write changes; check_grad takes that MutationError as an answer)
    check_grad(calls_a_helper, (X.copy(),), mutation=mutation)


def test_a_view_in_a_helper_hand_formula():
    hand = 2.0 * X + 1.0  # x[0] is overwritten by 3.0 before both reads
    hand[0] = 0.0
    np.testing.assert_allclose(adgen.grad(calls_a_helper)(X.copy()), hand)


def test_a_view_in_a_helper_forward_mode():
    check_jvp(calls_a_helper, (X.copy(),), (np.array([1.0, -0.5, 0.25, 2.0]),))


class Camera:
    """A class of the user's with its own view(): not ndarray.view."""

    def __init__(self, w):
        self.w = w

    def view(self):
        return self.w * 3.0


def through_a_camera(v, cam):
    return np.sum(cam.view() * v)


def test_a_user_method_named_view_is_that_method():
    cam = Camera(np.array([0.0, 1.0, 2.0]))
    v = np.array([1.0, -1.0, 0.5])
    gv, gcam = adgen.grad(through_a_camera, argnums=(0, 1))(v, cam)
    np.testing.assert_allclose(gv, 3.0 * cam.w)
    assert isinstance(gcam, Camera)  # hand formula: d/dw sum(3 w v) = 3 v
    np.testing.assert_allclose(gcam.w, 3.0 * v)
    _, t = adgen.jvp(through_a_camera, (v, cam), (np.ones(3), Camera(np.ones(3))))
    assert t == pytest.approx(3.0 * np.sum(cam.w) + 3.0 * np.sum(v))


def cubed_through_a_view(x):
    v = x.view()
    v[0] = 3.0
    return np.sum(x ** 3)


def cubed_through_an_index(x):
    v = x[...]  # the form the refusal below suggests
    v[0] = 3.0
    return np.sum(x ** 3)


def test_second_derivatives_are_refused_at_the_line():
    """Forward mode calls x.view() through adgen's dispatch, which reverse mode does not
    differentiate again: hessian refuses it at the line (it raised a raw casting error)."""
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.hessian(cubed_through_a_view)(X.copy())
    assert "x.view()" in err.value.message and "x[...]" in err.value.hint
    assert err.value.location.line == cubed_through_a_view.__code__.co_firstlineno + 1
    hand = np.diag(6.0 * X)  # hand formula: x[0] is overwritten, the others cubed
    hand[0, 0] = 0.0
    np.testing.assert_allclose(adgen.hessian(cubed_through_an_index)(X.copy()), hand)
