"""``x.view(np.ndarray)`` and ``x.view(type=np.ndarray)`` (the spelling of code that strips an
array subclass) are views of x, differentiated as ``x.view()`` is (since session 28; they
were refused at the line: "adgen's rule for it does not take these arguments"), and a write
through one writes x, whose gradient follows (docs/mutation.md's views). ``np.asarray(x)`` of
an array is x itself, written through the same way. Checked against central differences
under both mutation policies, and in forward mode; ``x.view(dtype)`` stays refused at the
line (when it runs: the forward pass of reverse mode runs it as written, then the pullback
refuses it; np.matrix is refused when the function compiles, array_subclasses.py). Since
session 28 too, ``x.view(np.ndarray)`` is written ``x[...]`` (plain_views.py), the same view,
so hessian follows it (it was refused at the line)."""

import numpy as np
import pytest
from gradcheck import central, check_jvp, numerical_hessian

import adgen

X = np.array([0.3, -0.7, 1.1, 0.5])
T = np.array([1.0, -0.5, 0.25, 2.0])


def read_through(x):
    v = x.view(np.ndarray)
    return np.sum(v ** 3) + np.sum(np.sin(v) * x)


def by_keyword(x):
    v = (2.0 * x).view(type=np.ndarray)
    return np.sum(np.exp(v) * x)


def written_through(x):
    y = x * 2.0
    v = y.view(np.ndarray)
    v[1] = x[0] ** 2  # writes y[1]
    v[2:] *= x[:2]
    return np.sum(y ** 3)


def written_through_asarray(x):
    y = np.tanh(x)
    a = np.asarray(y)  # y itself
    a[0] = 5.0 * x[3]
    return np.sum(y ** 2 * x)


def helper(a):
    v = a.view(np.ndarray)  # in a helper compiled for any argument
    v[0] = 3.0
    return np.sum(a ** 2)


def calls_a_helper(x):
    y = x * 1.5
    return helper(y) + np.sum(y * x)


CASES = [read_through, by_keyword, written_through, written_through_asarray, calls_a_helper]
STRICT_REFUSES = (written_through, written_through_asarray)


def written_through_by_hand(x):
    # y = 2x with y[1] = x0^2 and y[2:] = 2 x[2:] * x[:2]: sum y^3
    g = np.zeros(4)
    g[0] = 3 * (2 * x[0]) ** 2 * 2 + 3 * x[0] ** 4 * 2 * x[0] + 3 * (2 * x[2] * x[0]) ** 2 * 2 * x[2]
    g[1] = 3 * (2 * x[3] * x[1]) ** 2 * 2 * x[3]
    g[2] = 3 * (2 * x[2] * x[0]) ** 2 * 2 * x[0]
    g[3] = 3 * (2 * x[3] * x[1]) ** 2 * 2 * x[1]
    return g


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_against_central_differences(f, mutation):
    if mutation == "strict" and f in STRICT_REFUSES:
        # v[2:] *= x[:2] overwrites what the product's gradient reads, a[0] = ... what
        # tanh's does: strict says so, at the write (the helper's a.view(np.ndarray),
        # a[...] since session 28, is a view the compiler knows: strict runs it)
        with pytest.raises(adgen.MutationError, match=r"test_view_as_ndarray\.py:\d+"):
            adgen.grad(f, mutation=mutation)(X.copy())
        return
    g = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(f, X.copy()), rtol=1e-6, atol=1e-8)


def test_a_write_through_the_view_by_hand():
    np.testing.assert_allclose(adgen.grad(written_through)(X.copy()),
                               written_through_by_hand(X), rtol=1e-12)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_forward_mode(f):
    check_jvp(f, (X.copy(),), (T,))


def test_the_argument_is_written_as_python_writes_it():
    x, plain = X.copy(), X.copy()
    adgen.grad(lambda a: helper(a))(x)
    helper(plain)
    np.testing.assert_array_equal(x, plain)


def test_second_derivatives_of_asarray():
    def f(x):
        return np.sum(np.asarray(x) ** 3)

    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), np.diag(6.0 * X), rtol=1e-12)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_second_derivatives(f):
    # x.view(np.ndarray) is x[...] (plain_views.py, since session 28; refused before at the
    # line: forward mode called it through the dispatch)
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def view_of_a_name(x):
    kind = np.ndarray
    v = x.view(kind)  # a name holding the class: through the view rule (no hessian)
    return np.sum(v ** 3)


def test_a_class_held_in_a_name():
    g = adgen.grad(view_of_a_name)(X.copy())
    np.testing.assert_allclose(g, 3 * X ** 2, rtol=1e-12)


def reinterpreted(x):
    b = x.view(np.float32)
    return np.sum(b * 2.0)


def reinterpreted_by_keyword(x):
    b = x.view(dtype=np.float64)
    return np.sum(b * 2.0)


@pytest.mark.parametrize("f, spelled", [(reinterpreted, "float32"),
                                        (reinterpreted_by_keyword, "float64")])
def test_another_dtype_is_refused_at_the_line(f, spelled):
    for run in (lambda: adgen.grad(f)(X.copy()),
                lambda: adgen.jvp(f, (X.copy(),), (T,))):
        with pytest.raises(adgen.UnsupportedError) as err:
            run()
        assert f"x.view({spelled}) reinterprets the bytes" in err.value.message
        assert err.value.location.line == f.__code__.co_firstlineno + 1
