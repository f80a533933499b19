"""Tables keyed by ``id(obj)`` never answer for another object that took a freed one's id.

CPython reuses the address (the id) of a freed object for the next one of its size. A table
keyed by ``id()`` that outlives its objects then answers for a stranger: last session a
pullback made where a freed one had been ran with complex adjoints (``pullback_runs.COMPLEX_PULLBACKS``,
now a WeakSet). Every such table in ``src/`` and ``transforms/`` either holds its object in
the entry and checks ``entry[0] is obj`` (the registry, the compile caches, the numba and
wrapper caches), or holds it for as long as the table lives (shadow memory, the callee
symbols of one compilation). These tests make the reuse happen deterministically: they store
a different object under the id of the one asked for (what a freed object leaves behind) and
check the answer is about the object asked for.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
from adgen.transforms import compile_cache, pipeline, tangent_pipeline
from adgen.transforms.tangent import CalleeJvp
from gradcheck import assert_grad_close, numerical_grad, numerical_jvp

import adgen
from adgen import runtime
from adgen.rules import refusals, registry


def squash(x):
    return np.tanh(x) * x


def loss(x):
    return np.sum(squash(x) ** 2)


def other(x):
    return np.sum(np.cos(x))


def _x():
    return np.array([0.4, -1.2, 0.9])


def test_registry_tables_check_the_object(monkeypatch):
    sin_rule = registry.lookup(np.sin)
    assert sin_rule is not None
    monkeypatch.setitem(registry._RULES, id(squash), sin_rule)
    assert registry.lookup(squash) is None
    # the compiler differentiates squash, not np.sin's rule found by its id
    assert_grad_close(adgen.grad(loss)(_x()), numerical_grad(loss, (_x(),), 0))

    ref = registry.all_references()[0]
    monkeypatch.setitem(registry._REFERENCES, id(squash), ref)
    monkeypatch.setitem(registry._REFERENCE_IMPLS, id(squash), ref)
    assert registry.reference_of(squash) is None
    assert not registry.is_reference_impl(squash)

    monkeypatch.setitem(refusals._REFUSED, id(squash), (np.unique, "a stranger's reason"))
    assert registry.refusal_of(squash) is None

    stand_in = registry.ufunc_method_of(np.maximum.accumulate)
    assert stand_in is not np.maximum.accumulate  # registered for np.maximum
    monkeypatch.setitem(registry._UFUNC_METHODS, (id(np.minimum), "accumulate"),
                        (np.maximum, stand_in))
    method = np.minimum.accumulate
    got = registry.ufunc_method_of(method)
    assert got is not stand_in

    planted = registry.jvp_of(registry.lookup(np.cos))
    monkeypatch.setitem(registry._JVPS, id(np.sin), (np.cos, planted))
    assert registry.jvp_of(sin_rule) is not planted


def test_compile_cache_checks_the_function(monkeypatch):
    compiled_other = pipeline.compile_function(other)
    key = compile_cache.compile_key(loss, "save")
    monkeypatch.setitem(compile_cache.COMPILED, key, (other, compiled_other))
    compiled = pipeline.compile_function(loss)
    assert compiled is not compiled_other and compiled.name == "loss"
    assert_grad_close(adgen.grad(loss)(_x()), numerical_grad(loss, (_x(),), 0))


def test_tangent_tables_check_the_function(monkeypatch):
    # a forward-mode compilation of another function left behind under squash's id (its
    # jvp for its one parameter, as loss's jvp asks for it; the key made after a first
    # compilation, which registers the runtime's jvps: a new registry generation)
    stranger = (other, tangent_pipeline.compile_tangent(other))
    monkeypatch.setitem(compile_cache.TANGENTS, compile_cache.tangent_key(squash, wrt=(0,)),
                        stranger)
    # ... and a stale "being compiled" entry (a callee found by id would be called with a
    # stranger's signature)
    monkeypatch.setitem(compile_cache.TANGENT_PROGRESS, id(squash),
                        (other, CalleeJvp("other", ["a_dot", "b_dot"], ["a", "b"])))
    v = np.array([0.3, 0.1, -0.5])
    _, tangent = adgen.jvp(loss, (_x(),), (v,))
    assert_grad_close(np.ravel(tangent), numerical_jvp(loss, (_x(),), (v,)))


def test_compile_cache_holds_its_functions():
    """An entry keeps its function alive, so its id is not handed to another one."""

    def make():
        def scaled(x):
            return np.sum(3.0 * x * x)

        return scaled

    f = make()
    adgen.grad(f)(_x())
    alive = weakref.ref(f)
    del f
    gc.collect()
    assert alive() is not None


def test_shadow_memory_holds_its_buffers():
    """ShadowMap's tables are keyed by the ids of root buffers and numbers; each entry holds
    its object, so a buffer freed during a pullback cannot lend its id to a new one."""
    sh = runtime.ShadowMap()
    a = np.ones(4)
    sh.of(a[1:])[...] += 2.0
    alive = weakref.ref(a)
    del a
    gc.collect()
    assert alive() is not None
    b = np.ones(4)  # may be allocated anywhere but where a still is
    assert sh.value(b) is None
