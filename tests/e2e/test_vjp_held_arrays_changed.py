"""A pullback kept from ``adgen.vjp`` refuses to run after an array held by a global or
closure *object* it read was changed in place (src/adgen/held_arrays.py).

The pullback reads such arrays by reference (its saved values hold them), so a
configuration's array changed between ``vjp`` and the pullback (``cfg.A[1] = 100``) gave a
silently wrong cotangent: ``[0.995, 98.0, 2.87]`` for ``[0.995, 1.96, 2.87]``. The
cotangent of ``sum(A * sin(w))`` is ``A * cos(w)`` (the hand formula the tests use).
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest

import adgen

W = np.array([0.1, 0.2, 0.3])
A0 = np.array([1.0, 2.0, 3.0])


class Config:
    def __init__(self):
        self.A = A0.copy()
        self.sub = types.SimpleNamespace(A=A0.copy())

    def weights(self):
        return self.A


class Model:
    def __init__(self):
        self.W = A0.copy()

    def loss(self, w):
        return np.sum(self.W * np.sin(w))


@dataclasses.dataclass
class Settings:
    scale: np.ndarray


cfg = Config()
model = Model()
settings = Settings(A0.copy())
TABLE = {"A": A0.copy(), "nested": {"B": A0.copy()}}


def attribute(w):
    return np.sum(cfg.A * np.sin(w))


def attribute_bound_first(w):
    a = cfg.A
    return np.sum(a * np.sin(w))


def nested_attribute(w):
    return np.sum(cfg.sub.A * np.sin(w))


def dict_item(w):
    return np.sum(TABLE["A"] * np.sin(w))


def nested_item(w):
    return np.sum(TABLE["nested"]["B"] * np.sin(w))


def method_hands_out(w):
    return np.sum(cfg.weights() * np.sin(w))


def model_method(w):
    return model.loss(w)


def dataclass_field(w):
    return np.sum(settings.scale * np.sin(w))


def view_of_attribute(w):
    a = cfg.A[0:3]
    return np.sum(a * np.sin(w))


def closure_over(obj):
    def loss(w):
        return np.sum(obj.A * np.sin(w))
    return loss


def _held(fun):
    """The array ``fun`` reads, as the program holds it."""
    return {attribute: lambda: cfg.A, attribute_bound_first: lambda: cfg.A,
            nested_attribute: lambda: cfg.sub.A, dict_item: lambda: TABLE["A"],
            nested_item: lambda: TABLE["nested"]["B"], method_hands_out: lambda: cfg.A,
            model_method: lambda: model.W, dataclass_field: lambda: settings.scale,
            view_of_attribute: lambda: cfg.A}[fun]()


@pytest.fixture(autouse=True)
def _restore():
    yield
    for a in (cfg.A, cfg.sub.A, TABLE["A"], TABLE["nested"]["B"], model.W, settings.scale):
        a[:] = A0


CASES = [(attribute, "cfg.A"), (attribute_bound_first, "cfg.A"),
         (nested_attribute, "cfg.sub.A"), (dict_item, "TABLE['A']"),
         (nested_item, "TABLE['nested']['B']"), (method_hands_out, "cfg.A"),
         (model_method, "model.W"), (dataclass_field, "settings.scale"),
         (view_of_attribute, "cfg.A")]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("fun, what", CASES, ids=[f.__name__ for f, _ in CASES])
def test_changed_in_place_is_refused(fun, what, mutation):
    out, pullback = adgen.vjp(fun, W.copy(), mutation=mutation)
    np.testing.assert_allclose(out, np.sum(A0 * np.sin(W)))
    first = pullback(1.0)[0]
    np.testing.assert_allclose(first, A0 * np.cos(W), rtol=1e-12)  # hand formula
    _held(fun)[1] = 100.0
    with pytest.raises(adgen.MutationError) as info:
        pullback(1.0)
    assert what in info.value.message and "changed in place" in info.value.message
    _held(fun)[1] = A0[1]  # back as it was: the same cotangent again
    np.testing.assert_array_equal(pullback(1.0)[0], first)


GLOBAL = np.array([1.0, 2.0, 3.0, 4.0])


def view_of_a_global_array(w):
    a = GLOBAL[0:3]
    return np.sum(a * np.sin(w))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_view_of_a_global_array(mutation):
    """The pullback reads the view, not the global by its name (held_arrays.free_snapshots looked
    for the name): it gave [0.995, 98.0, 2.87] after GLOBAL[1] = 100."""
    out, pullback = adgen.vjp(view_of_a_global_array, W.copy(), mutation=mutation)
    first = pullback(1.0)[0]
    np.testing.assert_allclose(first, A0 * np.cos(W), rtol=1e-12)
    GLOBAL[1] = 100.0
    try:
        with pytest.raises(adgen.MutationError) as info:
            pullback(1.0)
        assert "a part of GLOBAL" in info.value.message
    finally:
        GLOBAL[1] = 2.0
    np.testing.assert_array_equal(pullback(1.0)[0], first)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_closure_over_an_object(mutation):
    obj = Config()
    out, pullback = adgen.vjp(closure_over(obj), W.copy(), mutation=mutation)
    np.testing.assert_allclose(pullback(1.0)[0], A0 * np.cos(W), rtol=1e-12)
    obj.A[2] = -1.0
    with pytest.raises(adgen.MutationError) as info:
        pullback(1.0)
    assert "obj.A" in info.value.message


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_rebinding_or_changing_what_the_pullback_does_not_read_is_free(mutation):
    """The pullback keeps the array it read: rebinding the attribute (a notebook cell)
    changes nothing; an array it reads only for a shape may change freely."""
    out, pullback = adgen.vjp(attribute, W.copy(), mutation=mutation)
    kept = cfg.A
    cfg.A = np.array([5.0, 6.0, 7.0])
    try:
        np.testing.assert_allclose(pullback(1.0)[0], A0 * np.cos(W), rtol=1e-12)
    finally:
        cfg.A = kept

    def added(w):
        return np.sum(np.sin(cfg.A + w))

    out, pullback = adgen.vjp(added, W.copy(), mutation=mutation)
    expected = np.cos(A0 + W)
    np.testing.assert_allclose(pullback(1.0)[0], expected, rtol=1e-12)
    cfg.A[0] = 50.0  # read by the forward only (the pullback keeps its shape)
    np.testing.assert_allclose(pullback(1.0)[0], expected, rtol=1e-12)


def test_grad_is_unchanged():
    """grad runs its pullback at once: nothing to compare, and the gradient is the formula."""
    g = adgen.grad(attribute)
    for _ in range(3):
        np.testing.assert_allclose(g(W.copy()), A0 * np.cos(W), rtol=1e-12)
