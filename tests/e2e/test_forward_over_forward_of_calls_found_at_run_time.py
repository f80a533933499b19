"""Forward over forward (``jacfwd(jacfwd(f))``, ``jacfwd(jacrev(f))``, ``jacfwd(hessian(f))``)
of a function calling a method of an object it reads (``lambda z: model.loss(z)``): the jvp
code of such a call goes through adgen's dispatch when it runs, which forward mode does not
differentiate again yet. It is refused at the user's line, naming what to write; the message
named adgen's own helper (``adgen.tangent_calls.call_jvp_tangent has a user rule
(adgen.rrule), which gives no jvp``). The spellings it points to give the derivatives,
checked by hand."""

import numpy as np
import pytest

import adgen


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x):
        return np.sum(self.w * x ** 3)


MODEL = Model(np.array([1.0, 2.0, 3.0]))
X = np.array([0.3, -0.7, 1.1])


def through_the_model(z):
    return MODEL.loss(z) + np.sum(z ** 2)


SPELLINGS = {
    "jacfwd(jacfwd)": lambda f: adgen.jacfwd(adgen.jacfwd(f)),
    "jacfwd(jacrev)": lambda f: adgen.jacfwd(adgen.jacrev(f)),
    "jacfwd(hessian)": lambda f: adgen.jacfwd(adgen.hessian(f)),
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("f", [lambda z: MODEL.loss(z), through_the_model],
                         ids=["lambda", "function"])
def test_refused_at_the_users_line(f, spelling):
    with pytest.raises(adgen.UnsupportedError) as info:
        SPELLINGS[spelling](f)(X)
    text = str(info.value)
    assert "forward mode over forward mode" in text
    assert "adgen.jacrev(adgen.jacfwd(f))" in text
    assert "call_jvp" not in text and "user rule" not in text
    assert __file__.split("/")[-1] in text


def test_the_spellings_it_points_to():
    H = np.diag(6 * MODEL.w * X)
    assert np.allclose(adgen.jacfwd(adgen.jacfwd(MODEL.loss))(X), H)
    assert np.allclose(adgen.jacrev(adgen.jacfwd(lambda z: MODEL.loss(z)))(X), H)
    assert np.allclose(adgen.hessian(lambda z: MODEL.loss(z))(X), H)
    T = np.zeros((3, 3, 3))
    for i in range(3):
        T[i, i, i] = 6 * MODEL.w[i]
    assert np.allclose(adgen.jacfwd(adgen.hessian(MODEL.loss))(X), T)
