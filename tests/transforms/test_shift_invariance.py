"""analyses.shift_invariance: a row maximum that only shifts a softmax's input is a constant
for the reverse pass (its derivative through the shift is exactly zero), so its pullback
(``max_vjp``, the row sum of the cotangent) and what that reads (a copy of the logits before
``z -= m``) are gone; and where the exponential and its sums are read nowhere else, their
adjoint is the softmax's (``p * (p_bar - sum(p_bar * p))``, rules.reductions.softmax): the
pullback keeps ``p`` only, not the exponential or the sums.

Every function is differentiated under both policies and compared with central differences
of the plain function (check_grad also compares the arguments' final contents with a plain
call's). The positive cases check the shift's pullback is gone; the look-alikes (a shift
along another axis than the normalisation, the exponential or its row sums read elsewhere, an
alias read after the shift, an argument's buffer, the maximum read again) must keep it, and
stay right.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(7)
S = RNG.standard_normal((5, 4))
C = RNG.standard_normal((5, 4))
W = 0.5 * RNG.standard_normal((3, 4))
X = RNG.standard_normal((5, 3))


def softmax_loss(s, c):
    s1 = s - np.max(s, axis=1, keepdims=True)
    e = np.exp(s1)
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * c)


def in_place_xent(W, X, c):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(c * np.log(p)) / X.shape[0]


def last_axis(s, c):
    s = s - s.max(axis=-1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(axis=1, keepdims=True)
    return np.sum(a ** 2 * c)


def columns(s, c):
    e = np.exp(s - s.min(axis=0, keepdims=True))
    return np.sum(c * (e / np.sum(e, 0, keepdims=True)))


def mean_shift_3d(s, c):
    e = np.exp(s - np.mean(s, axis=2, keepdims=True))
    p = e / e.sum(axis=2, keepdims=True)
    return np.sum(p * c)


class Classifier:
    """A user's class: the softmax in a method, differentiated as a bound method."""

    def __init__(self, X, c):
        self.X, self.c = X, c

    def loss(self, W):
        logits = self.X @ W
        logits = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(logits)
        probs = probs / probs.sum(axis=1, keepdims=True)
        return np.sum(self.c * probs)


POSITIVE = [(softmax_loss, (S, C)), (in_place_xent, (W, X, np.abs(C))), (last_axis, (S, C)),
            (columns, (S, C)),
            (mean_shift_3d, (S.reshape(5, 2, 2), C.reshape(5, 2, 2)))]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f,args", POSITIVE, ids=[f.__name__ for f, _ in POSITIVE])
def test_the_shift_has_no_pullback(f, args, policy):
    check_grad(f, args, argnums=0, mutation=policy)
    # the reusable pullback (vjp's): grad's single-use one may compute in p itself
    code = adgen.source(f, *args, mutation=policy, single_use=False)
    assert "max_vjp" not in code and "min_vjp" not in code and "mean_vjp" not in code
    assert "copy_when_read" not in code and "capture(" not in code
    # the exponential and its sums get no adjoint: the softmax's, reading only its output
    pullback = code[code.index("_pullback("):]
    # (or the log-softmax's, where only np.log reads p)
    assert re.search(r"= (\w+) \* \((\w+_bar) - sum_keepdims\(\2 \* \1, \d\)\)",
                     pullback) or \
        re.search(r"= (\w+_bar) - \w+ \* sum_keepdims\(\1, \d\)", pullback) or \
        re.search(r"(\w+_bar) -= \w+ \* sum_keepdims\(\1, \d\)", pullback), pullback
    # (the last in place, where lean_pullback proves the adjoint owned and float64)
    assert "np.exp" not in pullback and "max_vjp" not in pullback


@pytest.mark.parametrize("policy", POLICIES)
def test_a_method_of_a_class(policy):
    model = Classifier(X, C)
    g = adgen.grad(model.loss, mutation=policy)(W.copy())
    reference = check_grad(lambda w: Classifier(X, C).loss(w), (W,), mutation=policy)
    np.testing.assert_allclose(g, reference, rtol=1e-12, atol=1e-14)


