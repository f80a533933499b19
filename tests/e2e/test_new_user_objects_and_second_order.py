"""Programs a new user wrote (session 8): a simulation under ``checkpoint=``, Hessians of
losses with ``np.maximum`` / ``max``, second derivatives of functions with default arrays,
methods of a global model called from a function or a lambda, and methods that write their
argument in place. Every gradient is checked against central differences computed here."""

from __future__ import annotations

import functools
import pickle

import numpy as np
import pytest

import adgen


def fd(f, x, eps=1e-6):
    """Central differences of a scalar function of a float or a float array."""
    if isinstance(x, float):
        return (f(x + eps) - f(x - eps)) / (2 * eps)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def fd_hessian(f, x):
    """The Hessian by central differences of adgen's gradient, checked itself against
    central differences of f in each test."""
    g = adgen.grad(f)
    return np.stack([fd(lambda z, i=i: g(z).reshape(-1)[i], x).reshape(-1)
                     for i in range(x.size)]).reshape(x.shape + x.shape)


# --------------------------------------------------------------------------------------------
# checkpoint=: a leapfrog simulation whose first argument is called x0, with a default


DT = 0.01


def spring_forces(x, k, damping, v):
    f = np.zeros_like(x)
    f[1:] -= k * (x[1:] - x[:-1])
    f[:-1] += k * (x[1:] - x[:-1])
    f -= damping * v
    return f


def simulate(x0, k, damping=0.1):
    x = x0.copy()
    v = np.zeros_like(x0)
    energy = np.zeros(200)
    for step in range(200):
        a = spring_forces(x, k, damping, v)
        v += DT * a
        x += DT * v
        energy[step] = 0.5 * np.sum(v ** 2)
    return np.sum(x ** 2) + 0.01 * np.sum(energy)


def simulate_state_dict(params, x0):
    state = {"x": x0.copy(), "v": np.zeros_like(x0)}
    t = 0.0
    total = 0.0
    for n in range(150):
        a = -params["k"] * state["x"] - params["c"] * state["v"]
        state["v"] = state["v"] + DT * a
        state["x"] = state["x"] + DT * state["v"]
        t += DT
        total += DT * np.sum(state["x"] ** 2) * (1.0 + t)
    return total


@pytest.mark.parametrize("checkpoint", [True, 7])
def test_checkpointed_simulation_with_an_argument_named_x0(checkpoint):
    # was UnsupportedError "the loop writes the argument x0 of simulate" (the segment's own
    # first parameter was taken for the user's x0), then "... writes the argument damping"
    # (the loop-carried x and v were not followed back to their copies, and the segment got
    # simulate's default 0.1 for its last input)
    x0, k = np.sin(np.linspace(0.0, 3.0, 8)), 3.0
    g_x0, g_k = adgen.grad(simulate, argnums=(0, 1), checkpoint=checkpoint)(x0, k)
    assert np.allclose(g_x0, fd(lambda x: simulate(x, k), x0), rtol=1e-5, atol=1e-8)
    assert np.isclose(g_k, fd(lambda kk: simulate(x0, kk), k), rtol=1e-5)


def test_checkpointed_loop_with_float_counters():
    # t += DT and total += ... in the loop: the segment copied them first ('float' object
    # has no attribute 'copy')
    params, x0 = {"k": 2.0, "c": 0.3}, np.sin(np.linspace(0.0, 3.0, 6))
    g = adgen.grad(simulate_state_dict, checkpoint=True)(params, x0)
    for key in params:
        def f(p, key=key):
            return simulate_state_dict({**params, key: p}, x0)
        assert np.isclose(g[key], fd(f, params[key]), rtol=1e-5)


# --------------------------------------------------------------------------------------------
# second derivatives through max and min


X = np.array([0.3, -1.2, 2.0, 0.7])


def hinge_cubed(x):
    return np.sum(np.maximum(x, 0.5) ** 3) + np.sum(np.minimum(x, 0.0) ** 2)


def pairwise_max(x):
    return max(x[0], x[1]) ** 3 + min(x[2], x[3]) ** 2 + np.sum(np.fmax(x, 0.5) ** 3)


