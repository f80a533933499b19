"""A list, dict or object held by a parameter and changed in place: a model keeping its
activations or a history on ``self`` (``self.acts.append(h)`` in a method the loss calls,
read back in the loss), a cache dict handed to a helper (``cache["layer"]["z"] = x @ W``).

The method's form was a silently zero gradient: the caller handed over ``self``'s adjoint,
but the append's pullback started the list's adjoint from zero. The written list's adjoint
now starts from the parameter's part (analyses.parameter_parts). Checked against central
differences (tests/gradcheck.py) under both policies, as users write it: classes with methods,
a helper function, a lambda, a loop calling the method; and the look-alikes adgen still
refuses (another name for the list bound before the write and read after it)."""

import numpy as np
import pytest
from gradcheck import central

import adgen

X = np.array([0.3, -0.7, 1.1, 0.4, -0.2, 0.9])
W = np.array([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]])


class Recorder:
    """Keeps the activations of every layer, reset at each loss."""

    def __init__(self):
        self.acts = []

    def layer(self, h):
        h = np.tanh(h * 1.5)
        self.acts.append(h)
        return h

    def loss(self, x):
        self.acts = []
        h = x[:3]
        for _ in range(3):
            h = self.layer(h)
        return np.sum(self.acts[0] ** 2) + np.sum(self.acts[-1]) * np.sum(self.acts[1])


class KeptAcross:
    """The list made in __init__, appended by a method, read in the loss."""

    def __init__(self):
        self.acts = []

    def layer(self, h):
        self.acts.append(np.sin(h) * h)
        return h * 2.0

    def loss(self, x):
        h = self.layer(x[:3])
        h = self.layer(h + x[3:])
        return np.sum(self.acts[-1] * self.acts[-2]) + np.sum(h)


class AppendsInALoop:
    def __init__(self):
        self.hist = []

    def run(self, h):
        for _ in range(3):
            h = np.tanh(h) + 0.5 * h
            self.hist.append(h)
        return h

    def loss(self, x):
        self.hist = []
        out = self.run(x[:3])
        return np.sum(out) + np.sum(self.hist[0] * self.hist[1])


class InTheLoss:
    """The loss itself appends to self.acts and reads it back."""

    def __init__(self):
        self.acts = []

    def loss(self, x):
        self.acts = []
        h = np.tanh(x[:3])
        self.acts.append(h)
        self.acts.append(h * x[3:])
        return np.sum(self.acts[-1] ** 2) + np.sum(self.acts[0])


class History:
    """A history of losses logged on self, never read back (a common training loop)."""

    def __init__(self):
        self.history = []

    def loss(self, x):
        val = np.sum(np.tanh(x @ np.ones(6)) ** 2)
        self.history.append(val)
        return val


def store_in_cache(cache, x):
    cache["layer"]["z"] = x[:3] @ W


def with_a_cache(x):
    cache = {"layer": {}}
    store_in_cache(cache, x)
    return np.sum(np.sin(cache["layer"]["z"]))


def append_to_first(lists, v):
    lists[0].append(v * v)


def lists_of_a_helper(x):
    L = [[], []]
    append_to_first(L, x[:3])
    append_to_first(L, x[3:])
    return np.sum(L[0][0] * L[0][1])


CASES = {
    "recorder": (lambda: Recorder().loss, lambda x: Recorder().loss(x)),
    "kept_across": (lambda: KeptAcross().loss, lambda x: KeptAcross().loss(x)),
    "appends_in_a_loop": (lambda: AppendsInALoop().loss, lambda x: AppendsInALoop().loss(x)),
    "in_the_loss": (lambda: InTheLoss().loss, lambda x: InTheLoss().loss(x)),
    "history": (lambda: History().loss, lambda x: History().loss(x)),
    "cache_helper": (lambda: with_a_cache, with_a_cache),
    "lists_helper": (lambda: lists_of_a_helper, lists_of_a_helper),
    "lambda": (lambda: (lambda x: Recorder().loss(x * 1.0)), lambda x: Recorder().loss(x)),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_against_central_differences(case, mutation):
    make, plain = CASES[case]
    g = adgen.grad(make(), mutation=mutation)(X.copy())
    np.testing.assert_allclose(g, central(plain, X.copy()), rtol=1e-5, atol=1e-7)


def test_value_and_grad_and_the_object_after():
    m = Recorder()
    value, g = adgen.value_and_grad(m.loss)(X.copy())
    ref = Recorder()
    assert value == pytest.approx(ref.loss(X.copy()))
    assert len(m.acts) == 3  # the call had its effects, as a plain call does
    np.testing.assert_allclose(m.acts[-1], ref.acts[-1])
    np.testing.assert_allclose(g, central(lambda x: Recorder().loss(x), X.copy()),
                               rtol=1e-5, atol=1e-7)


class ReadThroughAnEarlierName:
    def __init__(self):
        self.acts = []

    def loss(self, x):
        self.acts = [x[3:] * 1.0]
        before = self.acts
        self.acts.append(np.tanh(x[:3]))
        return np.sum(before[-1] ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_another_name_read_after_the_write_is_refused(mutation):
    m = ReadThroughAnEarlierName()
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(m.loss, mutation=mutation)(X.copy())
    assert "test_bookkeeping_on_parameters.py" in str(err.value)


class ReadFromTheEndBeforeACall:
    """acts[-1] read, then a method appends: the read's adjoint was built at the list's
    final length (index -1 the later item), silently wrong; refused when it runs."""

    def __init__(self):
        self.acts = []

    def step(self, h):
        self.acts.append(np.tanh(h))
        return h * 1.5

    def loss(self, x):
        h = self.step(x[:3])
        s = np.sum(self.acts[-1] ** 2)
        h = self.step(h * s)
        return s + np.sum(self.acts[-1] * self.acts[0])


class ReadFromTheStartBeforeACall(ReadFromTheEndBeforeACall):
    def loss(self, x):
        h = self.step(x[:3])
        s = np.sum(self.acts[0] ** 2)
        h = self.step(h * s)
        return s + np.sum(self.acts[1] * self.acts[0])


class Layer:
    def __init__(self):
        self.acts = []


class TwoLevelsDown:
    def __init__(self):
        self.layers = [Layer()]

    def step(self, h):
        h = np.tanh(h)
        self.layers[0].acts.append(h)
        return h

    def loss(self, x):
        self.step(x[:3])
        return np.sum(self.layers[0].acts[-1] ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("cls", [ReadFromTheEndBeforeACall, TwoLevelsDown])
def test_what_cannot_be_followed_is_refused_at_the_line(cls, mutation):
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(cls().loss, mutation=mutation)(X.copy())
    assert "test_bookkeeping_on_parameters.py" in str(err.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_read_from_the_start_before_a_call(mutation):
    g = adgen.grad(ReadFromTheStartBeforeACall().loss, mutation=mutation)(X.copy())
    np.testing.assert_allclose(
        g, central(lambda x: ReadFromTheStartBeforeACall().loss(x), X.copy()),
        rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", sorted(set(CASES) - {"lambda"}))
def test_forward_mode(case):
    # (the lambda builds the object inside the differentiated code: refused by forward mode)
    make, plain = CASES[case]
    d = np.linspace(-1.0, 1.0, X.size)
    eps = 1e-6
    _, tangent = adgen.jvp(make(), (X.copy(),), (d,))
    assert tangent == pytest.approx((plain(X + eps * d) - plain(X - eps * d)) / (2 * eps),
                                    rel=1e-6)
