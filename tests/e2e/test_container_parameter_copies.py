"""A helper that takes a container and may make its own (``if cache is None: cache = {}``),
then writes into it, called with the caller's dict or list, which the caller reads after the
call. The written name is then a copy of the parameter (SSA joins ``cache_2 = cache`` and
``cache_2 = {}``), whose adjoint in the helper's pullback started from zeros: the caller's
gradient of what it read back was lost, silently, under both policies (through_dict gave
[0.25, 1.44, 4.0] for [0.75, 4.32, 12.0]). The pullback now starts that name's adjoint from
the caller's (``sh.withdraw``, by the object: a new dict starts from zeros) and hands it back
to the parameter through the join. A plain copy in the helper (``q = d; q["h"] = ...``, ``m = memo; m.h = ...``) gave it no
pullback and no tangent code at all (q was no output). Second derivatives of a helper's dict
written through its
jvp code (``if d_dot is None: d_dot = zero_tangent(d)``) were wrong the same way (a Hessian of
4 x for 6 x). Expected values: central differences, and hand formulas.
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]


def record(v, cache=None):
    if cache is None:
        cache = {}
    cache["h"] = v ** 2
    return v


def through_dict(x):
    c = {}
    record(x, c)
    return np.sum(c["h"] * x)


def collect(v, acc=None):
    if acc is None:
        acc = []
    acc.append(v ** 2)
    return acc


def through_list(x):
    acc = []
    collect(x, acc)
    return np.sum(acc[0] * x)


def without_cache(x):  # the helper makes its own list: unchanged
    c = collect(x)
    return np.sum(c[0] * x)


def loss(w, cache=None):  # the function differentiated makes or takes the dict itself
    if cache is None:
        cache = {}
    cache["z"] = np.tanh(w)
    return np.sum(cache["z"] ** 2)


class Memo:
    pass


def remember(v, memo):
    m = memo
    m.h = v ** 2


def through_object(x, memo):
    remember(x, memo)
    return np.sum(memo.h * x)


def plain_copy(d, v):
    q = d
    q["h"] = np.sin(v)


def through_copy(x):
    d = {"h": x}
    plain_copy(d, x * 2.0)
    return np.sum(d["h"] * x)


def keep_in(d, v):
    d["h"] = v ** 2


def kept(x):
    d = {}
    keep_in(d, x)
    return np.sum(d["h"] * x)


X = np.array([0.5, -1.2, 2.0])


@pytest.mark.parametrize("f", [through_dict, through_list, without_cache, loss, through_copy])
@pytest.mark.parametrize("mutation", POLICIES)
def test_gradient_through_a_copy_of_a_container_parameter(f, mutation):
    got = adgen.grad(f, mutation=mutation)(X.copy())
    np.testing.assert_allclose(got, numerical_grad(f, (X.copy(),), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_plain_copy_of_an_object_parameter(mutation):
    # q = d (or m = memo) in the helper: its pullback and jvp left the write out (the
    # gradient lost the term read back, the jvp raised AttributeError on memo_dot.h)
    got = adgen.grad(through_object, mutation=mutation)(X.copy(), Memo())
    np.testing.assert_allclose(got, 3 * X ** 2, rtol=1e-12)
    _, slope = adgen.jvp(through_object, (X.copy(), Memo()), (np.ones(3), None))
    assert slope == pytest.approx(np.sum(3 * X ** 2), rel=1e-12)
    _, slope = adgen.jvp(through_copy, (X.copy(),), (np.ones(3),))
    assert slope == pytest.approx(np.sum(numerical_grad(through_copy, (X.copy(),), 0)),
                                  rel=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_dict_given_and_the_vjp_pullback_twice(mutation):
    out, pullback = adgen.vjp(lambda w: loss(w, {}), X.copy())
    want = 2 * np.tanh(X) * (1 - np.tanh(X) ** 2)  # d/dw sum(tanh(w) ** 2)
    for _ in range(2):
        np.testing.assert_allclose(pullback(1.0)[0], want, rtol=1e-12)
    np.testing.assert_allclose(adgen.grad(through_dict, mutation=mutation)(X.copy()),
                               3 * X ** 2, rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_of_a_helper_writing_a_dict(mutation):
    # sum(x ** 3) written through the helper's dict: diag(6 x); it gave diag(4 x)
    np.testing.assert_allclose(adgen.hessian(kept, mutation=mutation)(X.copy()),
                               np.diag(6 * X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", [through_list, without_cache])
@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_through_a_list_made_or_given_names_the_users_lines(f, mutation):
    # refused (reverse mode over the jvp code does not follow acc through the join); the
    # message named a line of the generated jvp code ('joined at line 16') and its SSA name
    # acc_2: now the user's call, the user's line of the join and acc
    import inspect

    join = inspect.getsourcelines(collect)[1] + 1  # if acc is None:
    with pytest.raises(adgen.errors.UnsupportedError) as info:
        adgen.hessian(f, mutation=mutation)(X.copy())
    err = info.value
    assert err.location.file == __file__
    assert err.location.line == inspect.getsourcelines(f)[1] + (2 if f is through_list else 1)
    message = str(err)
    assert f"joined at line {join} of test_container_parameter_copies.py" in message
    assert "acc.append(v ** 2)" in message and "acc_2" not in message
