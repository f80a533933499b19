"""Gradients from many threads at once, and gradient functions sent to other processes.

Threads: each thread's forward passes keep their captures in a guard scope of their own
(``adgen.guards._THREAD``), and compilation runs one at a time, so a caller compiled in one
thread never sees a callee half-built in another. A switch interval of a microsecond makes
the threads interleave inside a forward pass; every result is compared with its gradient
written out by hand (tests/parallel_functions.py), which test_hand_gradients checks against
central differences.

Processes: ``adgen.grad(f)`` pickles as a reference to ``f`` (rebuilt in the worker), so it
runs under ``ProcessPoolExecutor`` with the spawn start method.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import pickle
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import parallel_functions as pf
import pytest
from adgen.transforms import pipeline
from gradcheck import numerical_grad

import adgen

# (function, its gradient by hand)
GUARDED = [(pf.guarded_fill, pf.guarded_fill_grad), (pf.guarded_shift, pf.guarded_shift_grad)]
CALLERS = [(pf.calls_scale, pf.calls_scale_grad),
           (pf.calls_scale_twice, pf.calls_scale_twice_grad),
           (pf.calls_series, pf.calls_series_grad)]
THREADS = 8


@contextlib.contextmanager
def tiny_switch_interval() -> Iterator[None]:
    """Threads switch every microsecond (the default is 5 ms): races show up in a few calls."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _inputs(n: int, size: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [rng.normal(size=size) for _ in range(n)]


@pytest.mark.parametrize(("f", "hand"), GUARDED + CALLERS, ids=lambda v: v.__name__)
def test_hand_gradients(f, hand) -> None:
    """The hand-written gradients the thread tests compare with are right."""
    x = _inputs(1)[0]
    np.testing.assert_allclose(numerical_grad(f, [x], 0), hand(x), rtol=1e-5, atol=1e-6)


def test_threads_guarded_writes() -> None:
    """8 threads call gradients whose forward passes capture values and guard writes."""
    cases = GUARDED + CALLERS
    grads = [adgen.grad(f) for f, _ in cases]
    xs = _inputs(600)

    def work(i: int) -> tuple[int, np.ndarray, np.ndarray]:
        x = xs[i].copy()
        return i, grads[i % len(cases)](x), x

    with tiny_switch_interval(), ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(work, range(len(xs))))
    wrong = []
    for i, g, x_after in results:
        f, hand = cases[i % len(cases)]
        if not np.allclose(g, hand(xs[i]), rtol=1e-10, atol=1e-12):
            wrong.append((f.__name__, i))
        x_plain = xs[i].copy()
        f(x_plain)  # the argument ends as a plain call leaves it
        if not np.array_equal(x_after, x_plain):
            wrong.append((f.__name__, i, "argument"))
    assert not wrong, f"{len(wrong)} wrong results of {len(results)}: {wrong[:5]}"


def test_threads_strict() -> None:
    """Under strict, threads whose pass raises MutationError (guarded_fill) run next to
    threads whose pass captures values and must not be disturbed (calls_series)."""
    raising = adgen.grad(pf.guarded_fill, mutation="strict")
    clean = adgen.grad(pf.calls_series, mutation="strict")
    xs = _inputs(600)

    def work(i: int) -> bool:
        if i % 2:
            with pytest.raises(adgen.MutationError, match="x.fill"):
                raising(xs[i].copy())
            return True
        return np.allclose(clean(xs[i]), pf.calls_series_grad(xs[i]), rtol=1e-10)

    with tiny_switch_interval(), ThreadPoolExecutor(THREADS) as pool:
        assert all(pool.map(work, range(len(xs))))


def test_threads_vjp_and_value_and_grad() -> None:
    """vjp pullbacks and value_and_grad, called from many threads."""
    xs = _inputs(300)
    vg = adgen.value_and_grad(pf.guarded_shift)

    def work(i: int) -> tuple[bool, bool]:
        x = xs[i]
        value, g = vg(x.copy())
        out, pullback = adgen.vjp(pf.guarded_fill, x.copy())
        (ct,) = pullback(2.0)
        return (np.isclose(value, pf.guarded_shift(x.copy())) and
                np.allclose(g, pf.guarded_shift_grad(x)),
                np.isclose(out, np.sum(x * x)) and np.allclose(ct, 4.0 * x))

    with tiny_switch_interval(), ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(work, range(len(xs))))
    assert all(a and b for a, b in results)


