"""np.piecewise(x, condlist, funclist) is differentiated (since session 27) when funclist
holds module-level functions, NumPy's functions and constants: adgen compiles NumPy's loop
(rules/composites_callbacks.py) and the functions it calls, each given the values NumPy gives
it. It was refused ('calls a Python function that NumPy runs in a loop adgen cannot see'). A
lambda or a function defined inside a function in funclist is refused at the user's line
(handed over in a list, its pullback lost its bindings: NameError). Gradients against central
differences under both policies, jvp and hessian against them, a hand formula."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.3, -1.2, 0.8, -0.4, 1.7, 2.6])


def huber_branch(t):
    return 0.5 * t * t


def huber_tail(t):
    return np.abs(t) - 0.5


def huber(x):
    return np.sum(np.piecewise(x, [np.abs(x) <= 1.0], [huber_branch, huber_tail]))


BRANCHES = [np.exp, 0.25, huber_branch]


def three_regimes(x):
    # a constant in the middle, the "otherwise" function for x > 0.5 (scaled afterwards)
    y = np.piecewise(x * 1.5, [x < -1.0, np.abs(x) <= 0.5], BRANCHES)
    return np.sum(np.sin(y) * x)


FUNCTIONS = [huber, three_regimes]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (X.copy(),), (np.linspace(-1.0, 1.0, 6),))
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # huber'(x) = x inside [-1, 1], sign(x) outside
    assert_grad_close(adgen.grad(huber)(X.copy()), np.where(np.abs(X) <= 1.0, X, np.sign(X)))


def with_a_lambda(x):
    return np.sum(np.piecewise(x, [x < 0], [lambda t: t * t, 1.0]))  # MARK


@pytest.mark.parametrize("how", ["grad", "jvp", "hessian"])
def test_a_lambda_is_refused_at_the_line(how):
    with pytest.raises(adgen.AdgenError, match="define the functions at module level") as err:
        if how == "jvp":
            adgen.jvp(with_a_lambda, (X.copy(),), (np.ones(6),))
        else:
            getattr(adgen, how)(with_a_lambda)(X.copy())
    with open(__file__) as fh:
        line = next(n for n, t in enumerate(fh, 1) if t.rstrip().endswith("# MARK"))
    assert str(err.value).startswith(f"{__file__}:{line}")
