"""np.interp(x, xp, fp, period=...) is differentiated (since session 27) in x, xp, fp and the
period, as NumPy computes it: x and xp taken modulo |period|, xp sorted, the table closed
around the circle. It was refused ('np.interp: period= is not differentiated'). A wind-direction
lookup table of angles as users write one (a module-level table, a helper, a table read in a
class): grad against central differences under both policies, jvp and hessian against them;
period=0 is refused at the user's line."""

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

ANGLES = np.array([0.3, -1.2, 0.8, 7.0, 2.7, -3.7])  # (away from the knots mod 2 pi)
KNOTS = np.array([5.5, 0.2, 1.1, 3.0, 4.1])  # unsorted, as read from a file


def lookup(x, table):
    return np.interp(x, KNOTS, table, period=2 * np.pi)


def drag(table):
    return np.sum(lookup(ANGLES, table) ** 2)


class WindTable:
    def __init__(self, knots):
        self.knots = knots

    def energy(self, x, table):
        return np.sum(np.interp(x, self.knots, table, period=-2 * np.pi) * np.cos(x))


WIND = WindTable(KNOTS)


def wind_energy(x, table):
    return WIND.energy(x, table)


TABLE = np.array([0.3, -1.0, 2.0, 0.5, 1.4])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_central_differences(mutation):
    check_grad(drag, (TABLE.copy(),), mutation=mutation, strict_must_compute=True)
    check_grad(wind_energy, (ANGLES.copy(), TABLE.copy()), argnums=(0, 1), mutation=mutation,
               strict_must_compute=True)


def test_the_knots_and_the_period_get_their_gradients():
    def f(x, knots, period):
        return np.sum(np.interp(x, knots, TABLE, period=period) ** 2)

    check_grad(f, (ANGLES.copy(), KNOTS.copy(), 6.0), argnums=(0, 1, 2))


def test_jvp_and_hessian():
    check_jvp(drag, (TABLE.copy(),), (np.linspace(-1.0, 1.0, 5),))
    check_jvp(wind_energy, (ANGLES.copy(), TABLE.copy()), (np.ones(6), np.ones(5)))
    np.testing.assert_allclose(adgen.hessian(drag)(TABLE.copy()),
                               numerical_hessian(drag, TABLE.copy()), rtol=1e-4, atol=1e-5)


def no_period(x):
    return np.sum(np.interp(x, KNOTS, TABLE, period=0.0))  # MARK


def test_a_zero_period_is_refused_at_the_line():
    with pytest.raises(adgen.RuleError, match="period must be a non-zero value") as err:
        adgen.grad(no_period)(ANGLES.copy())
    with open(__file__) as fh:
        line = next(n for n, t in enumerate(fh, 1) if t.rstrip().endswith("# MARK"))
    assert str(err.value).startswith(f"{__file__}:{line}")