def max_of_a_list(x):
    return max([x[0] * 2.0, x[1] ** 2, x[2]]) ** 3


@pytest.mark.parametrize("f", [hinge_cubed, pairwise_max, max_of_a_list])
@pytest.mark.parametrize("how", ["hessian", "jacrev", "jacfwd"])
def test_second_derivatives_through_max_and_min(f, how):
    # was MissingRuleError "balanced_eq() has no derivative rule" (and extreme_tangent()),
    # naming a generated file <adgen ... directional>
    assert np.allclose(adgen.grad(f)(X), fd(f, X), atol=1e-6)
    want = fd_hessian(f, X)
    if how == "hessian":
        got = adgen.hessian(f)(X)
    elif how == "jacrev":
        got = adgen.jacrev(adgen.grad(f))(X)
    else:
        got = adgen.jacfwd(adgen.grad(f))(X)
    assert np.allclose(got, want, atol=1e-5)


def test_second_derivative_of_a_number_against_an_array():
    def f(c, floor=np.array([0.1, 0.6, 2.0])):
        return np.sum(np.maximum(c, floor) ** 3) + c ** 2

    # c = 0.5: above 0.1 only, so d2/dc2 = 6 c + 2
    assert np.isclose(adgen.grad(adgen.grad(f))(0.5), 6 * 0.5 + 2.0)
    assert np.isclose(adgen.hessian(f)(0.5), 6 * 0.5 + 2.0)


# --------------------------------------------------------------------------------------------
# grad of grad of a function with a default array


def wave_energy(c, freqs=np.array([0.1, 0.6, 2.0])):
    return np.sum(np.sin(c * freqs) ** 3) + c ** 2


def weighted(x, *, w=np.array([1.0, -2.0, 0.5])):
    return np.sum(np.tanh(w * x) ** 2)


def test_grad_of_grad_with_a_default_array():
    # was TypeError "unsupported operand type(s) for *: 'float' and 'NoneType'": reverse over
    # reverse loaded the forward again from its source, where the default shows as None
    c = 0.5
    want = fd(adgen.grad(wave_energy), c)
    assert abs(fd(wave_energy, c) - adgen.grad(wave_energy)(c)) < 1e-7
    assert np.isclose(adgen.grad(adgen.grad(wave_energy))(c), want, rtol=1e-6)


def test_jacrev_of_grad_with_a_keyword_only_default():
    x = np.array([0.3, 0.1, -0.4])
    assert np.allclose(adgen.grad(weighted)(x), fd(weighted, x), atol=1e-7)
    want = fd_hessian(weighted, x)
    assert np.allclose(adgen.jacrev(adgen.grad(weighted))(x), want, atol=1e-5)
    assert np.allclose(adgen.hessian(weighted)(x), want, atol=1e-5)


# --------------------------------------------------------------------------------------------
# methods of a global model called from a function, a lambda, a classmethod


class Model:
    def __init__(self, n_in, n_out, seed=0):
        rng = np.random.default_rng(seed)
        self.W = rng.standard_normal((n_in, n_out)) * 0.3
        self.b = np.zeros(n_out)

    def features(self, x):
        return np.tanh(x @ self.W + self.b)

    def __call__(self, x):
        return self.features(x) * 2.0

    def loss(self, x, y):
        return np.mean((self(x) - y) ** 2)


class Scaler:
    def __init__(self, c):
        self.c = c

    def apply(self, v, power=2.0):
        return self.c * v ** power

    def scale_inplace(self, v):
        v *= self.c
        return v

    @classmethod
    def unit(cls):
        return cls(1.5)


model = Model(3, 2)
scaler = Scaler(3.0)
XS = np.random.default_rng(1).standard_normal((5, 3))
YS = np.random.default_rng(2).standard_normal((5, 2))


def loss_of_global_model(x):
    return model.loss(x, YS)


def features_of_global_model(x):
    return np.sum(model.features(x) ** 2)


def keyword_method(v):
    return np.sum(scaler.apply(v, power=3.0) * Scaler.unit().apply(v))