# --- look-alikes: the maximum keeps its derivative ---------------------------------------


def shift_other_axis(s, c):
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return np.sum(c * (e / np.sum(e, axis=1, keepdims=True)))


def exp_read_again(s, c):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * c) + 0.1 * np.sum(e)


def row_sums_read_again(s, c):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    t = np.sum(e, axis=1, keepdims=True)
    return np.sum(c * (e / t)) + np.sum(np.log(t))


def shifted_read_again(s, c):
    s1 = s - s.max(axis=1, keepdims=True)
    e = np.exp(s1)
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * c) + np.sum(s1 ** 2)


def max_read_again(s, c):
    m = s.max(axis=1, keepdims=True)
    e = np.exp(s - m)
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * c) + np.sum(m ** 2)


def alias_read_after(s, c):
    z = 2.0 * s
    y = z
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return np.sum(p * c) + np.sum(y)


def argument_buffer(z, c):
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return np.sum(p * c) + np.sum(z * c)


def logsumexp(s, c):
    m = s.max(axis=1, keepdims=True)
    return np.sum(c[:, :1] * (m + np.log(np.sum(np.exp(s - m), axis=1, keepdims=True))))


def divided_the_other_way(s, c):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return np.sum(c * (np.sum(e, axis=1, keepdims=True) / e))


def written_after(s, c):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    e *= 2.0
    return np.sum(p * c) + np.sum(e)


NEAR = [shift_other_axis, exp_read_again, row_sums_read_again, shifted_read_again,
        max_read_again, alias_read_after, argument_buffer, logsumexp, divided_the_other_way,
        written_after]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", NEAR, ids=[f.__name__ for f in NEAR])
def test_look_alikes_keep_the_maximum(f, policy):
    args = (S, C)
    check_grad(f, args, argnums=0, mutation=policy)
    if f is not argument_buffer or policy == "save":
        assert "max_vjp" in adgen.source(f, *args, mutation=policy)



@pytest.mark.parametrize("f,args", POSITIVE[:2], ids=[f.__name__ for f, _ in POSITIVE[:2]])
def test_second_order_through_the_softmax(f, args):
    """The softmax's pullback (its row sums: runtime.sum_keepdims) differentiated again:
    Hessian-vector products against central differences of the gradient."""
    x0, rest = args[0], args[1:]
    v = np.random.default_rng(2).standard_normal(x0.shape)
    g = adgen.grad(f)
    eps = 1e-5
    fd = (g(x0 + eps * v, *rest) - g(x0 - eps * v, *rest)) / (2 * eps)
    np.testing.assert_allclose(adgen.hvp(f)(x0.copy(), *rest, v), fd, rtol=1e-6, atol=1e-8)
    H = adgen.jacrev(adgen.grad(f))(x0.copy(), *rest)
    np.testing.assert_allclose(np.tensordot(H, v, axes=v.ndim), fd, rtol=1e-6, atol=1e-8)


# --- the log of a softmax read only by np.log: the log-softmax's adjoint ----------------------


def cross_entropy(s, y):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return -np.sum(y * np.log(p))


def log_probabilities_returned(s, y):
    s = s - np.max(s, axis=1, keepdims=True)
    probs = np.exp(s)
    probs = probs / np.sum(probs, axis=1, keepdims=True)
    logp = np.log(probs)
    return np.sum(logp * y) + np.sum(logp ** 2)


def probabilities_read_again(s, y):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return -np.sum(y * np.log(p)) + np.sum(p * y)


def log_in_place(s, y):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    np.log(p, out=p)
    return -np.sum(y * p)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [cross_entropy, log_probabilities_returned, in_place_xent],
                         ids=["cross_entropy", "log_probabilities_returned", "in_place_xent"])
