"""Fit a logistic regression with scipy.optimize.minimize, the gradient from adgen.

Needs scipy (pip install scipy, or the "examples" extra).
"""

import numpy as np
from scipy.optimize import minimize

import adgen


def loss(w, X, y, l2=1e-3):
    """Mean cross-entropy of P(y = 1) = sigmoid(X @ w), with a little L2 regularisation."""
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    nll = -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    return nll + 0.5 * l2 * np.sum(w * w)


# Synthetic data: an intercept column and two features, labels drawn from a known model.
rng = np.random.default_rng(0)
X = np.column_stack([np.ones(2000), rng.standard_normal((2000, 2))])
w_true = np.array([-0.5, 2.0, -1.0])
y = (rng.random(2000) < 1.0 / (1.0 + np.exp(-(X @ w_true)))).astype(float)
w0 = np.zeros(3)

if __name__ == "__main__":
    grad_loss = adgen.grad(loss)  # d loss / d w, called as grad_loss(w, X, y)
    print("d loss / d w at w0 =", grad_loss(w0, X, y))

    result = minimize(loss, w0, args=(X, y), jac=grad_loss, method="L-BFGS-B")
    print(result.message, f"({result.nit} iterations, {result.njev} gradients)")
    print("fitted w =", result.x)
    print("true w   =", w_true)
    print("accuracy =", np.mean((X @ result.x > 0) == (y > 0.5)))
