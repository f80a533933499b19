"""adgen.interop.torch_function: an adgen-differentiated NumPy function as a torch operation.

Every gradient torch computes through it is compared with ``adgen.grad`` on the NumPy function
and with central differences (tests/gradcheck.py), or with the same function written in torch
operations (autograd's own gradient). Skipped when torch is not installed (the "interop" extra).
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen
from adgen.interop import torch_function

torch = pytest.importorskip("torch")

F64 = torch.float64


def loss(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):  # allocate-then-fill
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


def loss_torch(w, x):
    return torch.sum(torch.tanh(x @ w) ** 2)


def sin_times(x):
    return np.sin(x) * x  # a vector output


def two_outputs(x, y):
    return x * y, np.sum(np.exp(x))


def scale_in_place(x, y):
    x *= 2.0  # writes its first argument
    return np.sum(x * y)


def guarded(x):
    y = x * x  # the pullback of this line reads x ...
    x.fill(0.0)  # ... which this overwrites: adgen saves a copy
    return np.sum(y) + np.sum(x)


def with_option(x, power=2.0):
    return np.sum(x ** power)


def tensors(*shapes: tuple[int, ...], seed: int = 0, grad: bool = True) -> list:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, dtype=F64, generator=gen, requires_grad=grad) for s in shapes]


def numpy(t):
    return t.detach().numpy().copy()


def test_backward_matches_adgen_and_central_differences() -> None:
    w, x = tensors((3, 2), (4, 3))
    out = torch_function(loss)(w, x)
    out.backward()
    assert out.dtype == F64 and out.shape == ()
    assert np.isclose(out.item(), loss(numpy(w), numpy(x)))
    args = (numpy(w), numpy(x))
    expected = adgen.grad(loss, argnums=(0, 1))(*args)
    for k, t in enumerate((w, x)):
        assert t.grad.dtype == F64 and t.grad.shape == t.shape
        assert_grad_close(t.grad.numpy(), expected[k])
        assert_grad_close(t.grad.numpy(), numerical_grad(loss, args, k))


@pytest.mark.parametrize("fun, shapes", [(loss, [(3, 2), (4, 3)]), (sin_times, [(5,)]),
                                         (two_outputs, [(4,), (4,)]), (guarded, [(6,)])],
                         ids=["loss", "vector-output", "two-outputs", "guarded-write"])
def test_gradcheck_float64(fun, shapes) -> None:
    op = torch_function(fun)
    assert torch.autograd.gradcheck(op, tuple(tensors(*shapes)), eps=1e-6, atol=1e-6)


def weighted(x, u):
    return np.sum(sin_times(x) * u)


def test_vector_output_matches_central_differences() -> None:
    (x,) = tensors((5,))
    u = torch.linspace(-1.0, 1.0, 5, dtype=F64)
    (torch_function(sin_times)(x) * u).sum().backward()
    args = (numpy(x), u.numpy())
    assert_grad_close(x.grad.numpy(), numerical_grad(weighted, args, 0))
    assert_grad_close(x.grad.numpy(), adgen.grad(weighted)(*args))


def test_composes_with_torch_layers() -> None:
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 4, dtype=F64)
    w, x = tensors((4, 2), (5, 3), seed=1)
    x.requires_grad_(False)
    op = torch_function(loss)
    op(w, torch.relu(layer(x))).backward()
    got = [p.grad.clone() for p in (w, layer.weight, layer.bias)]
    for p in (w, layer.weight, layer.bias):
        p.grad = None
    loss_torch(w, torch.relu(layer(x))).backward()  # the same model in torch operations
    for g, p in zip(got, (w, layer.weight, layer.bias)):
        assert torch.allclose(g, p.grad, rtol=1e-10, atol=1e-12)
    # and against central differences of the whole model in NumPy, for the layer's bias
    wn, xn, weight = numpy(w), x.numpy(), numpy(layer.weight)

    def model(bias):
        return loss(wn, np.maximum(xn @ weight.T + bias, 0.0))

    assert_grad_close(got[2].numpy(), numerical_grad(model, (numpy(layer.bias),), 0))


def test_cpu_tensors_share_memory_and_writes_are_the_plain_functions() -> None:
    a = torch.ones(3, dtype=F64)  # written in place by scale_in_place, no grad
    (b,) = tensors((3,))
    pointer = a.data_ptr()
    version = a._version
    out = torch_function(scale_in_place)(a, b)
    plain = np.ones(3)
    assert np.isclose(out.item(), scale_in_place(plain, numpy(b)))
    assert a.data_ptr() == pointer and np.array_equal(a.numpy(), plain)  # written, not copied
    assert a._version > version  # torch knows the tensor changed
    out.backward()
    assert_grad_close(b.grad.numpy(), numerical_grad(scale_in_place, (np.ones(3), numpy(b)), 1))


def test_write_into_a_tensor_torch_saved_is_caught_by_torch() -> None:
    (w,) = tensors((3,))
    a = torch.ones(3, dtype=F64)
    y = (w * a).sum()  # torch saves a for w's gradient
    torch_function(scale_in_place, argnums=1)(a, w.detach())
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("fun", [scale_in_place, guarded])
def test_a_tensor_that_requires_grad_is_not_written(fun) -> None:
    # torch's graph could not see the write: fun writes a copy, the gradient is with respect
    # to the value passed in
    args = tensors(*[(4,)] * (2 if fun is scale_in_place else 1))
    before = [numpy(a) for a in args]
    torch_function(fun)(*args).backward()
    for a, old in zip(args, before):
        assert np.array_equal(a.detach().numpy(), old)
    expected = adgen.grad(fun, argnums=tuple(range(len(args))))(*[b.copy() for b in before])
    for k, a in enumerate(args):
        assert_grad_close(a.grad.numpy(), expected[k])
        assert_grad_close(a.grad.numpy(), numerical_grad(fun, before, k))


def test_argnums() -> None:
    w, x = tensors((3, 2), (4, 3))
    with pytest.raises(adgen.ArgnumsError, match="argument 1 of loss requires grad"):
        torch_function(loss, argnums=0)(w, x)
    torch_function(loss, argnums=0)(w, x.detach()).backward()
    assert_grad_close(w.grad.numpy(), numerical_grad(loss, (numpy(w), numpy(x)), 0))
    with pytest.raises(adgen.NonDifferentiableError, match="dtype torch.int64"):
        torch_function(loss, argnums=(0, 1))(w, torch.ones(4, 3, dtype=torch.int64))


def test_keyword_arguments_and_float32() -> None:
    x = torch.linspace(0.5, 1.5, 4, dtype=torch.float32, requires_grad=True)
    out = torch_function(with_option)(x, power=3.0)
    out.backward()
    assert x.grad.dtype == torch.float32
    xs = x.detach().numpy().astype(np.float64)
    expected = numerical_grad(lambda v: with_option(v, power=3.0), (xs,), 0)
    assert np.allclose(x.grad.numpy(), expected, rtol=1e-5)
    assert np.allclose(x.grad.numpy(), adgen.grad(with_option)(xs, power=3.0), rtol=1e-5)


def test_torch_func_grad() -> None:
    w, x = tensors((3, 2), (4, 3), grad=False)
    got = torch.func.grad(torch_function(loss))(w, x)
    args = (w.numpy(), x.numpy())
    assert_grad_close(got.numpy(), adgen.grad(loss)(*args))
    assert_grad_close(got.numpy(), numerical_grad(loss, args, 0))


def total(x):
    return np.sum(sin_times(x))


def test_torch_func_vmap_and_grad_of_vmap() -> None:
    (xs,) = tensors((3, 5), grad=False)
    op = torch_function(sin_times)
    batched = torch.func.vmap(op)(xs)
    assert torch.allclose(batched, torch.from_numpy(sin_times(xs.numpy())))
    g = torch.func.grad(lambda v: torch.func.vmap(op)(v).sum())(xs)
    for row, x in zip(g, xs):
        assert_grad_close(row.numpy(), numerical_grad(total, (x.numpy(),), 0))
        assert_grad_close(row.numpy(), adgen.grad(total)(x.numpy()))
    # per-example gradients: vmap of grad
    per = torch.func.vmap(torch.func.grad(lambda v: op(v).sum()))(xs)
    assert torch.allclose(per, g)


def test_second_derivative_is_refused() -> None:
    (x,) = tensors((4,))
    (g,) = torch.autograd.grad(torch_function(sin_times)(x).sum(), x, create_graph=True)
    assert g.requires_grad  # not a constant: torch would take the second derivative as zero
    with pytest.raises(adgen.UnsupportedError, match="second derivative"):
        (g * x).sum().backward()
    with pytest.raises(adgen.UnsupportedError, match="second derivative"):
        torch.func.grad(torch.func.grad(lambda v: torch_function(sin_times)(v).sum()))(
            x.detach()[0:1].reshape(()))


def test_torch_func_jacrev_matches_adgen_vjp_and_central_differences() -> None:
    (x,) = tensors((4,), grad=False)
    jac = torch.func.jacrev(torch_function(sin_times))(x).numpy()
    xs = x.numpy()
    _, pullback = adgen.vjp(sin_times, xs.copy())
    for i in range(4):
        row = np.eye(4)[i]
        assert_grad_close(jac[i], pullback(row)[0])
        assert_grad_close(jac[i], numerical_grad(weighted, (xs, row), 0))


class Scaler:
    def __init__(self) -> None:
        self.c = 2.0

    def step(self, x, y):
        x *= self.c  # writes its first argument (argument 1 of the function, after self)
        return np.sum(x * y)


def scaled_product(c, x, y):
    return np.sum(c * x * y)


def test_a_bound_method_writes_the_right_argument() -> None:
    a = torch.ones(3, dtype=F64)
    (b,) = tensors((3,))
    version = a._version
    torch_function(Scaler().step)(a, b).backward()
    assert np.array_equal(a.numpy(), [2.0, 2.0, 2.0]) and a._version > version
    args = (2.0, np.ones(3), numpy(b))
    assert_grad_close(b.grad.numpy(), numerical_grad(scaled_product, args, 2))
    # a tensor that requires grad in the written position: fun writes a copy
    (c,) = tensors((3,), seed=5)
    before = numpy(c)
    torch_function(Scaler().step)(c, b.detach()).backward()
    assert np.array_equal(c.detach().numpy(), before)
    assert_grad_close(c.grad.numpy(), numerical_grad(scaled_product, (2.0, before, numpy(b)), 1))


def generator(x):
    yield x


def test_static_errors_surface_when_wrapping() -> None:
    with pytest.raises(adgen.UnsupportedError, match="generator"):
        torch_function(generator)


def identity(x):
    return x


def first_row(x):
    return x[0]


@pytest.mark.parametrize("fun", [identity, first_row])
def test_outputs_and_gradients_never_alias_torchs_tensors(fun) -> None:
    (x,) = tensors((3, 4))
    y = torch_function(fun)(x)
    assert not np.shares_memory(y.detach().numpy(), x.detach().numpy())
    assert torch.autograd.gradcheck(torch_function(fun), (x,))
    # the pullback of identity returns its cotangent: torch may accumulate into the gradient
    # in place, which must not change the cotangent it was given
    seed = torch.ones_like(y)
    x.grad = None
    torch_function(fun)(x).backward(seed)
    x.grad += 1.0
    assert torch.equal(seed, torch.ones_like(y))
    expected = numerical_grad(lambda v: np.sum(fun(v)), (numpy(x),), 0)
    assert_grad_close(x.grad.numpy() - 1.0, expected)
