"""Parameters named like the names adgen's generated code uses for itself (the pullback's
``sh``, ``saved``, ``out_bar``, ``top``; a runtime helper's, ``unbroadcast``; temporaries'
``t1``, ``seq1``, ``walked``): every mode differentiates the function as written, with the
parameter passed by keyword under the user's name.

Before: jvp, hessian (and jacfwd) of a function with a keyword-only parameter ``sh``,
``saved``, ``out_bar``, ``top`` or ``unbroadcast`` raised CompilerError ("internal error in
pass 'tangent': min() arg is an empty sequence"): the parameter had been renamed apart
(``sh_1``) and forward mode looked for its keyword-only parameters under the old name.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad

NAMES = ["sh", "saved", "out_bar", "top", "unbroadcast", "t1", "seq1", "walked", "x_dot",
         "x_bar", "zero_tangent"]


def _function(param: str):
    """``f(x, *, <param>=2.0) = sum(sin(x) * x * <param>)``, written with that name."""
    namespace = {"np": np}
    source = (f"def scaled(x, *, {param}=2.0):\n"
              f"    return np.sum(np.sin(x) * x * {param})\n")
    # one file per process: pytest-xdist's workers write it at the same time
    path = os.path.join(tempfile.gettempdir(),
                        f"adgen_test_generated_names_{param}_{os.getpid()}.py")
    with open(path, "w") as fh:
        fh.write(source)
    exec(compile(source, path, "exec"), namespace)
    return namespace["scaled"]


X = np.array([0.3, 0.7, -1.2])


def _hessian(x, k):
    # d2/dx2 of sin(x) x k: k (2 cos x - x sin x) on the diagonal
    return np.diag(k * (2 * np.cos(x) - x * np.sin(x)))


@pytest.mark.parametrize("param", NAMES)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_grad_of_a_keyword_only_parameter_named_like_generated_code(param, mutation):
    fn = _function(param)
    for kw in ({param: 3.0}, {}):
        want = numerical_grad(lambda a: fn(a, **kw), (X,), 0)
        np.testing.assert_allclose(adgen.grad(fn, mutation=mutation)(X, **kw), want,
                                   rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("param", [n for n in NAMES if n != "zero_tangent"])
def test_forward_mode_and_hessian_of_such_a_parameter(param):
    fn = _function(param)
    for kw, k in (({param: 3.0}, 3.0), ({}, 2.0)):
        want = numerical_grad(lambda a: fn(a, **kw), (X,), 0)
        v = np.array([1.0, -0.5, 2.0])
        out, dot = adgen.jvp(fn, (X,), (v,), **kw)
        assert out == pytest.approx(fn(X, **kw))
        assert dot == pytest.approx(float(want @ v), rel=1e-6)
        np.testing.assert_allclose(adgen.hessian(fn)(X, **kw), _hessian(X, k), atol=1e-10)
        np.testing.assert_allclose(adgen.jacfwd(fn)(X, **kw), want, rtol=1e-6, atol=1e-8)
        _, pullback = adgen.vjp(fn, X, **kw)
        np.testing.assert_allclose(pullback(1.0)[0], want, rtol=1e-6, atol=1e-8)


def positional(sh, saved, top):
    return np.sum(np.sin(sh) * saved * top)


def test_positional_parameters_named_like_generated_code():
    args = (X, 3.0, 0.5)
    want = [numerical_grad(positional, args, n) for n in range(3)]
    got = adgen.grad(positional, argnums=(0, 1, 2))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8)
    v = np.array([1.0, 2.0, 0.5])
    _, dot = adgen.jvp(positional, args, (v, None, None))
    assert dot == pytest.approx(float(want[0] @ v), rel=1e-6)
    got = adgen.grad(positional)(X, saved=3.0, top=0.5)
    np.testing.assert_allclose(got, want[0], rtol=1e-6, atol=1e-8)
    out, dot = adgen.jvp(positional, (X,), (v,), saved=3.0, top=0.5)
    assert dot == pytest.approx(float(want[0] @ v), rel=1e-6)


def test_a_keyword_only_parameter_named_like_a_helper_the_jvp_calls_is_refused():
    # the tangent code calls adgen's zero_tangent: a keyword-only parameter of that name would
    # hide it (TypeError: 'float' object is not callable), so it is refused, naming it
    fn = _function("zero_tangent")
    with pytest.raises(adgen.UnsupportedError, match="keyword-only parameter named "
                                                     "zero_tangent"):
        adgen.jvp(fn, (X,), (np.ones(3),), zero_tangent=3.0)


def by_helper_name(x, zero_tangent):
    return np.sum(np.sin(x) * x * zero_tangent)


def test_a_positional_parameter_named_like_a_helper_the_jvp_calls():
    v = np.array([1.0, -0.5, 2.0])
    want = numerical_grad(by_helper_name, (X, 3.0), 0)
    _, dot = adgen.jvp(by_helper_name, (X, 3.0), (v, None))
    assert dot == pytest.approx(float(want @ v), rel=1e-6)
    np.testing.assert_allclose(adgen.hessian(by_helper_name)(X, 3.0), _hessian(X, 3.0),
                               atol=1e-10)
