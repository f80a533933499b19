"""A bound method taken into a variable and called there (``run = self.features; run()``),
that sets an attribute of its object read after the call (``self.h``).

adgen runs such a call as it is (a function held in a variable), after checking that it
writes no array the call does not pass it; an attribute set passed the check, and the
gradient missed what the method set: a silently zero gradient under both policies (0.0 for
0.121 along v), and the jvp code raised AttributeError ('M' object has no attribute 'h').
It is refused at the call now, with what to write instead; ``self.features()`` itself is
followed (checked here against central differences).
"""

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

W = np.array([[0.5, -0.3, 0.2], [0.1, 0.8, -0.4]])
X = np.array([0.5, -1.0, 2.0])
V = np.array([1.0, 0.3, -0.2])


class Model:
    def __init__(self):
        self.W = W

    def features(self):
        self.h = np.tanh(self.W @ self.x)

    def loss_through_a_variable(self, x):
        self.x = x
        run = self.features
        run()
        return np.sum(self.h ** 2)

    def loss(self, x):
        self.x = x
        self.features()
        return np.sum(self.h ** 2)


def check_refusal(err):
    assert "Model.features" in str(err.value) and "sets an attribute" in str(err.value)
    assert err.value.location.file == __file__
    assert err.value.location.source_line.strip() == "run()"
    assert "obj.features(...)" in err.value.hint


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_the_gradient_refuses_it(policy):
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.grad(Model().loss_through_a_variable, mutation=policy)(X)
    check_refusal(err)


def test_forward_mode_and_second_derivatives_refuse_it():
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.jvp(Model().loss_through_a_variable, (X,), (V,))
    check_refusal(err)
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.hessian(Model().loss_through_a_variable)(X)
    check_refusal(err)


@pytest.mark.parametrize("policy", ["save", "strict"])
def test_the_method_called_on_its_object_is_followed(policy):
    expected = numerical_grad(lambda x: Model().loss(x), (X,), 0)
    np.testing.assert_allclose(adgen.grad(Model().loss, mutation=policy)(X), expected,
                               rtol=1e-6)
    _, slope = adgen.jvp(Model().loss, (X,), (V,))
    assert slope == pytest.approx(expected @ V, rel=1e-6)
