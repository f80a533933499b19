"""Second derivatives of a method that appends a value to a list it is given and adds the same
value into an attribute of its object (``lst.append(v); self.total += v``), the accumulator
pattern of a logging training step, called on an object built inside the loss.

hessian, jacfwd(grad), jacrev(grad) and grad(grad) were silently wrong (the ``a.total`` part
of the Hessian was 0: [[0, .6, 0], [.6, -.8, 1.4], [0, 1.4, 0]] for [[1.6, .6, 0], [.6, .8,
1.4], [0, 1.4, 1.6]]), while grad and jvp were right. The value is both an item of the list
and a term of the sum, so its adjoint and the list item's are one entry of shadow memory;
the pullback handed them back in parameter order, the list first (``sh.pop(lst)``), which
took the value's adjoint into the list's item, for which the caller had no name. A pullback
now takes those adjoints out of shadow memory together, values before containers
(``sh.pop_each``). Checked against hand formulas and second differences; first order under
both mutation policies.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad, check_jvp, numerical_hessian

import adgen

W = np.array([0.3, -0.2, 0.7])


class Log:
    def __init__(self):
        self.total = 0.0

    def push(self, history, v):
        history.append(v)
        self.total += v

    def push_after(self, history, v):
        self.total += v
        history.append(v)


def logged(w):
    # f = (1 + w1) sum(w^2)
    log = Log()
    history = []
    for i in range(3):
        log.push(history, w[i] ** 2)
    return log.total + sum(history) * w[1]


def logged_after(w):
    log = Log()
    history = []
    for i in range(3):
        log.push_after(history, w[i] ** 2)
    return log.total * w[0] + np.sin(history[1])


def one_value(x):
    log = Log()
    log.push([], x ** 2)  # (a list the caller has no name for)
    history = []
    log.push(history, x ** 2)
    return log.total


def _logged_hessian(w):
    h = 2 * (1 + w[1]) * np.eye(3)
    h[1, :] += 2 * w
    h[:, 1] += 2 * w
    return h


@pytest.mark.parametrize("how", ["hessian", "jacfwd(grad)", "jacrev(grad)"])
def test_hessian_by_hand(how):
    run = {"hessian": adgen.hessian(logged), "jacfwd(grad)": adgen.jacfwd(adgen.grad(logged)),
           "jacrev(grad)": adgen.jacrev(adgen.grad(logged))}[how]
    np.testing.assert_allclose(run(W.copy()), _logged_hessian(W), rtol=1e-12, atol=1e-14)


def test_hessian_against_second_differences():
    np.testing.assert_allclose(adgen.hessian(logged_after)(W.copy()),
                               numerical_hessian(logged_after, W.copy()), rtol=1e-4, atol=1e-5)


def test_grad_of_grad_of_a_number():
    # one_value(x) = 2 x^2
    assert np.isclose(adgen.grad(adgen.grad(one_value))(0.3), 4.0, rtol=1e-12)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [logged, logged_after], ids=lambda f: f.__name__)
def test_first_order(f, mutation):
    check_grad(f, [W.copy()], mutation=mutation, strict_must_compute=True)
    check_jvp(f, [W.copy()], [np.array([1.0, -0.4, 0.3])])
