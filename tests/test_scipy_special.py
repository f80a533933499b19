"""Losses calling scipy.special (expit, logit, erf, ndtr, logsumexp, softmax, log_softmax).

Before, adgen compiled scipy's own Python source (``logsumexp``) and failed inside it, or had
no rule for the ufunc (``expit``). The rules (adgen.rules.scipy_special) register once the
user's code imports scipy.special. grad, jvp and hvp against central differences; the
generated ``-o`` module runs without adgen. Skipped without scipy (the "examples" extra).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

special = pytest.importorskip("scipy.special")


def logistic_nll(w, X, y):
    p = special.expit(X @ w)
    return -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))


def cross_entropy(W, X, labels):
    lp = special.log_softmax(X @ W, axis=1)
    return -np.sum(lp[np.arange(len(labels)), labels])


def log_partition(W, X):
    z = X @ W
    z -= special.logsumexp(z, axis=0, keepdims=True)   # normalised in place
    return np.sum(special.logsumexp(z, axis=1)) + special.logsumexp(W)


def attention_weights(W, X):
    P = special.softmax(X @ W, axis=-1)
    return np.sum(P * P)


def probit(w, X, y):
    return np.sum(special.erf(X @ w) * y) + np.sum(special.erfc(w) ** 2) + \
        np.sum(special.ndtr(w)) + np.sum(special.log_ndtr(w - 3.0))


def squashed(w, X, y):
    return np.sum(special.logit(0.8 * special.expit(w) + 0.1) ** 2)


_rng = np.random.default_rng(7)
_X = _rng.normal(size=(5, 3))
_y = (_rng.random(5) > 0.5).astype(float)
_W = 0.5 * _rng.normal(size=(3, 3))
_w = 0.5 * _rng.normal(size=3)
CASES = [(logistic_nll, (_w, _X, _y)), (cross_entropy, (_W, _X, np.array([0, 1, 2, 1, 0]))),
         (log_partition, (_W, _X)), (attention_weights, (_W, _X)), (probit, (_w, _X, _y)),
         (squashed, (_w, _X, _y))]


@pytest.mark.parametrize("f, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_grad_jvp_and_hvp(f, args):
    want = numerical_grad(f, args, 0)
    assert_grad_close(adgen.grad(f)(*args), want)
    v = np.linspace(-1.0, 1.0, args[0].size).reshape(args[0].shape)
    _, slope = adgen.jvp(lambda a: f(a, *args[1:]), (args[0],), (v,))
    assert np.isclose(slope, np.sum(want * v), atol=1e-6)
    g = adgen.grad(lambda a: f(a, *args[1:]))
    h = 1e-5
    ref = (g(args[0] + h * v) - g(args[0] - h * v)) / (2 * h)
    np.testing.assert_allclose(adgen.hvp(lambda a: f(a, *args[1:]))(args[0], v), ref,
                               atol=1e-5)


def test_a_refused_option_names_the_line():
    def signed(a):
        return special.logsumexp(a, b=np.ones(3), return_sign=True)[0]

    with pytest.raises(adgen.AdgenError, match="logsumexp") as err:
        adgen.grad(signed)(_w)
    assert "return special.logsumexp(a, b=np.ones(3), return_sign=True)[0]" in str(err.value)


def test_the_standalone_module_needs_no_adgen(tmp_path):
    path = tmp_path / "logistic_adjoint.py"
    path.write_text(adgen.standalone_source(logistic_nll))
    spec = importlib.util.spec_from_file_location("logistic_adjoint", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out, saved = module.logistic_nll_forward(_w, _X, _y)
    assert_grad_close(module.logistic_nll_pullback(saved, 1.0)[0],
                      numerical_grad(logistic_nll, (_w, _X, _y), 0))


def test_import_adgen_does_not_import_scipy():
    code = "import sys, adgen; print('scipy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"