@pytest.mark.parametrize("f", [loss_of_global_model, features_of_global_model,
                               lambda x: model.loss(x, YS)])
def test_a_global_models_method(f):
    # was TypeError "loss_forward() missing 1 required positional argument: 'y'": the bound
    # method was compiled as a callee and called without its receiver
    assert np.allclose(adgen.grad(f)(XS), fd(f, XS), atol=1e-7)


def test_a_global_objects_method_with_keywords_and_a_classmethod():
    v = np.array([0.4, -0.3, 1.1])
    assert np.allclose(adgen.grad(keyword_method)(v), fd(keyword_method, v), atol=1e-7)


def square_then_scale(v):
    w = v * v
    scaler.scale_inplace(w)        # writes w in place through a method
    return np.sum(w * v)


def scale_through_a_parameter(v, s):
    w = v * v
    s.scale_inplace(w)
    return np.sum(w * v)


def scale_through_a_variable(v):
    f = scaler.scale_inplace
    w = v * v
    f(w)
    return np.sum(w * v)


history = []


def record_through_a_variable(v):
    w = v * v
    record = history.append       # a list's own method: runs as it is
    record(w)
    return np.sum(w * v)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", [lambda v: scale_through_a_parameter(v, scaler),
                               scale_through_a_variable])
def test_a_method_writing_its_argument_is_refused(f, mutation):
    # the method call's result is discarded: its pullback was elided as 'it mutates nothing
    # active', and the gradient missed the factor 3 (44% off) for the parameter and the
    # variable; the global object's call was a raw TypeError
    v = np.array([0.4, -0.3, 1.1])
    with pytest.raises(adgen.UnsupportedError, match="scale_inplace") as err:
        adgen.grad(f, mutation=mutation)(v.copy())
    # the call's line, or (decided when it runs) the def of the method that writes
    assert err.value.location is not None and \
        err.value.location.file.endswith("test_new_user_objects_and_second_order.py")


def test_a_lists_method_held_in_a_variable_still_runs():
    v = np.array([0.4, -0.3, 1.1])
    history.clear()
    g = adgen.grad(record_through_a_variable)(v.copy())
    assert np.allclose(g, 3 * v ** 2) and len(history) == 1


def test_a_global_objects_method_writing_its_argument():
    # refused until session 16; scaler.scale_inplace(w) is now Scaler.scale_inplace(scaler, w)
    # (transforms/bound_callees.py): sum(3 v^2 * v) has the gradient 9 v^2
    v = np.array([0.4, -0.3, 1.1])
    assert np.allclose(adgen.grad(square_then_scale)(v.copy()), 9 * v ** 2)
    # strict: v *= self.c overwrites v, which its own gradient (for self.c) reads
    with pytest.raises(adgen.MutationError, match=r"v \*= self.c overwrites v"):
        adgen.grad(square_then_scale, mutation="strict")(v.copy())


# --------------------------------------------------------------------------------------------
# keyword arguments of calls resolved when they run: methods, __call__, closures, partials,
# constructors (their cotangents were dropped: silently zero gradients)


class Lin:
    def __init__(self, w):
        self.w = w

    def apply(self, x, scale=1.0):
        return np.tanh(self.w * x) * scale


class Net:
    def __init__(self):
        self.l1 = Lin(0.7)
        self.l2 = Lin(-1.3)

    def __call__(self, x, scale=1.0):
        return self.l2.apply(x=self.l1.apply(x, scale=scale), scale=2.0)


class Box:
    def __init__(self, v, k=1.0):
        self.v = v * k


def squash(x, scale=1.0):
    return np.tanh(x) * scale


lin, net = Lin(0.7), Net()


def keyword_to_a_method(x):
    return np.sum(lin.apply(x=x) ** 2)


def keyword_to_a_parameters_method(x, layer):
    return np.sum(layer.apply(x, scale=x[0]) ** 2)


def keyword_to_call(x):
    return np.sum(net(x, scale=x[1]) ** 2)


def keyword_to_a_nested_def(x):
    def inner(a, b=1.0):
        return np.sin(a) * b
    return np.sum(inner(a=x, b=x[2]) ** 2)


