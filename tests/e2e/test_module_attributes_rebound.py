"""A package of two modules whose functions call each other's through the module
(``losses.l2(w)``), and a user who reloads or monkeypatches one of them between calls.

The compiled caller guarded the name ``losses`` (still the same module after
``importlib.reload``) but not the attribute ``losses.l2`` it had compiled a derivative for:
after a reload that changed ``l2``, ``grad(network)`` kept the old ``l2``'s derivative (with
the new module constants), silently: the value the plain call gives was the new function's.
Each attribute the function reads through a module of the user's own code is now guarded.
Gradients are checked against central differences.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

LAYERS = '''
import numpy as np
from . import losses

SCALE = 2.0


def network(w, x, y):
    h = np.tanh(x @ w) * SCALE
    return losses.mse(h, y) + losses.l2(w)
'''

LOSSES = '''
import numpy as np

LAMBDA = 0.1


def mse(pred, y):
    return np.mean((pred - y) ** 2)


def l2(w):
    return LAMBDA * np.sum(w ** 2)
'''


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "userpkg_rebound"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "layers.py").write_text(LAYERS)
    (root / "losses.py").write_text(LOSSES)
    monkeypatch.syspath_prepend(str(tmp_path))
    layers = importlib.import_module("userpkg_rebound.layers")
    yield root, layers, sys.modules["userpkg_rebound.losses"]
    for name in ("userpkg_rebound", "userpkg_rebound.layers", "userpkg_rebound.losses"):
        sys.modules.pop(name, None)


def _data():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((3, 2)), rng.standard_normal((5, 3)),
            rng.standard_normal((5, 2)))


def _check(layers, w, x, y) -> None:
    g = adgen.grad(layers.network)(w, x, y)
    assert np.allclose(g, numerical_grad(lambda v: layers.network(v, x, y), (w,), 0),
                       rtol=1e-5, atol=1e-6)


def test_reloading_the_module_a_callee_lives_in(package) -> None:
    root, layers, losses = package
    w, x, y = _data()
    _check(layers, w, x, y)
    (root / "losses.py").write_text(LOSSES.replace("LAMBDA = 0.1", "LAMBDA = 0.7")
                                    .replace("w ** 2", "w ** 4"))
    importlib.reload(losses)
    assert np.isclose(losses.l2(np.ones(2)), 1.4)  # the new l2 runs
    _check(layers, w, x, y)
    # the hand-derived part: d/dw 0.7 sum(w^4) = 2.8 w^3
    g0 = adgen.grad(lambda v: losses.l2(v))(w)
    assert np.allclose(g0, 2.8 * w ** 3)


def test_monkeypatching_a_function_of_the_module(package) -> None:
    _, layers, losses = package
    w, x, y = _data()
    _check(layers, w, x, y)
    original = losses.l2
    losses.l2 = lambda w: 0.5 * np.sum(np.abs(w) ** 3)
    try:
        _check(layers, w, x, y)
        # forward mode compiled before the patch follows it as well
        v = np.ones_like(w)
        _, t = adgen.jvp(lambda u: layers.network(u, x, y), (w,), (v,))
        assert np.isclose(t, np.sum(adgen.grad(layers.network)(w, x, y) * v))
    finally:
        losses.l2 = original
    _check(layers, w, x, y)


def test_forward_mode_after_a_reload(package) -> None:
    root, layers, losses = package
    w, x, y = _data()
    v = np.arange(6.0).reshape(3, 2) / 6

    def f(u):
        return layers.network(u, x, y)

    def directional(u):
        eps = 1e-6
        return (f(u + eps * v) - f(u - eps * v)) / (2 * eps)

    assert np.isclose(adgen.jvp(f, (w,), (v,))[1], directional(w), rtol=1e-5)
    (root / "losses.py").write_text(LOSSES.replace("w ** 2", "np.sin(w) ** 2"))
    importlib.reload(losses)
    assert np.isclose(adgen.jvp(f, (w,), (v,))[1], directional(w), rtol=1e-5)


class Config:
    act = np.tanh
    scale = 2.0

    @staticmethod
    def reg(w):
        return np.sum(w ** 2)


class Settings:
    pass


SETTINGS = Settings()
SETTINGS.inner = Settings()
SETTINGS.inner.f = np.exp


def configured(w):
    return np.sum(Config.act(w) * Config.scale) + Config.reg(w)


def nested(w):
    return np.sum(SETTINGS.inner.f(w)) * 2.0


def test_functions_of_a_global_class_or_object_rebound_between_calls() -> None:
    w = np.array([0.5, -1.0, 2.0])
    g = adgen.grad(configured)
    gn = adgen.grad(nested)
    saved = (Config.act, Config.scale, Config.__dict__["reg"], SETTINGS.inner)
    try:
        for step in range(3):
            assert np.allclose(g(w), numerical_grad(configured, (w,), 0), rtol=1e-5, atol=1e-6)
            assert np.allclose(gn(w), numerical_grad(nested, (w,), 0), rtol=1e-5, atol=1e-6)
            Config.act = [np.sin, np.cos][step % 2]  # was: the old function's derivative
            Config.scale = 3.0 + step
            Config.reg = staticmethod(lambda w: np.sum(w ** 4))
            SETTINGS.inner = Settings()
            SETTINGS.inner.f = [np.sin, np.tanh][step % 2]
        Config.act, Config.scale = np.cos, 4.0
        assert np.allclose(g(w), -4.0 * np.sin(w) + 4 * w ** 3)  # by hand
    finally:
        Config.act, Config.scale, SETTINGS.inner = saved[0], saved[1], saved[3]
        Config.reg = saved[2]
