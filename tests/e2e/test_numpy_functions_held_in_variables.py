"""NumPy functions and index tricks held in a local variable, and called or indexed through
it: ``add = np.add; add(y, t, y)`` (its positional output), ``add(y, t, out=y)``, ``at =
np.add.at``, ``c = np.copyto``, ``mm = np.matmul`` with an output, ``c = np.r_`` indexed in
a lambda or nested def.

Until session 25 these raised NumPy's own TypeError in the pullback ("numpy.add() takes 2
positional arguments", under both policies: the call ran as it was, its output written
unseen), a MissingRuleError naming ufunc.at or copyto, or, for ``np.r_`` in a lambda, a
TypeError of the runtime; and ``c = np.r_ if flag else np.c_; c[z, 2.0 * z]`` was lowered as
``np.c_`` whatever the flag (value and gradient silently wrong). A local bound once to such
a function is now read as what it names (transforms/function_aliases.py); one bound to an
index trick on one path only is refused at the line; a NumPy function found only when the
call runs, given an output argument, is refused at the line. Checked against central
differences under both policies, and forward mode against central differences (not for
the index trick a nested def reads: its jvp is still 0, silently, as on HEAD before).
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_jvp

import adgen
from adgen.errors import UnsupportedError

POLICIES = ["save", "strict"]
X = np.array([0.3, -0.5, 0.9])


def add_positional_out(x):
    y = x * 1.0
    add = np.add
    add(y, x ** 2, y)
    return np.sum(y * x)


def add_keyword_out(x):
    y = x * 1.0
    add = np.add
    add(y, x ** 2, out=y)
    return np.sum(y * x)


def sin_positional_out(x):
    y = x * 1.0
    s = np.sin
    s(x, y)
    return np.sum(y * x)


def add_at_held(x):
    y = x * 1.0
    at = np.add.at
    at(y, [0, 0], x[:2] ** 2)
    return np.sum(y * x)


def copyto_held(x):
    y = np.zeros(3)
    c = np.copyto
    c(y, x ** 2)
    return np.sum(y * x)


def matmul_out_held(x):
    a = np.outer(x, x)
    y = np.zeros(3)
    mm = np.matmul
    mm(a, x, y)
    return np.sum(y * x)


def concatenator_in_a_lambda(z):
    c = np.r_
    pad = lambda a: c[a, 1.0]  # noqa: E731
    return np.sum(pad(z) ** 2)


def concatenator_in_a_nested_def(z):
    c = np.r_

    def pad(a):
        return c[a, 1.0]

    return np.sum(pad(z) ** 2)


HELD = [add_positional_out, add_keyword_out, sin_positional_out, add_at_held, copyto_held,
        matmul_out_held, concatenator_in_a_lambda, concatenator_in_a_nested_def]


@pytest.mark.parametrize("f", HELD, ids=lambda f: f.__name__)
@pytest.mark.parametrize("policy", POLICIES)
def test_gradients(f, policy):
    check_grad(f, (X,), 0, mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("f", HELD[:6], ids=lambda f: f.__name__)
def test_forward_mode(f):
    v = np.array([1.0, 0.5, -0.2])
    _, tangent = adgen.jvp(f, (X,), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(f, (X,), (v,)), rtol=1e-6, atol=1e-9)


def by_hand_add(x):
    # y = x + x^2 (in place), out = sum((x + x^2) x): d/dx = 2x + 3x^2
    return 2.0 * x + 3.0 * x ** 2


@pytest.mark.parametrize("policy", POLICIES)
def test_positional_output_by_hand(policy):
    np.testing.assert_allclose(adgen.grad(add_positional_out, mutation=policy)(X),
                               by_hand_add(X), rtol=1e-12)


def concatenator_on_one_path(z, flag=True):
    c = np.r_ if flag else np.c_
    r = c[z, 2.0 * z]
    return np.sum(r[1] * z[1])


@pytest.mark.parametrize("policy", POLICIES)
def test_an_index_trick_bound_on_one_path_is_refused(policy):
    # (it gave np.c_'s value 0.75 and gradient -3 for np.r_'s 0.25 and -1)
    with pytest.raises(UnsupportedError, match="np.r_ if flag else np.c_"):
        adgen.grad(concatenator_on_one_path, mutation=policy)(X)


def output_through_a_default(x, op=np.add):
    y = x * 1.0
    op(y, x ** 2, y)
    return np.sum(y * x)


def output_keyword_through_a_tuple(x, ops=(np.add,)):
    y = x * 1.0
    ops[0](y, x ** 2, out=y)
    return np.sum(y * x)


@pytest.mark.parametrize("f", [output_through_a_default, output_keyword_through_a_tuple])
@pytest.mark.parametrize("policy", POLICIES)
def test_an_output_given_to_a_function_found_when_it_runs_is_refused(f, policy):
    with pytest.raises(UnsupportedError, match="output argument"):
        adgen.grad(f, mutation=policy)(X)
    with pytest.raises(UnsupportedError, match="output argument|out="):
        adgen.jvp(f, (X,), (np.ones(3),))
