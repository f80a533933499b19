"""A list held by a container (``hist["h"]``, ``self.acts``) read from its end and grown in the
same function, as an RNN keeps its history: ``h = f(hist["h"][-1]); hist["h"].append(h)``.

Refused when the gradient ran ('a list read by a position counted from its end, then
changed'): the read's adjoint was built at the list's final length, at the wrong item.
transforms/list_end_reads reads the same item counted from the start. Checked against
central differences (tests/gradcheck.py) under both policies, with the arguments' final
state: loops, -2, a read on a line of its own, no loop, a method keeping its activations, a
dict the caller passes, a lambda; and forward mode. Look-alikes: a dict keyed by -1 beside a
grown list, and a plain local list (never rewritten). The read inside the append's own
arguments (``hist["h"].append(f(hist["h"][-1]))``, ``self.acts.append(np.tanh(self.acts[-1]
@ W))``) was refused at compile time ('cannot follow it back to hist'): the receiver's read
moves after the argument's where nothing between can change the holder; a helper called
there keeps Python's order (the primal value is checked) and the refusal."""

import numpy as np
import pytest
from gradcheck import central, check_grad

import adgen

X = np.array([0.3, -0.8, 0.5])


def history(x):
    hist = {"h": [x * 1.0]}
    for _ in range(3):
        h = np.tanh(hist["h"][-1] * 1.5)
        hist["h"].append(h)
    return np.sum(hist["h"][-1] ** 2) + np.sum(hist["h"][1])


def two_back(x):
    hist = {"h": [x * 1.0, x * 2.0]}
    for _ in range(3):
        h = np.tanh(hist["h"][-2] * 1.5) + hist["h"][0]
        hist["h"].append(h)
    return np.sum(hist["h"][-1] ** 2) + np.sum(hist["h"][1])


def read_on_its_own_line(x):
    hist = {"h": [x * 1.0]}
    for _ in range(3):
        last = hist["h"][-1]
        hist["h"].append(np.sin(last) * 2.0)
    return np.sum(hist["h"][2] ** 2)


def without_a_loop(x):
    hist = {"h": [x * 1.0]}
    a = hist["h"][-1]
    hist["h"].append(np.sin(a))
    b = hist["h"][-1]
    hist["h"].append(np.cos(b) * a)
    return np.sum(hist["h"][-1])


class Net:
    def __init__(self):
        self.acts = []

    def loss(self, x):
        self.acts.append(x)
        for _ in range(3):
            last = self.acts[-1]
            self.acts.append(np.tanh(last * 0.7 + 0.1))
        return np.sum(self.acts[-1] ** 2)


def given(d, x):
    for _ in range(2):
        h = np.sin(d["h"][-1]) * x
        d["h"].append(h)
    return np.sum(d["h"][-1])


def keyed_by_minus_one(x):
    hist = {"h": [x * 1.0], "c": {-1: x * 3.0, 0: x}}
    for _ in range(2):
        c = hist["c"]
        h = np.sin(hist["h"][-1]) * c[-1]
        hist["h"].append(h)
    return np.sum(hist["h"][-1])


def plain_list(x):
    xs = [x * 1.0]
    for _ in range(3):
        xs.append(np.sin(xs[-1]) * 2.0)
    return np.sum(xs[-1])


CASES = [history, two_back, read_on_its_own_line, without_a_loop, keyed_by_minus_one,
         plain_list, lambda x: history(x) * without_a_loop(x)]
IDS = ["history", "two_back", "own_line", "no_loop", "dict_key", "plain_list", "lambda"]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=IDS)
def test_against_central_differences(f, mutation):
    assert check_grad(f, (X.copy(),), mutation=mutation) is not None


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_method(mutation):
    assert check_grad(Net().loss, (X.copy(),), mutation=mutation) is not None


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_dict_the_caller_passes(mutation):
    d = {"h": [np.array([0.1, 0.2, -0.3])]}
    assert check_grad(given, (d, X.copy()), argnums=(0, 1), mutation=mutation) is not None


@pytest.mark.parametrize("f", [history, read_on_its_own_line, without_a_loop],
                         ids=["history", "own_line", "no_loop"])
def test_forward_mode(f):
    d = np.array([0.7, -0.2, 1.3])
    _, tangent = adgen.jvp(f, (X.copy(),), (d,))
    assert tangent == pytest.approx(float(central(f, X.copy()) @ d), rel=1e-6)


def read_inside_the_append(x):
    hist = {"h": [x * 1.0]}
    for _ in range(2):
        hist["h"].append(np.tanh(hist["h"][-1]) * x)
    return np.sum(hist["h"][-1])


class OneLine:
    def __init__(self):
        self.acts = []

    def loss(self, x):
        self.acts = [x]
        for _ in range(3):
            self.acts.append(np.tanh(self.acts[-1] * 0.7 + 0.1))
        return np.sum(self.acts[-1] ** 2)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [read_inside_the_append, OneLine().loss,
                               lambda x: read_inside_the_append(x) * OneLine().loss(x)],
                         ids=["dict", "method", "lambda"])
def test_read_inside_the_append(f, mutation):
    assert check_grad(f, (X.copy(),), mutation=mutation) is not None


def rebind(hist, v):
    hist["h"] = [v]  # the list the append below received is no longer hist's
    return v * 2.0


def rebound_inside_the_append(x):
    hist = {"h": [x * 1.0]}
    hist["h"].append(rebind(hist, hist["h"][-1]))
    return np.sum(hist["h"][-1]) + 3.0 * len(hist["h"])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_helper_inside_the_append_keeps_pythons_order(mutation):
    try:
        value, g = adgen.value_and_grad(rebound_inside_the_append, mutation=mutation)(X.copy())
    except adgen.UnsupportedError as err:
        assert "test_list_end_reads.py" in str(err)  # refused at the line: not wrong
        return
    assert value == rebound_inside_the_append(X.copy())
    np.testing.assert_allclose(g, central(rebound_inside_the_append, X.copy()), atol=1e-6)