def test_the_log_of_the_softmax_has_the_log_softmax_adjoint(f, policy):
    args = (W, X, np.abs(C)) if f is in_place_xent else (S, np.abs(C))
    check_grad(f, args, argnums=0, mutation=policy)
    code = adgen.source(f, *args, mutation=policy, single_use=False)  # (vjp's pullback)
    pullback = code[code.index("_pullback("):]
    assert re.search(r"= (\w+_bar) - \w+ \* sum_keepdims\(\1, 1\)", pullback) or \
        re.search(r"(\w+_bar) -= \w+ \* sum_keepdims\(\1, 1\)", pullback), pullback
    assert " / p" not in pullback and " / probs" not in pullback, pullback
    assert "max_vjp" not in pullback and "np.exp" not in pullback, pullback


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f", [probabilities_read_again, log_in_place])
def test_a_softmax_read_elsewhere_keeps_the_log_rule(f, policy):
    args = (S, np.abs(C))
    check_grad(f, args, argnums=0, mutation=policy)  # (strict refuses log(p, out=p))
    pullback = adgen.source(f, *args).split("_pullback(")[-1]
    assert "sum_keepdims(" in pullback and "* sum_keepdims(" not in \
        pullback.replace("p * (", ""), pullback


def test_second_order_through_the_log_softmax():
    x0 = S.copy()
    y = np.abs(C)
    v = np.random.default_rng(3).standard_normal(x0.shape)
    g = adgen.grad(cross_entropy)
    eps = 1e-5
    fd = (g(x0 + eps * v, y) - g(x0 - eps * v, y)) / (2 * eps)
    np.testing.assert_allclose(adgen.hvp(cross_entropy)(x0.copy(), y, v), fd, rtol=1e-6,
                               atol=1e-8)
    H = adgen.jacrev(adgen.grad(cross_entropy))(x0.copy(), y)
    np.testing.assert_allclose(np.tensordot(H, v, axes=2), fd, rtol=1e-6, atol=1e-8)


# --- a maximum over every element (session 24): a vector's softmax, shifted in place ---
# m = x.max() is one number, constant along every axis: strict refused e -= e.max() (the
# maximum's pullback read the e the line overwrites) though its derivative is zero here.

V = RNG.standard_normal(6)
CV = RNG.standard_normal(6)


def vector_softmax_in_place(x, c):
    e = x * 1.5
    e -= e.max()
    e = np.exp(e)
    return np.sum(c * (e / e.sum()))


def vector_log_softmax(x, c):
    s1 = x - np.max(x)
    return np.sum(c * (s1 - np.log(np.sum(np.exp(s1)))))


def rows_shifted_by_the_global_maximum(s, c):
    e = np.exp(s - s.max())
    return np.sum(c * (e / e.sum(axis=1, keepdims=True)))


FULL = [(vector_softmax_in_place, (V, CV)), (vector_log_softmax, (V, CV)),
        (rows_shifted_by_the_global_maximum, (S, C))]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f,args", FULL, ids=[f.__name__ for f, _ in FULL])
def test_a_maximum_over_every_element(f, args, policy):
    check_grad(f, args, argnums=0, mutation=policy, strict_must_compute=True)
    assert "max_vjp" not in adgen.source(f, *args, mutation=policy)


def rows_maximum_global_sum(s, c):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return np.sum(c * (e / e.sum()))


def vector_maximum_read_again(x, c):
    m = x.max()
    e = np.exp(x - m)
    return np.sum(c * (e / e.sum())) + m ** 2


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("f,args", [(rows_maximum_global_sum, (S, C)),
                                    (vector_maximum_read_again, (V, CV))],
                         ids=["rows_maximum_global_sum", "vector_maximum_read_again"])
def test_look_alikes_of_a_maximum_over_every_element(f, args, policy):
    # a row maximum under a sum over everything: not a constant shift of the sum's terms
    check_grad(f, args, argnums=0, mutation=policy)
    assert "max_vjp" in adgen.source(f, *args, mutation=policy)
