"""A gradient called with arguments that do not bind raises the plain call's TypeError, naming
the user's function (it named the generated ``loss_forward()``)."""

from __future__ import annotations

import numpy as np
import pytest

import adgen

W = np.array([0.3, -0.2, 0.5])
X = np.arange(12.0).reshape(4, 3) / 10.0


def loss(w, x):
    return np.sum(np.sin(x @ w))


def _plain_message(*args, **kwargs) -> str:
    with pytest.raises(TypeError) as info:
        loss(*args, **kwargs)
    return str(info.value)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("args, kwargs", [((X,), {"w": W}), ((W,), {}), ((W, X, 1.0), {}),
                                          ((W,), {"x": X, "scale": 2.0})])
def test_the_plain_calls_message(args, kwargs, mutation):
    expected = _plain_message(*args, **kwargs)
    assert expected.startswith("loss()")
    for run in (lambda: adgen.grad(loss, mutation=mutation)(*args, **kwargs),
                lambda: adgen.vjp(loss, *args, mutation=mutation, **kwargs)):
        with pytest.raises(TypeError) as info:
            run()
        assert str(info.value) == expected
