"""Forward mode (and second derivatives through it) of a value with a derivative passed by
keyword to a function adgen finds when the call runs: a ``kw_only`` dataclass field
(``Layer(w, c=b * 3.0)``, which Python only takes by keyword), a method's keyword-only
parameter (``m.f(x, s=w[1])``), a function taken from a dict, a ``functools.partial``, a
function passed in, ``dataclasses.replace`` of a class with a ``kw_only`` field.

jvp refused all of them ("forward mode (jvp) does not support passing a value with a
derivative by keyword ... to a function found when the call runs"), and with it jacfwd,
hessian and hvp. The keyword arguments' tangents now follow the positional ones in
``call_jvp`` / ``construct_jvp`` (tangent_calls.keyword_tangents), reach the compiled jvp by
name, and at second order their cotangents go back to the keyword values and their
tangents. A NumPy function or a closure found when the call runs is still refused by name.
Checked against central differences and second differences.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

W = np.array([0.3, -0.2, 0.7])
V = np.array([1.0, -0.4, 0.3])


@dataclass
class Options:
    w: np.ndarray
    c: float = field(default=2.0, kw_only=True)
    d: float = field(default=1.0, kw_only=True)


def kw_only_fields(w):
    p = Options(np.sin(w), d=np.sum(w), c=w[0] ** 2)
    return np.sum(p.w) * p.c + p.d ** 2


@dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    c: float = field(default=2.0, kw_only=True)

    def __post_init__(self):
        object.__setattr__(self, "n", np.sum(self.w ** 2) * self.c)


def frozen_kw_only(w):
    p = Frozen(w * 2.0, c=np.prod(w))
    return p.n + np.sum(np.cos(p.w)) * p.c


def replaced_kw_only(w):
    p = Frozen(w, c=1.5)
    q = dataclasses.replace(p, w=p.w ** 2, c=w[2])
    return q.n * np.sum(q.w)


class Model:
    def __init__(self, a):
        self.a = a

    def score(self, x, *, s=1.0):
        return np.sum(self.a * x) * s ** 2


def method_keyword_only(w):
    m = Model(w * 2.0)
    return m.score(np.cos(w), s=w[1])


def helper(x, *, k=1.0, s=2.0):
    return np.sum(np.sin(x) * k) + s ** 2


def helper_taking_kwargs(x, **kw):
    return np.sum(x) * kw["k"] ** 2


FUNCTIONS = {"h": helper, "kw": helper_taking_kwargs}


def from_a_dict(w):
    f = FUNCTIONS["h"]
    return f(w, s=w[0], k=np.sum(w ** 2))


def from_a_dict_with_kwargs(w):
    return FUNCTIONS["kw"](w * 2.0, k=w[2])


def through_a_partial(w):
    f = functools.partial(helper, s=3.0)
    return f(w, k=w[1] ** 2)


def passed_in(w, f=helper):
    return f(w ** 2, k=w[1])


CASES = [kw_only_fields, frozen_kw_only, replaced_kw_only, method_keyword_only, from_a_dict,
         from_a_dict_with_kwargs, through_a_partial, passed_in]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    check_jvp(f, [W.copy()], [V])


def test_jvp_by_hand():
    # kw_only_fields: f = sum(sin w) w0^2 + (sum w)^2
    want = np.cos(W) * W[0] ** 2 + 2 * np.sum(W)
    want[0] += 2 * W[0] * np.sum(np.sin(W))
    _, t = adgen.jvp(kw_only_fields, (W.copy(),), (V,))
    assert np.isclose(t, want @ V, rtol=1e-12)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_second_derivatives(f):
    want = numerical_hessian(f, W.copy())
    tol = {"rtol": 1e-4, "atol": 1e-4 * (1 + np.abs(want).max())}
    np.testing.assert_allclose(adgen.hessian(f)(W.copy()), want, **tol)
    np.testing.assert_allclose(adgen.jacfwd(adgen.jacfwd(f))(W.copy()), want, **tol)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient(f, mutation):
    check_grad(f, [W.copy()], mutation=mutation, strict_must_compute=True)


CLIPS = [np.clip]


def numpy_function_in_a_list(w):
    return np.sum(CLIPS[0](w, a_min=w[0] * 0.5, a_max=None) ** 2)


def closure_in_a_list(w):
    c = w[0]

    def scaled(x, k=1.0):
        return np.sum(x * c) * k

    fs = [scaled]
    return fs[0](w, k=w[1])  # MARK closure


def test_a_numpy_function_or_a_closure_is_refused_by_name():
    with pytest.raises(adgen.UnsupportedError, match="by keyword to clip"):
        adgen.jvp(numpy_function_in_a_list, (W.copy(),), (V,))
    # (refused at the list where forward mode hands no closure on as a value)
    with pytest.raises(adgen.UnsupportedError, match="the nested function scaled") as info:
        adgen.jvp(closure_in_a_list, (W.copy(),), (V,))
    assert info.value.location.file == __file__
