"""Train a small MLP in plain NumPy: gradients from adgen, SGD updates in place.

The model fits y = sin(3x) on [-1, 1] with one hidden tanh layer; the parameters live in a
dict and the gradient comes back as a dict of the same shape.
"""

import numpy as np

import adgen


def mlp_loss(params, X, Y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - Y) ** 2)


rng = np.random.default_rng(0)
X = np.linspace(-1.0, 1.0, 64).reshape(-1, 1)
Y = np.sin(3.0 * X)
hidden = 16
params = {
    "W1": rng.standard_normal((1, hidden)),
    "b1": np.zeros(hidden),
    "W2": rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
    "b2": np.zeros(1),
}

if __name__ == "__main__":
    grad_loss = adgen.grad(mlp_loss)
    print("d loss / d W1 at the start =", grad_loss(params, X, Y)["W1"])
    lr = 0.1
    for step in range(2001):
        grads = grad_loss(params, X, Y)
        for name, g in grads.items():
            params[name] -= lr * g  # in place: the arrays in params are updated
        if step % 250 == 0:
            print(f"step {step:4d}  loss {mlp_loss(params, X, Y):.5f}")
