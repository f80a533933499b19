"""np.pad(x, w, mode="mean" / "maximum" / "minimum" / "median", stat_length=...) is
differentiated (since session 27): the padding is the statistic of the first (last)
stat_length values along each axis, of the array padded along the axes before it, as NumPy's.
It was refused ('compiles numpy.pad from its own NumPy implementation, which does not take
these arguments'). An image smoothed with mean-padded borders, a signal padded with its
running extremes through a module-level helper, and a class holding the mode: grad against
central differences under both policies, jvp and hessian against them, and a hand formula."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

IMAGE = np.array([0.3, -1.2, 2.0, 0.7, 1.4, 0.2, -0.6, 0.9, -0.8, 1.7, 0.5, -0.1])


def box_blur(img):
    padded = np.pad(img, 1, mode="mean", stat_length=2)
    return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]) / 4.0


def blurred_energy(x):
    return np.sum(box_blur(np.reshape(x, (3, 4))) ** 2)


def padded_extremes(x, width):
    return np.pad(x, width, mode="maximum", stat_length=(2, 3)) - \
        np.pad(x, width, mode="minimum")


def envelope(x):
    return np.sum(padded_extremes(x * x, (2, 1)) ** 2)


class MedianBorder:
    def __init__(self, mode):
        self.mode = mode

    def loss(self, x):
        img = np.reshape(x, (4, 3))
        return np.sum(np.sin(np.pad(img, ((1, 2), (2, 1)), self.mode)))


BORDER = MedianBorder("median")


def median_bordered(x):
    return BORDER.loss(x)


FUNCTIONS = [blurred_energy, envelope, median_bordered]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (IMAGE.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jvp_and_hessian(f):
    check_jvp(f, (IMAGE.copy(),), (np.linspace(-1.0, 1.0, 12),))
    np.testing.assert_allclose(adgen.hessian(f)(IMAGE.copy()),
                               numerical_hessian(f, IMAGE.copy()), rtol=1e-4, atol=1e-5)


def test_hand_formula():
    # sum(pad(x, (1, 1), "mean", stat_length=2)) = sum(x) + (x0 + x1) / 2 + (x3 + x4) / 2
    def f(x):
        return np.sum(np.pad(x, 1, mode="mean", stat_length=2))

    assert_grad_close(adgen.grad(f)(IMAGE[:5].copy()), np.array([1.5, 1.5, 1.0, 1.5, 1.5]))
