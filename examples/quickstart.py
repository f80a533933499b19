"""Quickstart: the gradient of a loss that fills a preallocated array in a loop.

    python examples/quickstart.py     # gradients, the mutation report, the generated code
    adgen examples/quickstart.py      # just the generated forward and pullback
"""

import numpy as np

import adgen


@adgen.differentiable  # compiles now: an unsupported construct is reported at this line
def loss(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):  # allocate-then-fill: no copy, no guard
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h**2)


rng = np.random.default_rng(0)
w = rng.standard_normal((3, 2))
x = rng.standard_normal((4, 3))

if __name__ == "__main__":
    print("loss =", loss(w, x))  # the plain function, unchanged
    print("d loss / d w =", adgen.grad(loss)(w, x))  # argnums=0, like jax.grad
    g_w, g_x = adgen.grad(loss, argnums=(0, 1))(w, x)
    print("d loss / d x =", g_x)

    value, g = adgen.value_and_grad(loss)(w, x)
    out, pullback = adgen.vjp(loss, w, x)  # pullback(cotangent): one per argument
    assert np.allclose(pullback(1.0)[0], g)

    print("\nmutation sites:")
    adgen.explain(loss)  # h[i] = ... is 'free': nothing reads h's old contents
    print("\ngenerated code:")
    print(adgen.source(loss))
