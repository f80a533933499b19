"""A model of N layers stepped N times: the work of each step does not grow with N (issue 15).

``Model.step(u, t)`` writes ``u`` in place and calls ``self.rhs(u, t)``, which reads one
layer. Each step's pullback hands the model's adjoint back and forth: ``rhs``'s cotangent of
the model holds the list adjoint of its layers (one entry per layer, one of them not zero),
added to the caller's (``ShadowMap.merge``: ``adjoints.add``); ``zeros_like`` of the list
of layers; the capture of the model at the call (its lists' arrays: ``guards._arrays_of``);
and ``remap_saved`` over what ``rhs`` saved (the list of layers). Each of those walked the N
layers in Python at every step, so a gradient made a number of Python calls and builtin
calls growing as N squared. They now take the items that need work out in C loops (the
items' classes, the non-zero items), and walk only those.

The counting test counts every Python call and builtin call (``sys.setprofile``) and every
line run (``sys.settrace``: a comprehension's line once per item) of one gradient at 8, 16
and 32 layers: linear in N exactly (a constant per step). Without the change it grew by 11 %
more per step from 16 to 32 layers than from 8 to 16 (each of the five walks alone fails it:
the four above, and ``item_shadows._left_in_shadows``' set of the arrays a record of the
model reaches that have a shadow, made item by item at each step). The gradients are checked against the hand-written adjoint and
central differences.
"""

from __future__ import annotations

import gc
import sys
from collections import Counter

import numpy as np
import pytest
from gradcheck import check_grad

import adgen
from adgen.errors import MutationError
from adgen.runtime import ObjectAdjoint, add, zeros_like

DECAY, DT = 0.9, 0.5


class Layer:
    def __init__(self, w):
        self.w = w
        self.scale = 1.0


class Model:
    def __init__(self, W):
        self.layers = [Layer(W[i] * 1.0) for i in range(W.shape[0])]

    def rhs(self, u, t):
        layer = self.layers[t]
        return layer.scale * np.tanh(layer.w * u)

    def step(self, u, t):
        u *= DECAY
        u += DT * self.rhs(u, t)


def stepped(u0, W):
    m = Model(W)
    u = u0.copy()
    for t in range(W.shape[0]):
        m.step(u, t)
    return np.sum(u ** 2)


def stepped_by_hand(u0, W):
    """v_t = DECAY u_t, u_{t+1} = v_t + DT tanh(W_t v_t), run back."""
    u, vs, ths = u0.copy(), [], []
    for t in range(W.shape[0]):
        v = DECAY * u
        th = np.tanh(W[t] * v)
        vs.append(v)
        ths.append(th)
        u = v + DT * th
    u_bar, W_bar = 2.0 * u, np.zeros_like(W)
    for t in reversed(range(W.shape[0])):
        g = DT * u_bar * (1.0 - ths[t] ** 2)
        W_bar[t] = g * vs[t]
        u_bar = DECAY * (u_bar + g * W[t])
    return u_bar, W_bar


class StatefulModel(Model):
    """Layers and a list of arrays on the model (its lists hold arrays: captured, guarded).
    Its steps still capture each array of the list (the capture of ``self`` at the call
    takes them all): work in N per step, left as it is."""

    def __init__(self, W):
        super().__init__(W)
        self.biases = [0.1 * W[i] for i in range(W.shape[0])]

    def rhs(self, u, t):
        layer = self.layers[t]
        return layer.scale * np.tanh(layer.w * u + self.biases[t])


def stepped_stateful(u0, W):
    m = StatefulModel(W)
    u = u0.copy()
    for t in range(W.shape[0]):
        m.step(u, t)
    return np.sum(u ** 2)


