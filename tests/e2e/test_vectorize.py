"""np.vectorize(f)(x) with f a Python function of scalars is differentiated (since session 28):
adgen compiles the loop NumPy runs (rules/composites_callbacks.vectorized_call: the arguments
broadcast, f called on each item, the results written into an array of the type NumPy gives),
and f as it compiles any call of it. It was refused ("calls a Python function that NumPy runs
in a loop adgen cannot see"). Gradients against central differences under both policies, jvp
and hessian against them, a hand formula; what the loop does not do is refused at the line."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
V = np.cos(np.arange(4.0))


def smooth_step(t):
    if t > 0.5:
        return np.sin(t) * t
    return t * t + 1.0


@np.vectorize
def blend(t, s):
    return t * s if t > s else np.exp(t - s)


SQUARE_OR_NEGATE = np.vectorize(lambda t: t ** 3 if t > 0 else -t)


def made_inside(x):
    g = np.vectorize(lambda t: t ** 3 if t > 0 else -t)
    return np.sum(g(x))


def built_and_called(x):
    return np.sum(np.vectorize(smooth_step)(x) ** 2)


def decorated_two_arguments(x):
    return np.sum(blend(x, x[::-1] * 0.5))


def broadcast_matrix_and_row(x):
    return np.sum(blend(np.reshape(x, (2, 2)), x[:2]) * np.vectorize(smooth_step)(x[0]))


def global_object(x):
    return np.sum(SQUARE_OR_NEGATE(x) * x)


def with_otypes(x):
    return np.sum(np.vectorize(smooth_step, otypes=[float])(x))


CASES = [made_inside, built_and_called, decorated_two_arguments, broadcast_matrix_and_row,
         global_object, with_otypes]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (V,))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # d/dx sum(v(x) * x) for v(t) = t^3 (t > 0), -t: 4 t^3 resp. -2 t
    expected = np.where(X > 0, 4 * X ** 3, -2 * X)
    assert_grad_close(adgen.grad(global_object)(X.copy()), expected)


def test_values_and_type_are_numpys():
    # an int from the first item makes NumPy's array an int array: the same here, and the
    # truncated values have no derivative
    relu = np.vectorize(lambda t: 0 if t < 0 else t)

    def f(x):
        return np.sum(relu(x) * x)

    x = np.array([-0.7, 1.3, 2.1, 0.4])
    value, g = adgen.value_and_grad(f)(x.copy())
    assert value == f(x)
    assert_grad_close(g, relu(x).astype(float))


def reads_a_derivative(x):
    a = x[0]
    g = np.vectorize(lambda t: t * a)  # MARK closure
    return np.sum(g(x))


def with_signature(x):
    return np.sum(np.vectorize(smooth_step, signature="()->()")(x))  # MARK signature


def two_outputs(x):
    return np.sum(np.vectorize(lambda t: (t, t * t))(x)[0])  # MARK tuple


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("how", ["grad", "jvp", "hessian"])
def test_a_function_reading_a_derivative_is_refused_at_the_line(how):
    with pytest.raises(adgen.AdgenError) as info:
        if how == "grad":
            adgen.grad(reads_a_derivative)(X.copy())
        elif how == "jvp":
            adgen.jvp(reads_a_derivative, (X.copy(),), (V,))
        else:
            adgen.hessian(reads_a_derivative)(X.copy())
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line("# MARK closure"))
    assert "reads values with a derivative" in err.message
    assert "np.vectorize(lambda t, a: t * a)(x, a)" in err.hint
    assert "site-packages" not in str(err) and "_nx" not in str(err)


def test_passing_the_value_as_an_argument_works():
    def f(x):
        return np.sum(np.vectorize(lambda t, a: t * a)(x, x[0]))

    # sum(x * x[0]): x[0] for every item, plus sum(x) for x[0]
    assert_grad_close(adgen.grad(f)(X.copy()), X[0] + np.array([np.sum(X), 0, 0, 0]))


@pytest.mark.parametrize("f, mark, words", [
    (with_signature, "# MARK signature", "signature="),
    (two_outputs, "# MARK tuple", "returning a tuple")])
@pytest.mark.parametrize("how", ["grad", "jvp"])
def test_what_the_loop_does_not_do_is_refused(f, mark, words, how):
    with pytest.raises(adgen.UnsupportedError) as info:
        if how == "grad":
            adgen.grad(f)(X.copy())
        else:
            adgen.jvp(f, (X.copy(),), (V,))
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line(mark))
    assert words in err.message and "site-packages" not in str(err)
