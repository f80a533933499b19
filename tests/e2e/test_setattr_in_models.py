"""``setattr`` and ``getattr`` in a model, as PyTorch users write layers named in a loop.

SILENT WRONG GRADIENT before: ``setattr(self, "l0", Lin(w))`` (or ``setattr(m, "w", w *
3.0)`` in the loss) was a call of a builtin without a rule whose result is unused, which adgen
took for a call that changes nothing: the attribute's value got no gradient (a zero gradient
for ``w``, under both policies). A constant name is now the store ``o.name = v``; a name
computed when the code runs (``setattr(self, f"l{k}", layer)``, ``getattr(self, f"l{k}")``)
is refused at its line, naming the list or dict to keep the layers in.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen
from adgen.errors import MissingRuleError

POLICIES = ["save", "strict"]
W1 = np.array([[0.3, -0.6, 0.2], [0.9, 0.1, -0.4], [-0.2, 0.5, 0.7]])
X = np.array([[0.5, -1.0, 0.8], [1.2, 0.3, -0.7]])


class Lin:
    def __init__(self, w):
        self.w = w

    def __call__(self, x):
        return np.tanh(x @ self.w)


class NamedByConstant:
    def __init__(self, w0, w1):
        setattr(self, "l0", Lin(w0))
        self.l1 = Lin(w1)

    def forward(self, x):
        return self.l1(self.l0(x))


class ScaledInPlace:
    def __init__(self, w):
        self.w = w

    def rescale(self, s):
        setattr(self, "w", self.w * s)


def loss_layers(w0, x):
    net = NamedByConstant(w0, W1)
    return np.sum(net.forward(x) ** 2)


def loss_set_in_the_loss(w, x):
    m = Lin(np.zeros((3, 3)))
    setattr(m, "w", w * 3.0)
    return np.sum(m(x) ** 2)


def loss_set_by_a_method(w, x):
    m = ScaledInPlace(w)
    m.rescale(0.5)
    r = setattr(m, "w", m.w + 1.0)
    return np.sum(np.tanh(x @ m.w) ** 2) + (r is None)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("loss", [loss_layers, loss_set_in_the_loss, loss_set_by_a_method])
def test_setattr_with_a_constant_name(loss, policy):
    w = np.array([[0.7, -0.2, 0.1], [0.4, 0.6, -0.5], [-0.3, 0.2, 0.8]])
    got = adgen.grad(loss, mutation=policy)(w, X)
    want = numerical_grad(loss, (w, X), 0)
    assert np.max(np.abs(want)) > 0.1
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_setattr_of_a_number_by_hand():
    class Scale:
        def __init__(self, s):
            setattr(self, "s", s)

    def f(s):
        return Scale(s).s ** 3

    assert adgen.grad(f)(1.5) == pytest.approx(3 * 1.5 ** 2, rel=1e-12)


class NamedInALoop:
    def __init__(self, ws):
        self.n = len(ws)
        for k, w in enumerate(ws):
            setattr(self, f"l{k}", Lin(w))

    def forward(self, x):
        for k in range(self.n):
            x = self.l0(x) if k == 0 else self.l1(x)
        return x


class LookedUpInALoop:
    def __init__(self, ws):
        self.n = len(ws)
        self.l0 = Lin(ws[0])
        self.l1 = Lin(ws[1])

    def forward(self, x):
        for k in range(self.n):
            x = getattr(self, f"l{k}")(x)
        return x


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("cls, line, says", [
    (NamedInALoop, 'setattr(self, f"l{k}", Lin(w))', "setattr with a name computed"),
    (LookedUpInALoop, 'x = getattr(self, f"l{k}")(x)', "getattr with a name computed"),
])
def test_a_name_computed_when_it_runs_is_refused_at_its_line(cls, line, says, policy):
    def loss(w0, x):
        return np.sum(cls([w0, W1]).forward(x) ** 2)

    with pytest.raises(MissingRuleError) as err:
        adgen.grad(loss, mutation=policy)(W1, X)
    text = str(err.value)
    assert "test_setattr_in_models.py" in text and line in text
    assert says in text and "self.layers = [Lin(w) for w in ws]" in text


def test_setattr_of_a_value_without_gradient_runs():
    class Config:
        def __init__(self, key):
            setattr(self, key, 2.0)

    def f(w):
        c = Config("scale")
        return np.sum(w * c.scale)

    np.testing.assert_allclose(adgen.grad(f)(np.ones(3)), np.full(3, 2.0))