def args_for(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(4), rng.standard_normal((n, 4))


def events_of_one_gradient(f, n):
    """The Python calls, builtin calls and lines run (a loop's body counts once per
    iteration) of one gradient of ``f`` at ``n`` layers (after a first one, which compiles),
    per function, and per line."""
    args = args_for(n)
    g = adgen.grad(f, argnums=(0, 1), mutation="save")
    g(*args)
    seen: Counter = Counter()

    def count_calls(frame, event, arg):
        if event in ("call", "c_call"):
            code = frame.f_code
            seen[(code.co_filename.rsplit("/", 1)[-1], code.co_name)] += 1

    def count_lines(frame, event, arg):
        if event == "line":
            seen[(frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_lineno)] += 1
        return count_lines

    # (no garbage collection while counting: a collection runs gc.callbacks, JAX's
    # _xla_gc_callback where an earlier test imported jax, counted at one n and not another)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    before = sys.getprofile(), sys.gettrace()
    try:
        sys.setprofile(count_calls)
        try:
            g(*args)
        finally:
            sys.setprofile(before[0])
        sys.settrace(count_lines)
        try:
            g(*args)
        finally:
            sys.settrace(before[1])
    finally:
        if was_enabled:
            gc.enable()
    return seen


def test_work_per_step_does_not_grow_with_the_layers():
    e8, e16, e32 = (events_of_one_gradient(stepped, n) for n in (8, 16, 32))
    first = sum(e16.values()) - sum(e8.values())  # 8 steps more
    second = sum(e32.values()) - sum(e16.values())  # 16 steps more
    # linear in N: the second 16 steps cost what twice 8 steps cost (a constant per step);
    # the functions whose count grew faster than that, for the message
    grew = {k: (e8[k], e16[k], e32[k]) for k in e32
            if (e32[k] - e16[k]) - 2 * (e16[k] - e8[k]) > 2}
    assert abs(second - 2 * first) <= 0.01 * first, (first, second, grew)
    assert not grew, grew


def test_gradient_of_the_stepped_model():
    u0, W = args_for(6)
    got = adgen.grad(stepped, argnums=(0, 1), mutation="save")(u0, W)
    want = stepped_by_hand(u0, W)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-10, atol=1e-12)
    check_grad(stepped, [u0, W], argnums=(0, 1), mutation="save")
    # "strict": u += DT * self.rhs(u, t) overwrites what tanh's pullback reads
    with pytest.raises(MutationError):
        adgen.grad(stepped, argnums=(0, 1), mutation="strict")(u0, W)


def test_gradient_of_a_model_whose_lists_hold_arrays():
    u0, W = args_for(5, seed=1)
    check_grad(stepped_stateful, [u0, W], argnums=(0, 1), mutation="save")


def test_list_adjoints_of_objects_add_item_by_item():
    """``add`` of two list adjoints of objects (the fast path) is the item-by-item sum: an
    item that is None or empty on one side is the other side's, None giving way to an
    empty one, and two non-empty ones are added by attribute."""
    w1, w2, w3 = np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([4.0, 0.0])
    full_a, full_b = ObjectAdjoint(w=w1), ObjectAdjoint(w=w2, scale=1.5)
    empty_a, empty_b, only_b = ObjectAdjoint(), ObjectAdjoint(), ObjectAdjoint(w=w3)
    a = [full_a, None, empty_a, ObjectAdjoint(w=w1.copy()), None, empty_a, full_a]
    b = [ObjectAdjoint(), only_b, None, full_b, empty_b, None, None]
    out = add(a, b)
    assert len(out) == 7 and isinstance(out, list)
    assert out[0] is full_a  # a non-empty item plus an empty one
    assert out[1] is only_b  # None plus an item
    assert out[2] is empty_a  # an empty item plus None
    assert set(out[3]) == {"w", "scale"}  # two non-empty: by attribute
    np.testing.assert_array_equal(out[3]["w"], w1 + w2)
    assert out[3]["scale"] == 1.5
    assert out[4] is empty_b  # None gives way to an empty one
    assert out[5] is empty_a and out[6] is full_a
    # the arguments unchanged
    assert set(a[3]) == {"w"} and np.array_equal(a[3]["w"], w1) and b[3] is full_b
    assert set(full_b) == {"w", "scale"} and full_b["w"] is w2


def test_zero_adjoint_of_a_list_of_objects():
    layers = [Layer(np.ones(2)) for _ in range(5)]
    zero = zeros_like(layers)
    assert isinstance(zero, list) and len(zero) == 5
    assert all(type(z) is ObjectAdjoint and not z for z in zero)
    assert len({id(z) for z in zero}) == 5  # one each: a pullback may fill one in
    mixed = [Layer(np.ones(2)), np.ones(3), 2.0]
    zero = zeros_like(mixed)
    assert type(zero[0]) is ObjectAdjoint and not zero[0]
    np.testing.assert_array_equal(zero[1], np.zeros(3))
    assert zero[2] == 0.0
