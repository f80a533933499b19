"""A method that writes its array argument (or an array of its object) in place, called on
``self``, on a global object, or through ``super()``.

A model's time step written as a method (``self.step(u, dt)`` doing ``u += dt * ...``) was
refused when the gradient ran ("writes an array argument ... and is called through a
variable, a method or a closure"): only a module-level function called by its name was
followed. Where the class of the object is known when adgen compiles the call (``self`` of a
method adgen compiles for its receiver's class, a global object), the call is now the call
of the class's function with the object first, which adgen follows like ``step(u, dt)``
(transforms/bound_callees.py). The resolution is checked at every call: a subclass
overriding ``step``, ``Model.step`` rebound, and ``m.step`` set on the object itself run
their own code. Gradients against central differences under both policies, forward mode and
the Hessian against central differences of the gradient.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import numerical_grad, numerical_jvp

import adgen

POLICIES = ["save", "strict"]


def laplace(u, out):
    out[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    out[0] = out[-1] = 0.0
    return out


class Heat:
    """A user's model: ``step`` writes ``u`` in place, ``loss`` runs it through ``self``."""

    def __init__(self, k):
        self.k = k

    def rhs(self, u):
        return np.sin(laplace(u, np.empty_like(u)))

    def step(self, u, dt):
        u += dt * self.k * self.rhs(u)

    def loss(self, u0):
        u = u0.copy()
        for _ in range(4):
            self.step(u, 0.1)
        return np.sum(u ** 2)


class ScratchHeat(Heat):
    """The time step of /tmp/p16/sim.py: a scratch array of the object written by a helper."""

    def __init__(self, k, n):
        super().__init__(k)
        self.lap = np.zeros(n)

    def step(self, u, dt):
        laplace(u, out=self.lap)
        u += dt * self.k * self.lap
        return u


class FreshScratchHeat(Heat):
    """ScratchHeat with strict's hint applied: ``self.lap`` is given a new array each step,
    not written in place (the values computed are the same)."""

    def __init__(self, k, n):
        super().__init__(k)
        self.lap = np.zeros(n)

    def step(self, u, dt):
        self.lap = laplace(u, out=np.empty_like(self.lap))
        u += dt * self.k * self.lap
        return u


class Damped(Heat):
    """A subclass overriding ``step``; ``super().step`` runs the parent's."""

    def step(self, u, dt):
        super().step(u, dt)
        u *= 0.9


class Relax(Heat):
    """A step that calls no other method (the Hessian below: a method calling a method of
    its object inside a step is refused there, see test_hessian_through_a_nested_method)."""

    def step(self, u, dt):
        u += dt * self.k * np.sin(laplace(u, np.empty_like(u)))


HEAT = Heat(0.7)
RELAX = Relax(0.7)
SCRATCH = ScratchHeat(0.7, 6)
DAMPED = Damped(0.7)


def through_a_global_model(u0):
    return HEAT.loss(u0)


def scratch_model(u0):
    return SCRATCH.loss(u0)


def damped_model(u0):
    return DAMPED.loss(u0)


def global_objects_step(u):
    # the step of a global object, on the argument itself: its final contents are a plain
    # call's, and the gradient is of the function of the argument's initial values
    HEAT.step(u, 0.2)
    HEAT.step(u, 0.2)
    return np.sum(u ** 3)


def relax_model(u0):
    return RELAX.loss(u0)


def loss_of(model, u0):
    return model.loss(u0)


def through_a_function(u0):
    return loss_of(HEAT, u0)  # model.loss runs through the dispatch, self.step is followed


U0 = np.linspace(0.1, 1.2, 6) ** 2


def _check(f, mutation, x=U0):
    g = adgen.grad(f, mutation=mutation)(x.copy())
    np.testing.assert_allclose(g, numerical_grad(f, (x.copy(),), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f, mutation", [
    (f, mutation) for f in [through_a_global_model, scratch_model, damped_model,
                            through_a_function] for mutation in POLICIES
    # strict refuses the scratch array: test_a_scratch_array_of_the_object_under_strict
    if (f, mutation) != (scratch_model, "strict")],
    ids=lambda v: {through_a_global_model: "self.step", scratch_model: "self.lap scratch",
                   damped_model: "super().step", through_a_function: "model arg"}.get(v, v))
