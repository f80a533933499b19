"""A callback adgen can name only when it runs (a parameter, an item of a dict, an
attribute) that stores a value with a derivative into a global dict or list, read back by
the caller into its result.

``cb(y)`` with ``cb`` storing ``CACHE["y"] = y``, then ``return np.sum(CACHE["y"] ** 2)``;
``hook["log"](y)`` with the hook appending to ``HIST``, then ``np.sum(HIST[-1] ** 2)``: grad
gave a silently wrong gradient (the stored term's part dropped: 0.985 off on a 2-vector), and
so did a helper called by name that stores into a global dict. Now refused at the read, in
grad (both policies), jvp and hessian. A callback that leaves the container as it was, or
puts a value without a derivative there (a count), still runs: values against central
differences and hand formulas (f = sum(sin(x)^2): grad sin(2x)).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

POLICIES = ["save", "strict"]
CACHE: dict = {}
HIST: list = []
STATS: dict = {"calls": 0, "scale": 2.0}
X = np.array([0.3, 0.7, 1.1])
V = np.array([1.0, -0.5, 2.0])


def store(y):
    CACHE["y"] = y


def push(y):
    HIST.append(y)


def count(y):
    STATS["calls"] = STATS["calls"] + 1


def reads_what_the_callback_stored(x, cb):
    y = np.sin(x)
    cb(y)
    return np.sum(CACHE["y"] ** 2)


def reads_what_the_hook_logged(x, hook):
    y = np.sin(x)
    hook["log"](y)
    return np.sum(HIST[-1] ** 2)


class Options:
    def __init__(self, log):
        self.log = log


def reads_what_the_option_logged(x, opts):
    y = np.sin(x)
    opts.log(y)
    return np.sum(HIST[-1] ** 2)


def reads_what_a_helper_stored(x):
    y = np.sin(x)
    store(y)
    return np.sum(CACHE["y"] ** 2)


def reads_options_after_the_hook(x, hook):
    y = np.sin(x)
    hook["log"](y)
    return np.sum(y ** 2) * STATS["scale"]


CASES = [
    (reads_what_the_callback_stored, (store,), 'CACHE["y"]'),
    (reads_what_the_hook_logged, ({"log": push},), "HIST[-1]"),
    (reads_what_the_option_logged, (Options(push),), "HIST[-1]"),
    (reads_what_a_helper_stored, (), 'CACHE["y"]'),
]
IDS = ["callback parameter into a dict", "hook in a dict into a list",
       "hook in an attribute into a list", "helper by name into a dict"]


def _wrong_before(f, extra):
    # what the gradient is (central differences): sin(2x), which adgen gave as 0 before
    g = numerical_grad(lambda z: f(z, *extra), (X.copy(),), 0)
    np.testing.assert_allclose(g, np.sin(2 * X), rtol=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize(("f", "extra", "read"), CASES, ids=IDS)
def test_a_value_stored_by_a_callback_and_read_back_is_refused(mutation, f, extra, read):
    _wrong_before(f, extra)
    with pytest.raises(adgen.UnsupportedError, match="into the result") as err:
        adgen.grad(f, mutation=mutation)(X.copy(), *extra)
    assert read in err.value.location.source_line
    assert err.value.location.file == __file__


@pytest.mark.parametrize(("f", "extra", "read"), CASES, ids=IDS)
def test_jvp_and_hessian_refuse_it_too(f, extra, read):
    with pytest.raises(adgen.UnsupportedError, match="into the result") as err:
        adgen.jvp(f, (X.copy(), *extra), (V, *[None] * len(extra)))
    assert read in err.value.location.source_line
    # (hessian: where the callback is a method of an object passed in, opts.log(y), it may be
    # refused first as a callee that changes an object it is given, also at the user's line)
    with pytest.raises(adgen.UnsupportedError,
                       match="into the result|second derivatives .* through") as err:
        adgen.hessian(f)(X.copy(), *extra)
    assert err.value.location.file == __file__


def store_and_scale(y):
    CACHE["y"] = y
    return 2.0 * y


def uses_the_callback_result_and_the_cache(x, cb):
    y = np.sin(x)
    z = cb(y)
    return np.sum(CACHE["y"] ** 2) + np.sum(z)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_callback_whose_result_is_used_is_checked_too(mutation):
    # differentiated through adgen's dispatch (its result has a derivative): grad gave
    # 2 cos(x) for sin(2x) + 2 cos(x)
    f = uses_the_callback_result_and_the_cache
    g = numerical_grad(lambda z: f(z, store_and_scale), (X.copy(),), 0)
    np.testing.assert_allclose(g, np.sin(2 * X) + 2 * np.cos(X), rtol=1e-6)
    with pytest.raises(adgen.UnsupportedError, match="into the result") as err:
        adgen.grad(f, mutation=mutation)(X.copy(), store_and_scale)
    assert 'CACHE["y"]' in err.value.location.source_line
    # (jvp: a NameError CACHE_dot before, then a silently wrong tangent)
    with pytest.raises(adgen.UnsupportedError, match="into the result") as err:
        adgen.jvp(f, (X.copy(), store_and_scale), (V, None))
    assert 'CACHE["y"]' in err.value.location.source_line


def uses_the_callback_result(x, cb):
    y = np.sin(x)
    return np.sum(cb(y) * y)


def caches_what_it_computes(x):
    y = np.sin(x)
    CACHE["y"] = y
    return np.sum(y ** 2)


@pytest.mark.parametrize(("f", "extra"), [(uses_the_callback_result, (store_and_scale,)),
                                          (caches_what_it_computes, ())],
                         ids=["callback", "directly"])
def test_a_store_into_a_global_dict_the_result_does_not_read_runs_in_every_mode(f, extra):
    # jvp raised NameError: name 'CACHE_dot' is not defined (the store took a tangent)
    hand = 2.0 * np.sin(2 * X) if extra else np.sin(2 * X)
    num = numerical_grad(lambda z: f(z, *extra), (X.copy(),), 0)
    np.testing.assert_allclose(num, hand, rtol=1e-6)
    for mutation in POLICIES:
        np.testing.assert_allclose(adgen.grad(f, mutation=mutation)(X.copy(), *extra), hand,
                                   rtol=1e-10)
    _, tangent = adgen.jvp(f, (X.copy(), *extra), (V, *[None] * len(extra)))
    assert tangent == pytest.approx(hand @ V)
    np.testing.assert_allclose(CACHE["y"], np.sin(X))


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("hook", [{"log": count}, {"log": push}, {"log": lambda y: None}],
                         ids=["counts", "logs into another list", "does nothing"])
def test_options_read_after_a_hook_that_does_not_store_a_derivative_there(mutation, hook):
    # the hook counts its calls in STATS (an int: no derivative), or writes elsewhere
    f = reads_options_after_the_hook
    g = adgen.grad(f, mutation=mutation)(X.copy(), hook)
    np.testing.assert_allclose(g, 2.0 * np.sin(2 * X), rtol=1e-10)
    np.testing.assert_allclose(g, numerical_grad(lambda z: f(z, hook), (X.copy(),), 0),
                               rtol=1e-6)
    _, tangent = adgen.jvp(f, (X.copy(), hook), (V, None))
    assert tangent == pytest.approx(2.0 * np.sin(2 * X) @ V)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_callback_storing_into_a_dict_the_caller_does_not_read_runs(mutation):
    def f(x, cb):
        y = np.sin(x)
        cb(y)
        return np.sum(y ** 2) * STATS["scale"]

    g = adgen.grad(f, mutation=mutation)(X.copy(), store)
    np.testing.assert_allclose(g, 2.0 * np.sin(2 * X), rtol=1e-10)
    np.testing.assert_allclose(CACHE["y"], np.sin(X))  # (the store ran)
