"""hessian, hvp and jacfwd(grad) of functions reading np.angle of a complex value
built from the arguments: they raised (np.angle's tangent, angle_jvp, had no rule of its own,
nor had its adjoint angle_vjp a tangent). Checked against second differences of the function
and a hand formula, under both mutation policies. Reverse over reverse (jacrev(grad)) through np.angle is
refused at the user's line."""

import numpy as np
import pytest

import adgen
from adgen.errors import RuleError
from tests.gradcheck import numerical_hessian


def phase_mix(x):
    z = x[0] + 1j * x[1] ** 2 - 0.3j * x[2]
    return np.sum(np.angle(z * x[2]) * x) + np.angle(z, deg=True) * x[0]


class Rotor:
    """A method reading the phase of a complex gain it holds."""

    def __init__(self):
        self.gain = 0.5 - 2.0j

    def loss(self, x):
        return np.sum(np.angle(self.gain * (x + 1j * x[::-1])) ** 2)


def atan2_form(x):
    # the hand formula: angle(a + i b) = arctan2(b, a)
    return np.arctan2(x[1], x[0]) ** 2 * x[2]


def angle_form(x):
    return np.angle(x[0] + 1j * x[1]) ** 2 * x[2]


X = np.array([0.7, -1.2, 0.4])


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [phase_mix, Rotor().loss, lambda x: phase_mix(2.0 * x)],
                         ids=["function", "method", "lambda"])
def test_hessian_of_angle_against_second_differences(f, mutation):
    want = numerical_hessian(f, X)
    np.testing.assert_allclose(adgen.hessian(f, mutation=mutation)(X), want, atol=1e-5)
    np.testing.assert_allclose(adgen.jacfwd(adgen.grad(f, mutation=mutation))(X), want,
                               atol=1e-5)


def test_against_arctan2_by_hand():
    want = adgen.hessian(atan2_form)(X)  # arctan2's own rules (not np.angle's)
    np.testing.assert_allclose(want, numerical_hessian(atan2_form, X), atol=1e-5)
    np.testing.assert_allclose(adgen.hessian(angle_form)(X), want, atol=1e-12)
    # reverse over reverse through np.angle: refused at the user's line, never a wrong zero
    with pytest.raises(RuleError, match="reverse over reverse") as info:
        adgen.jacrev(adgen.grad(angle_form))(X)
    assert "test_angle_at_second_order.py" in str(info.value)


def test_hvp_and_jvp_of_grad():
    v = np.array([1.0, -0.5, 2.0])
    want = numerical_hessian(phase_mix, X) @ v
    np.testing.assert_allclose(adgen.hvp(phase_mix)(X, v), want, atol=1e-5)
