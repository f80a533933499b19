"""np.pad(x, w, mode="linear_ramp", end_values=...) is differentiated (since session 24), in
the array and in end_values; it was refused with an unrelated message ('compiles numpy.pad from
its own NumPy implementation, which does not take these arguments'). A smoothing loss as users
write one, against central differences under both policies, jvp and a hand formula."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp

import adgen

X = np.array([0.3, -1.2, 2.0, 0.7])


def ramped_smoothness(x, edge):
    padded = np.pad(x * 2.0, (3, 2), mode="linear_ramp", end_values=(edge, -edge))
    return np.sum(np.diff(padded) ** 2)


def ramped_image(x):
    img = np.reshape(x, (2, 2))
    return np.sum(np.pad(img, ((1, 0), (0, 2)), "linear_ramp") ** 3)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_central_differences(mutation):
    check_grad(ramped_smoothness, (X.copy(), 0.4), argnums=(0, 1), mutation=mutation,
               strict_must_compute=True)
    check_grad(ramped_image, (X.copy(),), mutation=mutation, strict_must_compute=True)


def test_jvp():
    check_jvp(ramped_smoothness, (X.copy(), 0.4), (np.array([0.5, -1.0, 2.0, 0.25]), 0.3))
    check_jvp(ramped_image, (X.copy(),), (np.array([0.5, -1.0, 2.0, 0.25]),))


def test_hand_formula():
    # 3 ramp values before x: e + (x0 - e) k / 3, k = 0, 1, 2; their sum's gradient in x0 is 1
    def ramp_sum(x):
        return np.sum(np.pad(x, (3, 0), mode="linear_ramp", end_values=1.0)[:3])

    assert_grad_close(adgen.grad(ramp_sum)(X.copy()), np.array([1.0, 0.0, 0.0, 0.0]))
