"""NumPy functions adgen compiles from its own implementation (np.pad, np.nansum, np.nanvar,
np.copysign, ...) called with an argument that implementation does not take
(``np.pad(x, 2, mode="linear_ramp", end_values=1.0)``, ``np.nansum(x, where=m)``,
``np.nanvar(x, correction=1)``): grad and jvp raised Python's TypeError from the generated code
("pad_forward() got an unexpected keyword argument 'end_values'"). They are refused when the
function is compiled, with UnsupportedError naming the user's line and the argument; the same
functions with the arguments adgen takes still differentiate."""
import numpy as np
import pytest

import adgen
from tests.gradcheck import numerical_grad, numerical_jvp


def max_padded(x):  # refused until session 27: the statistic modes and stat_length are taken
    return np.sum(np.pad(x, 2, mode="maximum", stat_length=2) ** 2)


def ramp_padded(x):  # refused until 5cfc9f0 (session 24): end_values is taken now
    return np.sum(np.pad(x, 2, mode="linear_ramp", end_values=1.0) ** 2)


def masked_total(x):
    return np.nansum(x ** 2, where=x > 0.3)


def corrected_variance(x):
    return np.nanvar(x, correction=1)


REFUSED = [(masked_total, "where"), (corrected_variance, "correction")]
X = np.array([0.1, 0.4, np.nan, 0.9, 0.6])


@pytest.mark.parametrize("mode", ["grad-save", "grad-strict", "jvp"])
@pytest.mark.parametrize("fun, arg", REFUSED, ids=lambda v: getattr(v, "__name__", v))
def test_refused_at_the_line_naming_the_argument(fun, arg, mode):
    with pytest.raises(adgen.UnsupportedError) as err:
        if mode == "jvp":
            adgen.jvp(fun, (X.copy(),), (np.ones(5),))
        else:
            adgen.grad(fun, mutation=mode.split("-")[1])(X.copy())
    msg = str(err.value)
    assert "test_reference_calls_with_arguments_they_lack.py" in msg
    assert arg in msg and "not differentiated" in msg


def edge_padded(x):
    return np.sum(np.pad(x, (1, 2), mode="edge") ** 2 * np.arange(1.0, 7.0))


def nan_total(x):
    return np.nansum(x ** 3) + np.nanvar(x, ddof=1)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun", [edge_padded, nan_total, ramp_padded, max_padded],
                         ids=lambda f: f.__name__)
def test_the_arguments_adgen_takes_still_differentiate(fun, mutation):
    x = np.array([0.1, 0.4, 0.9])
    g = adgen.grad(fun, mutation=mutation)(x.copy())
    np.testing.assert_allclose(g, numerical_grad(fun, (x,), 0), rtol=1e-6, atol=1e-8)
    _, t = adgen.jvp(fun, (x.copy(),), (np.ones(3),))
    np.testing.assert_allclose(t, numerical_jvp(fun, (x,), (np.ones(3),)), rtol=1e-6)
