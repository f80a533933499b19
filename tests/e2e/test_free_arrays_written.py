"""A global or closure array written in place by the function differentiated: a scratch
buffer allocated once at module level (``WORK[:] = p``), a closure's work array, an array
attribute of a global object (``cfg.buf``), an array in a global dict (``BUFS["w"]``).

The effects analysis gave such names no buffer, so a write through them overwrote nothing
the pullback read and changed nothing another name saw: the gradient was silently wrong
under both policies (``WORK[1:] += WORK[:-1] ** 2`` read the new values; ``cfg.buf[:] = p``
gave a zero gradient, its reads taken for other arrays). Now they share one buffer: a value
the pullback reads and a later write overwrites is saved under "save" and refused under
"strict", as for a local array.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central

import adgen

P = np.array([0.2, -0.3, 0.4, 0.1])

WORK = np.empty(4)


def recurrence(p):
    WORK[:] = p
    WORK[1:] += WORK[:-1] ** 2  # reads the old WORK[:-1]: the gradient needs it
    return np.sum(WORK ** 2)


def sin_then_zero(p):
    WORK[:] = p
    y = np.sin(WORK)  # the gradient reads WORK ...
    WORK[:] = 0.0  # ... which this overwrites
    return np.sum(y) + np.sum(WORK)


def make_objective(n):
    work = np.empty(n)  # allocated once, reused by every call

    def objective(p):
        work[:] = p
        work[1:] += work[:-1] ** 2
        return np.sum(work ** 2)
    return objective


class Config:
    pass


cfg = Config()
cfg.buf = np.empty(4)


def through_attribute(p):
    cfg.buf[:] = p
    cfg.buf[1:] = cfg.buf[1:] * np.sin(cfg.buf[:-1])
    return np.sum(cfg.buf ** 2)


BUFS = {"w": np.empty(4)}


def through_dict(p):
    w = BUFS["w"]
    w[:] = p
    w *= w
    return np.sum(np.sin(w))


class Scratch:
    buf = np.empty(4)  # a class attribute, shared by every instance


def through_class_attribute(p):
    Scratch.buf[:] = p
    Scratch.buf[1:] += Scratch.buf[:-1] ** 2
    return np.sum(Scratch.buf ** 2)


CASES = {
    "class_attribute": lambda: through_class_attribute,
    "recurrence": lambda: recurrence,
    "sin_then_zero": lambda: sin_then_zero,
    "closure": lambda: make_objective(4),
    "attribute": lambda: through_attribute,
    "dict": lambda: through_dict,
}


@pytest.mark.parametrize("name", list(CASES))
def test_saved_gradient_against_central_differences(name):
    f = CASES[name]()
    g = adgen.grad(f, mutation="save")(P.copy())
    np.testing.assert_allclose(g, central(f, P.copy()), rtol=1e-6, atol=1e-8)
    # the value too, and the buffer's final contents are a plain call's
    value, _ = adgen.value_and_grad(f)(P.copy())
    after = _buffers()
    assert value == pytest.approx(f(P.copy()))
    for got, want in zip(after, _buffers()):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", list(CASES))
def test_strict_refuses_naming_the_write(name):
    f = CASES[name]()
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, mutation="strict")(P.copy())
    assert info.value.location is not None and info.value.location.file == __file__


def _buffers():
    return [WORK.copy(), cfg.buf.copy(), BUFS["w"].copy(), Scratch.buf.copy()]


def test_a_global_scratch_not_read_back_is_free():
    # nothing the gradient reads is overwritten: no copy, no guard, no refusal
    def fill(p):
        WORK[:] = 2.0 * p
        return np.sum(WORK ** 2)

    assert [s.decision for s in adgen.explain(fill, mutation="strict", file=None)] == ["free"]
    g = adgen.grad(fill, mutation="strict")(P.copy())
    np.testing.assert_allclose(g, 8.0 * P)


# Across a call: a helper that writes a global array in place, or reads one its caller
# wrote, was a silently wrong gradient (the caller's captures unguarded, the derivative lost
# at the call); refused at the call now, with the rewriting that adgen follows.


def reset():
    WORK[:] = 0.0


def callee_resets(p):
    WORK[:] = p
    y = np.sin(WORK)
    reset()
    return np.sum(y) + np.sum(WORK)


def fill_global(p):
    WORK[:] = p ** 2


def callee_fills(p):
    fill_global(p)
    return np.sum(np.sin(WORK))


def scratch(p):
    WORK[:] = p
    WORK[1:] += WORK[:-1] ** 2
    return np.sum(WORK ** 2)


def scratch_twice(p):
    return scratch(p) + scratch(2.0 * p)


def energy():
    return np.sum(WORK ** 2)


def callee_reads(p):
    WORK[:] = p
    return energy()


class Simulation:
    def fill(self, p):
        WORK[:] = p ** 2

    def loss(self, p):
        # through adgen's dispatch, refused when it runs; it was a plain call, its write
        # unseen (a zero gradient), and self.fill(p) was taken for ndarray.fill before that
        self.fill(p)
        return np.sum(np.sin(WORK))


def nested_fills(p):
    def fill(q):
        WORK[:] = q * 2.0

    fill(p)
    return np.sum(WORK ** 2)


def nested_reads(p):
    def energy_of_work():
        return np.sum(WORK ** 2)

    WORK[:] = p
    return energy_of_work()


REFUSED = {
    "nested_fills": (nested_fills, "fill writes"),
    "nested_reads": (nested_reads, "energy_of_work reads"),
    "callee_resets": (callee_resets, "reset writes"),
    "callee_fills": (callee_fills, "fill_global writes"),
    "scratch_twice": (scratch_twice, "scratch writes"),
    "callee_reads": (callee_reads, "energy reads"),
}


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("name", list(REFUSED))
def test_a_call_across_a_global_write_is_refused_at_the_call(name, mutation):
    f, what = REFUSED[name]
    with pytest.raises(adgen.UnsupportedError, match=what) as info:
        adgen.grad(f, mutation=mutation)(P.copy())
    assert info.value.location.file == __file__
    assert "as an argument" in info.value.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_method_writing_a_global_is_refused(mutation):
    with pytest.raises(adgen.UnsupportedError, match="fill writes a global"):
        adgen.grad(Simulation().loss, mutation=mutation)(P.copy())


def fill_argument(p, buf):
    buf[:] = p ** 2


def passes_the_buffer(p):
    fill_argument(p, WORK)  # the hint's rewriting: the helper writes its argument
    return np.sum(np.sin(WORK))


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_hint_passing_the_array_is_differentiated(mutation):
    g = adgen.grad(passes_the_buffer, mutation=mutation)(P.copy())
    np.testing.assert_allclose(g, central(passes_the_buffer, P.copy()), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, 2.0 * P * np.cos(P ** 2))


def test_forward_mode_refuses_at_the_write():
    # it raised NameError: name 'WORK_dot' is not defined, from the generated jvp code
    with pytest.raises(adgen.UnsupportedError, match="forward mode") as info:
        adgen.jvp(recurrence, (P.copy(),), (np.ones(4),))
    assert info.value.location.line == recurrence.__code__.co_firstlineno + 1
    # jacrev (reverse mode) differentiates it
    J = adgen.jacrev(recurrence)(P.copy())
    np.testing.assert_allclose(J, central(recurrence, P.copy()), rtol=1e-6, atol=1e-8)
