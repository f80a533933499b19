"""grad's single-use pullback (transforms/single_use.py, lean_pullback's consumable names):
a saved float64 array the forward made fresh and nothing else holds is written in place at
its last read (``p *= s; t_bar -= p`` for ``t_bar -= p * s``), only in the compilation
``grad`` and ``value_and_grad`` run (their pullback runs once); ``vjp``'s pullback and the
program a second derivative differentiates keep the reusable form.

Gradients against central differences under both policies, through grad, value_and_grad
(both its calls: the generic path and the fast form written at a signature's second call),
a lambda and a method; vjp's pullback called twice; hessian and jacrev(grad); a saved
array also returned through has_aux, kept in a list or viewed must not be consumed (the
tests fail when the rule ignores those reads).
"""

from __future__ import annotations

import gast
import numpy as np
import pytest
from adgen.transforms.analyses.kinds import signature
from adgen.transforms.single_use import consumable_saved
from gradcheck import check_grad, numerical_grad

import adgen
from adgen.api import compile_fun

POLICIES = ["save", "strict"]
RNG = np.random.default_rng(5)
W = 0.3 * RNG.standard_normal((4, 3))
X = RNG.standard_normal((6, 4))
LABELS = np.eye(3)[RNG.integers(0, 3, 6)]
KEPT: list[np.ndarray] = []