def test_a_method_writing_its_argument_gets_the_gradient(f, mutation):
    _check(f, mutation)


def line_of(f, text):
    """The line of ``f``'s source in this file that holds ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


def test_a_scratch_array_of_the_object_under_strict():
    # each step's laplace(u, out=self.lap) overwrites self.lap, which the step before read
    # (u += dt * self.k * self.lap: its gradient in self.k reads it): "strict" copies
    # nothing behind the user's back, and refuses at the call that hands self over
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(scratch_model, mutation="strict")(U0.copy())
    err = info.value
    call = line_of(Heat.loss, "self.step(u, 0.1)")
    write = line_of(ScratchHeat.step, "laplace(u, out=self.lap)")
    read = line_of(ScratchHeat.step, "u += dt * self.k * self.lap")
    assert (err.location.file, err.location.line) == (__file__, call)
    assert (err.inner[0].file, err.inner[0].line) == (__file__, write)
    assert (err.captured_at.file, err.captured_at.line) == (__file__, read)
    assert f"hands self.lap to self.step, which overwrites it in place at line {write} " \
        "(laplace(u, out=self.lap))" in err.message
    assert f"give self.lap a new array at line {write}" in err.hint


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_scratch_hint_applied_runs_under_strict(mutation):
    model = FreshScratchHeat(0.7, 6)
    value, got = adgen.value_and_grad(model.loss, mutation=mutation)(U0.copy())
    assert value == pytest.approx(scratch_model(U0.copy()))  # computes what it did
    np.testing.assert_allclose(got, numerical_grad(scratch_model, (U0.copy(),), 0),
                               rtol=1e-6, atol=1e-7)


def test_a_global_objects_method_writing_the_argument():
    _check(global_objects_step, "save")
    u, plain = U0.copy(), U0.copy()
    adgen.grad(global_objects_step)(u)
    global_objects_step(plain)
    np.testing.assert_allclose(u, plain)  # the argument's final contents: a plain call's


def test_a_global_objects_method_overwriting_what_a_gradient_reads_under_strict():
    # the second step overwrites u, which the first step's gradient reads (sin of it)
    with pytest.raises(adgen.MutationError, match=r"HEAT.step\(u, 0.2\) overwrites u") as err:
        adgen.grad(global_objects_step, mutation="strict")(U0.copy())
    assert err.value.location.file == __file__
    assert "pass HEAT.step a copy" in str(err.value)


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_subclass_overriding_the_method_runs_its_own(mutation):
    class Explicit(Heat):
        def step(self, u, dt):
            u -= dt * self.k * u ** 2

    model = Explicit(0.3)
    f = lambda u0: model.loss(u0)  # noqa: E731
    if mutation == "strict":
        # u -= ... * u ** 2 overwrites the u that u ** 2's gradient reads: strict copies
        # nothing, so it refuses, as grad(Explicit.step, mutation="strict") does (the method
        # compiled under "save" through model.loss's dispatch and copied, until session 20)
        with pytest.raises(adgen.MutationError, match=r"u -= dt \* self.k \* u \*\* 2 "
                                                      "overwrites u"):
            adgen.grad(f, mutation=mutation)(U0.copy())
    else:
        _check(f, mutation)
    _check(through_a_global_model, mutation)  # the parent's code is not the subclass's


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_rebound_on_the_class_after_a_gradient(mutation):
    class Local(Heat):
        pass

    model = Local(0.5)
    f = lambda u0: model.loss(u0)  # noqa: E731
    _check(f, mutation)

    def cubic_step(self, u, dt):
        u += dt * u ** 3

    Local.step = cubic_step
    try:
        if mutation == "strict":
            # not the code compiled for Heat.step: u += dt * u ** 3 overwrites the u that
            # u ** 3's gradient reads, which strict refuses (it copied until session 20)
            with pytest.raises(adgen.MutationError, match=r"u \+= dt \* u \*\* 3 overwrites u"):
                adgen.grad(f, mutation=mutation)(U0.copy())
        else:
            _check(f, mutation)  # not the code compiled for Heat.step
    finally:
        del Local.step


@pytest.mark.parametrize("mutation", POLICIES)
def test_a_method_set_on_the_object_itself(mutation):
    model = Heat(0.5)
    f = lambda u0: model.loss(u0)  # noqa: E731
    _check(f, mutation)
    # a function of the object's own that returns a new array and writes nothing
    model.step = lambda u, dt: u * 2.0
    _check(f, mutation)
    # ... one that writes the argument: run as Python finds it, refused at the call
    model.step = lambda u, dt: np.multiply(u, 2.0, out=u)
    with pytest.raises(adgen.UnsupportedError, match="writes an array argument"):
        adgen.grad(f, mutation=mutation)(U0.copy())
    del model.step
    _check(f, mutation)


def test_forward_mode_of_a_method_writing_its_argument():
    v = np.linspace(-1.0, 1.0, 6)
    for f in (through_a_global_model, scratch_model, damped_model):
        out, tangent = adgen.jvp(f, (U0.copy(),), (v,))
        np.testing.assert_allclose(out, f(U0.copy()))
        np.testing.assert_allclose(tangent, numerical_jvp(f, (U0.copy(),), (v,)),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_of_a_method_writing_its_argument(mutation):
    f = relax_model
    h = adgen.hessian(f, mutation=mutation)(U0.copy())
    g = adgen.grad(f, mutation=mutation)
    rows = [numerical_grad(lambda x, k=k: g(x.copy())[k], (U0.copy(),), 0)
            for k in range(U0.size)]
    np.testing.assert_allclose(h, np.array(rows), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_hessian_through_a_nested_method(mutation):
    # Heat.step calls self.rhs, a method of its object: reverse mode over its jvp code took
    # the bound method self.rhs for an array and refused it at the user's line, until
    # session 28 (call_jvp's function gets no adjoint: reverse_calls.rev_rrule)
    f = through_a_global_model
    h = adgen.hessian(f, mutation=mutation)(U0.copy())
    g = adgen.grad(f, mutation=mutation)
    rows = [numerical_grad(lambda x, k=k: g(x.copy())[k], (U0.copy(),), 0)
            for k in range(U0.size)]
    np.testing.assert_allclose(h, np.array(rows), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mutation", POLICIES)
def test_the_method_itself_given_to_grad(mutation):
    # grad(model.loss): compiled for this object (arguments.split_receiver); was refused at
    # self.step(u, 0.1). (Under "strict" ScratchHeat's scratch array is refused:
    # test_a_scratch_array_of_the_object_under_strict; its hint applied here)
    model = ScratchHeat(0.7, 6) if mutation == "save" else FreshScratchHeat(0.7, 6)
    g = adgen.grad(model.loss, mutation=mutation)
    np.testing.assert_allclose(g(U0.copy()), numerical_grad(model.loss, (U0.copy(),), 0),
                               rtol=1e-6, atol=1e-7)
    value, _ = adgen.value_and_grad(model.loss, mutation=mutation)(U0.copy())
    np.testing.assert_allclose(value, model.loss(U0.copy()))
    # a step set on the object after the gradient was made runs (refused where it writes)
    model.step = lambda u, dt: u * 2.0
    np.testing.assert_allclose(g(U0.copy()), numerical_grad(model.loss, (U0.copy(),), 0),
                               rtol=1e-6, atol=1e-7)
    model.step = lambda u, dt: np.multiply(u, 2.0, out=u)
    with pytest.raises(adgen.UnsupportedError, match="writes an array argument"):
        g(U0.copy())
    del model.step
    np.testing.assert_allclose(g(U0.copy()), numerical_grad(model.loss, (U0.copy(),), 0),
                               rtol=1e-6, atol=1e-7)


def test_forward_mode_of_the_method_itself():
    model = ScratchHeat(0.7, 6)
    v = np.linspace(-1.0, 1.0, 6)
    _, tangent = adgen.jvp(model.loss, (U0.copy(),), (v,))
    np.testing.assert_allclose(tangent, numerical_jvp(model.loss, (U0.copy(),), (v,)),
                               rtol=1e-6, atol=1e-7)
