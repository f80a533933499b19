"""A plain accumulator built inside the loss (``a.add(v)`` setting ``self.total += v`` and
counting ``self.n += 1``, then ``return a.mean()``): grad and jvp differentiate it; hessian
refused it with a message about "an object of class method that may share an array" (the
method ``a.mean``, given to the call in adgen's jvp code, reached shadow memory as a value
taken for an array). The refusal now names the method and its class, says second
derivatives, and hints at reading the attributes in the function, which differentiates to
second order (checked here against second differences, as grad under both policies and jvp
of the method form against central differences).
"""

import numpy as np
import pytest
from gradcheck import check_grad, numerical_hessian, numerical_jvp

import adgen

X0 = np.array([0.3, -0.7, 1.1, 0.5])


class Acc:
    def __init__(self):
        self.total = 0.0
        self.n = 0

    def add(self, v):
        self.total += v
        self.n += 1

    def mean(self):
        return self.total / self.n


def mean_of_squares(x):
    a = Acc()
    for i in range(4):
        a.add(x[i] ** 2 * x[0])
    return a.mean()  # MARK mean


def attributes_read(x):
    a = Acc()
    for i in range(4):
        a.add(x[i] ** 2 * x[0])
    return a.total / a.n


def _line(mark):
    with open(__file__) as src:
        return next(i for i, text in enumerate(src, 1) if f"MARK {mark}" in text)


@pytest.mark.parametrize("how", ["hessian", "jacfwd of grad"])
def test_second_derivatives_of_the_method_are_refused_in_its_names(how):
    run = adgen.hessian(mean_of_squares) if how == "hessian" else \
        adgen.jacfwd(adgen.grad(mean_of_squares))
    with pytest.raises(adgen.UnsupportedError) as info:
        run(X0)
    text = str(info.value)
    assert f"{__file__}:{_line('mean')}:" in text
    assert "calling Acc.mean on an object of class Acc" in text
    assert "rather than obj.mean()" in text
    assert "class method" not in text


def test_the_hints_rewrite_has_its_hessian():
    np.testing.assert_allclose(adgen.hessian(attributes_read)(X0),
                               numerical_hessian(attributes_read, X0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [mean_of_squares, attributes_read])
@pytest.mark.parametrize("policy", ["save", "strict"])
def test_gradient(f, policy):
    check_grad(f, (X0,), mutation=policy, strict_must_compute=True)


@pytest.mark.parametrize("f", [mean_of_squares, attributes_read])
def test_jvp(f):
    v = np.array([1.0, -0.5, 0.25, 2.0])
    _, t = adgen.jvp(f, (X0,), (v,))
    np.testing.assert_allclose(t, numerical_jvp(f, (X0,), (v,)), rtol=1e-6, atol=1e-9)