def keyword_to_a_function_in_a_variable(x):
    f = squash
    return np.sum(f(x=x, scale=x[0]) ** 2)


def keyword_to_a_partial(x):
    p = functools.partial(squash, scale=2.0)
    return np.sum(p(x=x) ** 2)


def keyword_to_a_constructor(x):
    make = Box
    return np.sum(make(x, k=x[0]).v ** 2) + np.sum(Box(v=x, k=x[1]).v)


@pytest.mark.parametrize("f", [
    keyword_to_a_method, lambda x: keyword_to_a_parameters_method(x, lin), keyword_to_call,
    keyword_to_a_nested_def, keyword_to_a_function_in_a_variable, keyword_to_a_partial,
    keyword_to_a_constructor])
def test_keyword_arguments_of_calls_resolved_at_run_time(f):
    x = np.array([0.5, -0.4, 0.2])
    assert np.allclose(adgen.grad(f)(x), fd(f, x), atol=1e-7)


# --------------------------------------------------------------------------------------------
# Jacobians and Hessians sent to other processes; third derivatives refused by name


def test_jacobians_and_hessians_pickle_like_gradients():
    x = np.array([0.3, 0.2, -0.1])
    for made in (adgen.hessian(weighted), adgen.jacrev(adgen.grad(weighted)),
                 adgen.jacfwd(adgen.grad(weighted)), adgen.jacobian(np.sin), adgen.hvp(weighted)):
        again = pickle.loads(pickle.dumps(made))
        args = (x, x) if "hvp" in repr(made) else (x,)
        assert np.allclose(again(*args), made(*args))


@pytest.mark.parametrize("third", [
    lambda x: adgen.jacrev(adgen.jacrev(adgen.grad(weighted)))(x),
    lambda x: adgen.jacfwd(adgen.hessian(weighted))(x)])
def test_third_derivatives_of_a_keyword_only_default(third):
    # refused until session 12 (third derivatives: tests/test_third_derivatives.py)
    x, eps = np.array([0.3, 0.2, -0.1]), 1e-4
    h = adgen.hessian(weighted)
    want = np.stack([(h(x + eps * e) - h(x - eps * e)) / (2 * eps) for e in np.eye(3)], -1)
    np.testing.assert_allclose(third(x.copy()), want, rtol=1e-6, atol=1e-6)


def test_a_hessian_called_inside_a_gradient():
    # refused by name until session 22 (the refusal had named adgen's own file before);
    # now the call's vjp, a third derivative: the gradient of the Hessian's sum
    x, eps = np.array([0.3, 0.2, -0.1]), 1e-4
    h = adgen.hessian(weighted)
    want = [(np.sum(h(x + eps * e)) - np.sum(h(x - eps * e))) / (2 * eps) for e in np.eye(3)]
    got = adgen.grad(lambda z: np.sum(adgen.hessian(weighted)(z)))(x.copy())
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------------------------
# second derivatives of a second object's method, of a layer, of a partial; *args with defaults


class Cubic:
    def __init__(self, a):
        self.a = a

    def energy(self, x):
        return np.sum(self.a * x ** 3)

    def __call__(self, x):
        return np.sum(self.a * x ** 3)


@pytest.mark.parametrize("how", ["hessian", "hvp", "jacfwd", "jacrev"])
def test_second_derivatives_of_two_objects_methods(how):
    # the directional wrapper was cached by the function alone and kept the first object:
    # hessian(m2.energy) after hessian(m1.energy) was m1's (80% off, silently)
    x = np.array([0.3, -0.2])
    for a in (1.0, 5.0, 2.0):
        for f in (Cubic(a).energy, Cubic(a)):   # a bound method, a layer with __call__
            if how == "hessian":
                got = adgen.hessian(f)(x)
            elif how == "hvp":
                got = np.diag(adgen.hvp(f)(x, np.ones(2)))
            elif how == "jacfwd":
                got = adgen.jacfwd(adgen.grad(f))(x)
            else:
                got = adgen.jacrev(adgen.grad(f))(x)
            assert np.allclose(got, np.diag(6.0 * a * x))


