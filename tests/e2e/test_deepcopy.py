"""``copy.deepcopy`` of the parameters in a loss, as people write it (a dict of arrays and of
lists of arrays, a list of layers, a tuple): the copy is written in place and the original is
not, and the gradient reaches the arguments through both. Checked against central
differences under both policies and in forward mode; deeper structures and objects are
refused at the line."""

import copy

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp

import adgen

X = np.array([0.3, -0.7, 1.1])


def perturbed_copy(x):
    params = {"w": x * 1.0, "layers": [x * 2.0, np.sin(x)], "scale": 1.5}
    trial = copy.deepcopy(params)
    trial["w"][0] = 5.0  # the copy's array: params["w"] keeps x[0]
    return (np.sum(trial["w"] * params["w"]) + np.sum(trial["layers"][1] * params["layers"][1])
            + trial["scale"] * np.sum(trial["layers"][0]))


def list_of_layers(x):
    layers = [np.outer(x, x), np.diag(x)]
    trial = copy.deepcopy(layers)
    trial[0][1] = 0.5 * trial[0][1]  # rows of the copy: the layers keep theirs
    trial[1][0, 0] = 2.0
    return np.sum(trial[0] * layers[0]) + np.sum(trial[1] * layers[1])


def copied_array(x):
    a = np.tanh(x)
    b = copy.deepcopy(a)
    b[1] = 0.0
    return np.sum(a * b) + np.sum(b)


def copied_tuple(x):
    pair = (x ** 2, [x[0], x[1]])
    other = copy.deepcopy(pair)
    other[0][2] = 1.0
    return np.sum(other[0] * pair[0]) + other[1][0] * pair[1][1]


CASES = [perturbed_copy, list_of_layers, copied_array, copied_tuple]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_gradient(f, mutation):
    check_grad(f, (X,), mutation=mutation)


@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_forward_mode(f):
    v = np.array([0.5, -1.0, 2.0])
    check_jvp(f, (X,), (v,), rtol=1e-6, atol=1e-9)


def test_a_deepcopied_argument_is_left_as_it_was():
    def f(params, x):
        p = copy.deepcopy(params)
        p["w"] *= x
        return np.sum(p["w"] ** 2)

    params = {"w": np.array([1.0, 2.0, 3.0])}
    g = check_grad(f, (params, X), (0, 1))
    np.testing.assert_allclose(g[0]["w"], 2 * params["w"] * X ** 2)


def test_three_levels_deep_is_refused_at_the_line():
    def f(x):
        nested = {"a": [[x]]}
        other = copy.deepcopy(nested)
        return np.sum(other["a"][0][0])

    with pytest.raises(adgen.AdgenError, match="two levels deep") as err:
        adgen.grad(f)(X.copy())
    assert "test_deepcopy.py" in str(err.value)
