"""jvp of a torch tensor or a JAX array is refused by name, as grad's is (H6's
refuse_foreign_array). Before: TypeError "object.__new__(Tensor) is not safe" from
adgen's own given_tangent."""

from __future__ import annotations

import numpy as np
import pytest

import adgen


def summed_sine(x):
    return np.sum(np.sin(x))


def test_jvp_of_a_torch_tensor_is_refused_by_name():
    torch = pytest.importorskip("torch")
    t = torch.ones(3, dtype=torch.float64)
    with pytest.raises(adgen.NonDifferentiableError, match="torch.Tensor"):
        adgen.jvp(summed_sine, (t,), (t,))


def test_jvp_of_a_jax_array_is_refused_by_name():
    jnp = pytest.importorskip("jax.numpy")
    a = jnp.ones(3)
    with pytest.raises(adgen.NonDifferentiableError, match="JAX"):
        adgen.jvp(summed_sine, (a,), (a,))
