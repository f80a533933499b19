"""Forward mode of a list held in a part and extended in place (``self.xs.extend(...)``,
``d["xs"].extend(...)``): jvp refused them ('the method call
.extend() on a value with a derivative', with a hint to use reverse mode, which refuses them
too). The tangent list now changes as the list does, and reverse mode follows them too
(transforms/list_end_reads reads the part again before each append lower_mutation writes).
Checked against central differences (tests/gradcheck.py); items a helper makes stay refused
in reverse mode, at the line, with a hint that works."""

import numpy as np
import pytest
from gradcheck import central, check_grad, numerical_jvp

import adgen

X = np.array([0.3, -0.8, 0.5])
D = np.array([0.7, -0.2, 1.3])


class Model:
    def __init__(self):
        self.xs = []

    def loss(self, x):
        self.xs.extend([x * 2.0, np.sin(x)])
        return sum(np.sum(v ** 2) for v in self.xs)


def local_dict(x):
    d = {"xs": [x]}
    d["xs"].extend((x * 2.0, np.sin(x)))
    return sum(np.sum(v ** 2) for v in d["xs"]) * np.sum(d["xs"][0])


def extended_by_a_loop(x):
    d = {"xs": [np.cos(x)]}
    for k in range(2):
        d["xs"].extend([x * (k + 3.0)])
    return np.sum(d["xs"][0] * d["xs"][1] * d["xs"][2])


def given_dict(d, x):
    d["xs"].extend([x * 2.0, np.sin(x)])
    return sum(np.sum(v ** 2) for v in d["xs"])


@pytest.mark.parametrize("f", [local_dict, extended_by_a_loop,
                               lambda x: given_dict({"xs": []}, x),
                               lambda x: local_dict(x) * extended_by_a_loop(x)],
                         ids=["local_dict", "loop", "given_dict", "lambda"])
def test_jvp(f):
    out, tangent = adgen.jvp(f, (X.copy(),), (D,))
    assert out == pytest.approx(f(X.copy()))
    assert tangent == pytest.approx(float(central(f, X.copy()) @ D), rel=1e-6)


def test_jvp_of_a_method_keeping_the_list():
    model = Model()
    out, tangent = adgen.jvp(model.loss, (X.copy(),), (D,))
    assert tangent == pytest.approx(float(central(lambda x: Model().loss(x), X.copy()) @ D),
                                    rel=1e-6)
    assert len(model.xs) == 2  # the effect of a plain call


def test_jvp_with_the_dicts_tangent():
    d = {"xs": [X * 1.0]}
    td = {"xs": [D[::-1].copy()]}
    _, tangent = adgen.jvp(given_dict, (d, X.copy()), (td, D))
    expected = numerical_jvp(given_dict, ({"xs": [X * 1.0]}, X.copy()), (td, D))
    assert tangent == pytest.approx(float(expected[0]), rel=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [lambda x: Model().loss(x), local_dict, extended_by_a_loop,
                               lambda x: given_dict({"xs": []}, x)],
                         ids=["method", "local_dict", "loop", "given_dict"])
def test_reverse_mode(f, mutation):
    assert check_grad(f, (X.copy(),), mutation=mutation) is not None


def extended_by_a_helper(x):
    d = {"xs": []}
    d["xs"].extend(made_by(x))
    return sum(np.sum(v ** 2) for v in d["xs"])


def made_by(x):
    return [x * 2.0, np.sin(x)]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_reverse_mode_refuses_items_a_helper_makes_with_a_hint_that_works(mutation):
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(extended_by_a_helper, mutation=mutation)(X.copy())
    text = str(info.value)
    assert "test_forward_list_extend.py" in text and 'd["xs"].extend(' in text
    assert "d['xs'].append(v)" in text