def test_grad_of_grad_of_two_objects_methods():
    for a in (5.0, 1.0):
        assert np.isclose(adgen.grad(adgen.grad(Cubic(a).energy))(0.3), 6.0 * a * 0.3)


def power_loss(a, x, *, power=3, weight=0.5):
    return weight * np.sum(a * np.abs(x) ** power)


def test_second_derivatives_of_a_partial():
    # hessian of a functools.partial: 'adgen cannot read the source of functools.partial'
    x = np.array([0.3, -0.5, 0.9])
    for a, weight in ((1.0, 0.5), (3.0, 2.0)):
        f = functools.partial(power_loss, a, weight=weight)
        want = np.diag(weight * a * 6.0 * np.abs(x))
        assert np.allclose(adgen.hessian(f)(x), want)
        assert np.allclose(adgen.jacrev(adgen.grad(f))(x), want)


def test_hessian_through_a_power_with_a_default_exponent():
    # the tangent of a ** b along b calls xlogy, which had no rule: MissingRuleError naming a
    # generated file <adgen lambda directional>
    y = np.array([0.1, 0.2, 0.3])
    f = lambda z: power_loss(1.0, z - y, weight=2.0)   # noqa: E731 - as users write it
    x = np.array([0.3, -0.5, 0.9])
    assert np.allclose(adgen.hessian(f)(x), np.diag(2.0 * 6.0 * np.abs(x - y)))


def shifted_sines(x, c=2.0, *extra):
    return np.sum(np.sin(c * x)) + sum(extra)


def test_a_helper_with_a_default_before_star_args():
    # g(z) and g(z, c=0.7) of def g(x, c=2.0, *extra): the empty tuple went into c's place
    # (a raw broadcasting error, 'multiple values for argument c')
    x = np.array([0.3, -0.5, 0.9])
    for f, c in ((lambda z: shifted_sines(z), 2.0), (lambda z: shifted_sines(z, c=0.7), 0.7),
                 (lambda z: shifted_sines(z, 1.5, z[0] * z[1]), 1.5)):
        want = fd(f, x)
        assert np.allclose(adgen.grad(f)(x), want, atol=1e-7)
        assert np.allclose(adgen.jvp(f, (x,), (np.ones(3),))[1], np.sum(want), atol=1e-7)
        assert np.allclose(adgen.jacfwd(f)(x), want, atol=1e-7)
        assert np.allclose(adgen.hessian(f)(x), fd_hessian(f, x), atol=1e-5)
    assert np.allclose(adgen.hessian(lambda z: shifted_sines(z))(x), np.diag(-4.0 * np.sin(2 * x)))


# --------------------------------------------------------------------------------------------
# checkpointing a computation that draws random numbers: refused when recomputed, not wrong


_noise = {"rng": np.random.default_rng(0)}


def noisy_descent(x0, k):
    x = x0.copy()
    for t in range(120):
        x = x - 0.01 * k * np.sin(x) + 0.01 * _noise["rng"].normal(size=x.shape)
    return np.sum(x ** 2)


@adgen.checkpoint
def noisy_step(x, k):
    return x - 0.01 * k * np.sin(x) + 0.01 * _noise["rng"].normal(size=x.shape)


def noisy_steps(x0, k):
    x = x0
    for t in range(20):
        x = noisy_step(x, k)
    return np.sum(x ** 2)


@pytest.mark.parametrize("how", ["loop", "helper"])
def test_checkpointed_random_draws_are_refused(how):
    # the backward pass recomputed the segments with other random numbers: the gradient was
    # silently off (5e-4 relative here, more with more noise)
    x0 = np.array([0.5, -1.0, 2.0])
    grad = adgen.grad(noisy_descent, checkpoint=True) if how == "loop" else \
        adgen.grad(noisy_steps)
    with pytest.raises(adgen.UnsupportedError, match="random") as err:
        grad(x0, 1.3)
    assert "test_new_user_objects_and_second_order.py" in str(err.value)
    # without checkpointing, the same function's gradient is right (one run, one draw)
    _noise["rng"] = np.random.default_rng(1)
    g = adgen.grad(noisy_descent)(x0, 1.3)

    def again(x):
        _noise["rng"] = np.random.default_rng(1)
        return noisy_descent(x, 1.3)
    assert np.allclose(g, fd(again, x0), atol=1e-6)