def xent(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


def xent_aux(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0], p


def xent_view(W, X, Y):
    z = X @ W
    e = np.exp(z)
    p = e / np.sum(e, axis=1, keepdims=True)
    first = p[:, :2]  # a view of p, read by the pullback after p's own last read
    return -np.sum(Y * np.log(p)) + np.sum(first * first * first)


def xent_kept(W, X, Y):
    z = X @ W
    e = np.exp(z)
    p = e / np.sum(e, axis=1, keepdims=True)
    KEPT.append(p)
    return -np.sum(Y * np.log(p))


class Classifier:
    def __init__(self, scale: float) -> None:
        self.scale = scale

    def loss(self, W, X, Y):
        z = self.scale * (X @ W)
        e = np.exp(z - z.max(axis=1, keepdims=True))
        p = e / np.sum(e, axis=1, keepdims=True)
        return -np.sum(Y * np.log(p))


def _compiled(f, args, argnums=(0,), single_use=True, mutation="save"):
    return compile_fun(f, mutation, wrt=argnums, sig=signature(args), single_use=single_use)


def test_the_softmax_is_consumed_only_in_the_single_use_form():
    args = (W, X, LABELS)
    once = _compiled(xent, args)
    assert once.consumes == {"p"}
    assert "p *= sum_keepdims(" in once.own_source
    again = _compiled(xent, args, single_use=False)
    assert again.consumes == frozenset() and "p *=" not in again.own_source


@pytest.mark.parametrize("mutation", POLICIES)
def test_grad_and_value_and_grad_against_central_differences(mutation):
    args = (W, X, LABELS)
    want = numerical_grad(xent, args, 0)
    for _ in range(3):  # the generic path, then the fast form
        check_grad(xent, args, 0, mutation=mutation)
        value, g = adgen.value_and_grad(xent, mutation=mutation)(*args)
        np.testing.assert_allclose(value, xent(W, X.copy(), LABELS), rtol=1e-12)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    check_grad(xent, args, (0, 1), mutation=mutation)
    check_grad(lambda w, x: xent(w, x, LABELS), (W, X), 0, mutation=mutation)
    model = Classifier(0.7)
    for _ in range(3):
        check_grad(model.loss, args, 0, mutation=mutation)


@pytest.mark.parametrize("mutation", POLICIES)
def test_vjp_pullback_runs_twice(mutation):
    out, pullback = adgen.vjp(xent, W, X, LABELS, mutation=mutation)
    first = pullback(1.0)
    second = pullback(1.0)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(first[0], numerical_grad(xent, (W, X, LABELS), 0),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(pullback(2.0)[0], 2 * first[0], rtol=1e-14)


def test_second_derivatives():
    def g(w):
        return adgen.grad(xent)(w, X, LABELS)

    g(W)
    want = np.zeros(W.shape + W.shape)
    for i in np.ndindex(W.shape):
        e = np.zeros_like(W)
        e[i] = 1e-5
        want[(slice(None), slice(None)) + i] = (g(W + e) - g(W - e)) / 2e-5
    np.testing.assert_allclose(adgen.hessian(xent)(W, X, LABELS), want, atol=1e-7)
    np.testing.assert_allclose(adgen.jacrev(adgen.grad(xent))(W, X, LABELS), want, atol=1e-7)


@pytest.mark.parametrize("mutation", POLICIES)
def test_an_auxiliary_output_is_not_consumed(mutation):
    args = (W, X, LABELS)
    assert "p" not in _compiled(xent_aux, args).consumes
    want_p = xent_aux(W, X.copy(), LABELS)[1]
    for _ in range(3):
        g, p = adgen.grad(xent_aux, has_aux=True, mutation=mutation)(*args)
        np.testing.assert_array_equal(p, want_p)  # consumed, it would hold p * s
        np.testing.assert_allclose(g, numerical_grad(lambda *a: xent_aux(*a)[0], args, 0),
                                   rtol=1e-6, atol=1e-8)
        (value, p2), g2 = adgen.value_and_grad(xent_aux, has_aux=True,
                                               mutation=mutation)(*args)
        np.testing.assert_array_equal(p2, want_p)
        np.testing.assert_array_equal(g2, g)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_view_or_a_list_keeps_the_array(mutation):
    args = (W, X, LABELS)
    assert "p" not in _compiled(xent_view, args).consumes
    assert "p" not in _compiled(xent_kept, args).consumes
    for _ in range(3):
        check_grad(xent_view, args, 0, mutation=mutation)
    for _ in range(3):
        KEPT.clear()
        g = adgen.grad(xent_kept, mutation=mutation)(*args)
        got = KEPT[0]
        KEPT.clear()
        xent_kept(*args)
        np.testing.assert_array_equal(got, KEPT[0])  # what the list kept is the softmax
    np.testing.assert_allclose(g, numerical_grad(xent_kept, args, 0), rtol=1e-6, atol=1e-8)
    KEPT.clear()


def _forward(text: str) -> gast.FunctionDef:
    return gast.parse(text).body[0]


@pytest.mark.parametrize("body, consumed", [
    ("p = e / s\n    t = np.log(p)", {"p"}),
    ("p = e / s\n    t = np.log(p)\n    q = p", set()),  # an alias
    ("p = e / s\n    t = np.log(p)\n    v = p.T", set()),  # a view
    ("p = e / s\n    t = np.log(p)\n    v = p[1:]", set()),
    ("p = e / s\n    t = np.log(p)\n    L.append(p)", set()),  # a container
    ("p = e / s\n    t = np.log(p)\n    G[0] = p", set()),
    ("p = e / s\n    t = helper(p)", set()),  # a call adgen does not see into here
    ("p = e / s\n    t = np.log(p, out=p)", set()),
    ("p = e / s\n    p[0] = 1.0", set()),  # written after
    ("p = np.asarray(e)", set()),  # not made by arithmetic: may be e itself
])
def test_reads_that_keep_the_array(body, consumed):
    fn = _forward(f"def f_forward(e, s):\n    {body}\n    return (t, (p, e))\n"
                  if "return" not in body else body)
    assert consumable_saved(fn, {"p": 2, "e": 2, "t": 2}, {"p", "e", "t"}) == consumed


def test_a_returned_array_is_kept():
    fn = _forward("def f_forward(e, s):\n    p = e / s\n    return (p, (p, e))\n")
    assert consumable_saved(fn, {"p": 2, "e": 2}, {"p", "e"}) == set()
    fn = _forward("def f_forward(e, s):\n    p = e / s\n    return ((np.sum(p), p), (p,))\n")
    assert consumable_saved(fn, {"p": 2, "e": 2}, {"p", "e"}) == set()


def xent_kept_dims(W, X, Y):
    z = X @ W
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    p = z / np.sum(z, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p), axis=(0, 1), keepdims=True) / X.shape[0]


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_size_one_array_output(mutation):
    # grad's seed is then an array (np.ones_like of the output), float64 in the single-use
    # form, where the softmax is still consumed
    args = (W, X, LABELS)
    assert "p *= sum_keepdims(" in _compiled(xent_kept_dims, args).own_source
    for _ in range(3):
        check_grad(xent_kept_dims, args, 0, mutation=mutation)