def test_threads_explain_measures_its_own_pass() -> None:
    """explain's bytes_saved counts the guard copies of its own forward pass only, while
    other threads run guarded passes too: x.fill saves a copy of x, 8 bytes per element."""
    g = adgen.grad(pf.guarded_fill)
    stop = threading.Event()

    def noise() -> None:
        while not stop.is_set():
            g(np.ones(50))

    with tiny_switch_interval():
        others = [threading.Thread(target=noise) for _ in range(4)]
        for t in others:
            t.start()
        try:
            for size in (3, 7, 11) * 5:
                sites = adgen.explain(pf.guarded_fill, np.ones(size), file=None)
                fill = [s for s in sites if "fill" in s.construct]
                assert [s.bytes_saved for s in fill] == [8 * size]
        finally:
            stop.set()
            for t in others:
                t.join()


def test_concurrent_compilation() -> None:
    """Callers of one mutating callee (and of a recursive one) compiled from several threads
    at once: none may be compiled against the callee's half-built placeholder, then or in
    later calls served from the cache."""
    x = _inputs(1)[0]
    with tiny_switch_interval():
        for _ in range(6):
            pipeline.clear_cache()
            start = threading.Barrier(THREADS)

            def work(k: int) -> tuple[int, np.ndarray]:
                f, _ = CALLERS[k % len(CALLERS)]
                start.wait()  # every thread compiles at the same moment
                return k, adgen.grad(f)(x.copy())

            with ThreadPoolExecutor(THREADS) as pool:
                results = list(pool.map(work, range(THREADS)))
            for k, g in results:
                f, hand = CALLERS[k % len(CALLERS)]
                np.testing.assert_allclose(g, hand(x), rtol=1e-10, err_msg=f.__name__)
    for f, hand in CALLERS:  # the cached compilations, single-threaded
        np.testing.assert_allclose(adgen.grad(f)(x.copy()), hand(x), rtol=1e-10)


def _spawn_pool() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))


def test_gradient_functions_pickle_with_their_options() -> None:
    """A pickled gradient is grad(f, ...) built again, with the same options."""
    rng = np.random.default_rng(3)
    w, x = rng.normal(size=3), rng.normal(size=(4, 3))
    vg = adgen.value_and_grad(pf.aux_loss, argnums=(0, 1), mutation="strict", has_aux=True)
    copy_ = pickle.loads(pickle.dumps(vg))
    assert copy_ is not vg and copy_.__name__ == "aux_loss"
    (value, aux), (gw, gx) = copy_(w, x)
    r = x @ w  # sum(r ** 2): d/dw = 2 x^T r, d/dx = 2 r w^T
    np.testing.assert_allclose(aux, r)
    np.testing.assert_allclose(value, np.sum(r ** 2))
    np.testing.assert_allclose(gw, 2.0 * x.T @ r)
    np.testing.assert_allclose(gx, 2.0 * np.outer(r, w))
    strict = pickle.loads(pickle.dumps(adgen.grad(pf.guarded_fill, mutation="strict")))
    with pytest.raises(adgen.MutationError, match="x.fill"):
        strict(np.ones(3))
    g = pickle.loads(pickle.dumps(adgen.grad(pf.guarded_shift), protocol=2))
    np.testing.assert_allclose(g(w.copy()), pf.guarded_shift_grad(w))


def test_gradient_of_a_local_function_does_not_pickle() -> None:
    """Pickling is by reference: a function defined inside another has no name to find."""
    def local(x):
        return np.sum(x * x)

    with pytest.raises((pickle.PicklingError, AttributeError), match="local"):
        pickle.dumps(adgen.grad(local))


def test_process_pool_spawn() -> None:
    """Gradients computed in worker processes started with spawn (a fresh interpreter
    that imports adgen and the function's module)."""
    xs = _inputs(6)
    with _spawn_pool() as pool:
        grads = list(pool.map(adgen.grad(pf.guarded_fill), [x.copy() for x in xs]))
        pairs = list(pool.map(adgen.value_and_grad(pf.calls_series), xs))
        strict = pool.submit(adgen.grad(pf.guarded_fill, mutation="strict"), xs[0].copy())
        with pytest.raises(adgen.MutationError, match="x.fill"):
            strict.result()
    for x, g in zip(xs, grads):
        np.testing.assert_allclose(g, pf.guarded_fill_grad(x), rtol=1e-12)
    for x, (value, g) in zip(xs, pairs):
        np.testing.assert_allclose(value, pf.calls_series(x), rtol=1e-12)
        np.testing.assert_allclose(g, pf.calls_series_grad(x), rtol=1e-10)