# --------------------------------------------------------------------------------------------
# argnums that leave out an object the code changes: its adjoint still carries the gradient


class LeakyCell:
    def __init__(self):
        self.h = np.zeros(2)

    def step(self, x, *, leak=0.5):
        self.h = (1.0 - leak) * self.h + np.tanh(x)
        return self.h


class Slot:
    def __init__(self):
        self.a = np.zeros(2)


def store_twice(o, x):
    o.a = x * 2.0
    return np.sum(x)


def run_cell(cell, xs):
    cell.h = np.zeros(2)
    total = 0.0
    for i in range(xs.shape[0]):
        h = cell.step(xs[i], leak=0.3)
        total = total + np.sum(h ** 2)
    return total


def through_a_helper(o, x):
    s = store_twice(o, x)
    return s + np.sum(o.a ** 2)


def through_a_variable(o, x):
    setter = store_twice
    s = setter(o, x)
    return s + np.sum(o.a ** 2)


def put(d, x):
    d["a"] = x * 3.0
    return 0.0


def through_a_dict(d, x):
    z = put(d, x)
    return np.sum(d["a"] ** 2) + z


@pytest.mark.parametrize("f, make", [(run_cell, LeakyCell), (through_a_helper, Slot),
                                     (through_a_variable, Slot), (through_a_dict, dict)])
def test_argnums_leaving_out_an_object_the_code_changes(f, make):
    # h = cell.step(x) stores h in cell.h, read again by the next step; grad(f, argnums=1)
    # dropped cell's adjoint (its activity ignored what a call stores in its receiver and
    # arguments), and x's gradient through cell.h with it: 6% to 100% off, silently
    xs = np.array([[0.3, -0.5], [0.7, 0.2], [-0.1, 0.4]])
    x = xs if f is run_cell else xs[0]
    got = adgen.grad(f, argnums=1)(make(), x)
    assert np.allclose(got, fd(lambda z: f(make(), z), x), atol=1e-7)


def inner_steps(params, x, y, lr=0.1):
    p = dict(params)
    for it in range(3):
        r = x @ p["w"] + p["b"] - y
        p["w"] = p["w"] - lr * (x.T @ r / len(y))
        p["b"] = p["b"] - lr * np.mean(r)
    return np.mean((x @ p["w"] + p["b"] - y) ** 2)


def test_a_dict_of_parameters_copied_with_dict():
    # p = dict(params): MissingRuleError 'dict() has no derivative rule'
    X = np.random.default_rng(3).standard_normal((8, 2))
    Y = np.random.default_rng(4).standard_normal(8)
    params = {"w": np.array([0.3, -0.2]), "b": 0.1}
    g = adgen.grad(inner_steps)(params, X, Y)
    assert np.allclose(g["w"], fd(lambda w: inner_steps({"w": w, "b": 0.1}, X, Y),
                                  params["w"]), atol=1e-7)
    assert np.isclose(g["b"], fd(lambda b: inner_steps({"w": params["w"], "b": b}, X, Y),
                                 0.1), atol=1e-7)
    assert np.isclose(adgen.grad(inner_steps, argnums=3)(params, X, Y, 0.1),
                      fd(lambda lr: inner_steps(params, X, Y, lr), 0.1), atol=1e-7)
    assert params["w"][0] == 0.3 and params["b"] == 0.1   # the caller's dict unchanged


def test_grad_of_grad_of_a_zero_d_array():
    # np.array(0.7) is a number to grad of grad, as to JAX (it was refused: 'grad(f) returns
    # an array')
    def f(x):
        return np.sin(x) * x ** 2

    x = 0.7
    want = -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
    assert np.isclose(adgen.grad(adgen.grad(f))(np.array(x)), want)
    assert np.isclose(adgen.grad(adgen.grad(f))(x), want)
