"""Reporting from inside a differentiated function: ``log.info(...)``, ``logging.debug(...)``,
``warnings.warn(...)``, as a training loop or a solver writes them.

They ran into the compiler as user functions and were refused ("logging.debug ... could not
differentiate its Python source: **kwargs parameters are not differentiable here"). Now they
run in the forward code like ``print``: they read the values, change nothing and carry no
derivative. A Logger subclass overriding ``info`` is compiled as a user's method (it may do
anything) and stays refused loudly. Expected values: central differences and hand formulas.
"""

import logging
import warnings

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.errors import AdgenError

log = logging.getLogger("adgen.tests.reporting")
X = np.array([0.31, 0.72, 1.23])
POLICIES = ["save", "strict"]


def loss_logged(x):
    y = x ** 2
    log.info("y %s", y)
    logging.debug("debug %s", y)
    log.warning("sum %.3f", np.sum(y))
    if np.sum(y) > 100.0:
        warnings.warn("large loss")
    return np.sum(y * x)


def step(u, dt):
    un = u + dt * np.sin(u)
    log.debug("step max %.3g", np.max(np.abs(un)))
    return un


def integrate(u):
    for k in range(4):
        u = step(u, 0.1)
        if k == 2:
            warnings.warn("halfway", RuntimeWarning)
    return np.sum(u ** 2)


class Model:
    def __init__(self):
        self.log = logging.getLogger("adgen.tests.model")

    def loss(self, w):
        z = np.tanh(w)
        self.log.info("z=%s", z)
        return np.sum(z ** 2)


MODEL = Model()


def model_loss(w):
    return MODEL.loss(w) + np.sum(w)


@pytest.mark.parametrize("mutation", POLICIES)
def test_logging_calls_in_the_loss_run_and_carry_no_derivative(mutation, caplog):
    with caplog.at_level(logging.INFO, logger="adgen.tests.reporting"):
        g = adgen.grad(loss_logged, mutation=mutation)(X)
    np.testing.assert_allclose(g, 3 * X ** 2, rtol=1e-12)
    assert any("sum" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("mutation", POLICIES)
def test_logging_and_warnings_in_a_helper_of_a_time_loop(mutation):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert_grad_close(adgen.grad(integrate, mutation=mutation)(X),
                          numerical_grad(integrate, (X,), 0))
    assert any("halfway" in str(w.message) for w in seen)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_logger_held_by_an_object(mutation):
    assert_grad_close(adgen.grad(model_loss, mutation=mutation)(X),
                      2 * np.tanh(X) * (1 - np.tanh(X) ** 2) + 1)


@pytest.mark.filterwarnings("ignore:halfway")
def test_forward_mode_and_hessian_of_a_logged_loss():
    v = np.array([1.0, -0.5, 2.0])
    _, dot = adgen.jvp(loss_logged, (X,), (v,))
    np.testing.assert_allclose(dot, 3 * X ** 2 @ v, rtol=1e-12)
    np.testing.assert_allclose(adgen.hessian(loss_logged)(X), np.diag(6 * X), rtol=1e-12)
    _, dot = adgen.jvp(integrate, (X,), (v,))
    np.testing.assert_allclose(dot, numerical_grad(integrate, (X,), 0) @ v, rtol=1e-6)


class LoudLogger(logging.Logger):
    def info(self, msg, *args, **kwargs):
        self.last = args
        return super().info(msg, *args, **kwargs)


LOUD = LoudLogger("adgen.tests.loud")


def loss_with_a_custom_logger(x):
    y = x ** 2
    LOUD.info("y %s", y)
    return np.sum(y)


def test_a_logger_subclass_overriding_info_is_not_taken_for_logging():
    # its info is the user's code (it stores y): compiled, and refused loudly (**kwargs)
    with pytest.raises(AdgenError):
        adgen.grad(loss_with_a_custom_logger)(X)


def loss_given_a_logger(x, logger):
    y = np.sin(x)
    logger.info("y %s", y)
    ADAPTER.debug("y %s", y)
    return np.sum(y ** 2)


ADAPTER = logging.LoggerAdapter(logging.getLogger("adgen.tests.adapter"), {})


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_logger_passed_in_and_an_adapter(mutation):
    g = adgen.grad(loss_given_a_logger, mutation=mutation)(X, logging.getLogger("adgen.tests.b"))
    np.testing.assert_allclose(g, 2 * np.sin(X) * np.cos(X), rtol=1e-12)



def test_forward_mode_and_hessian_with_a_logger_passed_in():
    # the zero tangent of the Logger argument recursed without end through its manager, which
    # holds the logger (a cycle); an object of the standard library's has no tangent
    logger = logging.getLogger("adgen.tests.d")
    v = np.array([1.0, -0.5, 2.0])
    _, dot = adgen.jvp(loss_given_a_logger, (X, logger), (v, None))
    np.testing.assert_allclose(dot, (2 * np.sin(X) * np.cos(X)) @ v, rtol=1e-12)
    np.testing.assert_allclose(adgen.hessian(loss_given_a_logger)(X, logger),
                               np.diag(2 * np.cos(2 * X)), rtol=1e-12, atol=1e-15)
