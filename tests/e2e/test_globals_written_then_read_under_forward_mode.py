"""Forward mode of a function that stores a value with a derivative into a global or closure
object or dict and reads it back: a simulation keeping its state in a module-level object
(``state.u = u``, then a method of it), or a config dict (``STATE["u"] = 3 * u``).

Reverse mode follows these. Forward mode raised a NameError in its own code (``g_dot.u =
u_dot`` of a tangent never made) for the object, read the attribute an earlier call left on
the object as a constant (a zero tangent, silently), and gave the dict's item a zero tangent
(a silently wrong jvp, jacfwd and hessian).
"""

import numpy as np
import pytest

import adgen
from tests.gradcheck import check_jvp, numerical_grad


class Chain:
    """A chain of masses: its positions are set by the loss, its energy read back."""

    def __init__(self, n):
        self.u = np.zeros(n)
        self.k = 2.0

    def energy(self):
        return 0.5 * self.k * np.sum(np.diff(self.u) ** 2) + np.sum(np.cos(self.u))


STATE = Chain(4)
CONFIG = {"scale": 3.0, "u": None}


def energy_of_positions(u):
    STATE.u = u ** 2
    return STATE.energy()


def energy_and_direct_read(u):
    STATE.v = np.sin(u)              # an attribute the first call adds
    return np.sum(STATE.v * u) + STATE.energy()


def scaled_through_a_dict(u):
    CONFIG["u"] = CONFIG["scale"] * u
    return np.sum(CONFIG["u"] ** 2) + np.sum(np.sin(CONFIG["u"]))


def closure_model():
    box = Chain(4)

    def loss(u):
        box.u = np.tanh(u)
        return box.energy()

    return loss


U = np.array([0.3, -0.7, 1.1, 0.4])
V = np.array([1.0, 0.5, -0.5, 2.0])
LOSSES = [energy_of_positions, energy_and_direct_read, scaled_through_a_dict, closure_model()]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_jvp_and_jacfwd(loss):
    check_jvp(loss, (U.copy(),), (V.copy(),))
    loss(U * 0.5)                    # a plain call first: the attributes exist when compiled
    check_jvp(loss, (U.copy(),), (V.copy(),))
    ref = numerical_grad(loss, (U.copy(),), 0)
    assert np.allclose(adgen.jacfwd(loss)(U.copy()), ref, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_hessian(loss):
    grad = adgen.grad(loss)
    href = np.stack([(grad(U + 1e-5 * e) - grad(U - 1e-5 * e)) / 2e-5 for e in np.eye(4)])
    assert np.allclose(adgen.hessian(loss)(U.copy()), href, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("loss", LOSSES, ids=lambda f: f.__name__)
def test_gradient(loss, mutation):
    loss(U * 0.5)
    g = adgen.grad(loss, mutation=mutation)(U.copy())
    assert np.allclose(g, numerical_grad(loss, (U.copy(),), 0), rtol=1e-5, atol=1e-7)
