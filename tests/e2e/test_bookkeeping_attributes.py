"""Bookkeeping a user's loss does beside the value: ``self.calls += 1`` (a counter updated in a
method the loss calls) and ``self.history.append(loss)``, differentiated as written.

``self.calls += 1`` was refused when the method ran through a lambda, another function or a
method call on an argument ("writes an array of the object ... in place"): the compiler could
not tell an int attribute from an array one. It runs now when the attributes hold numbers at
the call (analyses.number_updates); an array attribute updated in place there was refused,
naming the user's line and the attribute, until session 29, when the call on an object of the
enclosing scope or a global one became the class's function's, whose write the caller follows.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central

import adgen

POLICIES = ("save", "strict")



X = np.array([0.3, -1.2, 2.0])


class Counted:
    def __init__(self, w):
        self.w = w
        self.calls = 0
        self.history = []

    def loss(self, x):
        self.calls += 1
        out = np.sum(np.tanh(self.w * x) ** 2)
        self.history.append(out)
        return out


@pytest.mark.parametrize("policy", POLICIES)
def test_a_counter_in_a_method_called_through_a_lambda(policy):
    m = Counted(np.array([0.5, 1.5, -0.7]))
    g = adgen.grad(lambda x: m.loss(x) * 2.0, mutation=policy)(X)
    ref = central(lambda v: Counted(m.w).loss(v) * 2.0, X)
    assert np.allclose(g, ref, atol=1e-6)
    # the gradient ran the user's code once, as a plain call does
    assert m.calls == 1 and len(m.history) == 1
    assert np.isclose(m.history[0], Counted(m.w).loss(X))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_counter_in_a_method_of_an_argument(policy):
    class Model:
        def __init__(self):
            self.w = np.array([1.0, -2.0, 0.5])
            self.n_evals = 0

        def predict(self, x):
            self.n_evals += 1
            return self.w @ x

    def loss(model, x):
        return model.predict(x) ** 2 + model.predict(2.0 * x)

    model = Model()
    gm, gx = adgen.grad(loss, argnums=(0, 1), mutation=policy)(model, X)
    w = model.w

    def plain_x(v):
        return loss(Model(), v)

    def plain_w(v):
        m = Model()
        m.w = v
        return loss(m, X)

    assert np.allclose(gx, central(plain_x, X), atol=1e-6)
    assert np.allclose(gm.w, central(plain_w, w), atol=1e-6)
    assert model.n_evals == 2


@pytest.mark.parametrize("policy", POLICIES)
def test_counters_in_a_loop_of_calls_from_a_module_level_loss(policy):
    class Stepper:
        def __init__(self):
            self.steps = 0
            self.dt = 0.1
            self.elapsed = 0.0

        def step(self, u):
            self.steps += 1
            self.elapsed += self.dt  # a float attribute, updated beside the value
            return u + self.dt * np.sin(u)

    st = Stepper()

    def energy(u):
        for _ in range(4):
            u = st.step(u)
        return np.sum(u ** 2)

    g = adgen.grad(energy, mutation=policy)(X)

    def plain(v):
        s = Stepper()
        for _ in range(4):
            v = s.step(v)
        return np.sum(v ** 2)

    assert np.allclose(g, central(plain, X), atol=1e-6)
    assert st.steps == 4 and np.isclose(st.elapsed, 0.4)


def test_a_counter_in_forward_mode():
    m = Counted(np.array([0.5, 1.5, -0.7]))
    t = np.array([1.0, 0.5, -2.0])
    out, out_dot = adgen.jvp(lambda x: m.loss(x), (X,), (t,))
    ref = central(lambda s: Counted(m.w).loss(X + s * t), 0.0)
    assert np.isclose(out, Counted(m.w).loss(X)) and np.isclose(out_dot, ref, atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_an_array_attribute_added_to_in_place_through_a_method_call(policy):
    # refused at the line until session 29 ("self.buf += v ... where adgen cannot follow the
    # write"); the object of the enclosing scope holds an array there: the call is the
    # class's function's (bound_callees), whose write the caller follows
    class Acc:
        def __init__(self):
            self.buf = np.zeros(3)

        def add(self, v):
            self.buf += v  # an array: written in place
            return np.sum(self.buf ** 2)

    acc = Acc()
    acc.buf[:] = [0.5, -1.0, 0.25]
    before = acc.buf.copy()
    g = adgen.grad(lambda x: acc.add(x), mutation=policy)(X)
    np.testing.assert_allclose(g, 2 * (before + X), rtol=1e-12)  # d/dx sum((b + x) ** 2)
    np.testing.assert_allclose(acc.buf, before + X, rtol=1e-12)  # as the plain call leaves it


def test_a_counter_updated_after_a_method_that_may_rebind_it():
    # self.reset() runs before the update: it could bind self.calls to an argument's array,
    # which += would write in place. Called on a global or closure object (o.loss(x)), the
    # call is the class's function's (bound_callees), whose writes the caller follows, what
    # ever the attribute holds; called through a variable adgen does not guess: refused
    class Odd:
        def __init__(self):
            self.calls = 0

        def reset(self):
            pass

        def loss(self, x):
            self.reset()
            self.calls += 1
            return np.sum(x ** 2)

    o = Odd()
    assert np.allclose(adgen.grad(lambda x: o.loss(x))(X), 2 * X)
    assert o.calls == 1

    def through_a_variable(x):
        f = o.loss
        return f(x)

    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(through_a_variable)(X)
    assert "in place" in str(info.value)
    # called directly, the method's own compilation follows the write
    assert np.allclose(adgen.grad(o.loss)(X), 2 * X)


def test_a_counter_rebound_to_the_argument_before_its_update():
    # reset(v) binds self.calls to the array argument: += then writes x in place (as the
    # plain call does), loss = sum((x + 1) ** 2)
    class Rebinds:
        def __init__(self):
            self.calls = 0

        def reset(self, v):
            self.calls = v

        def loss(self, x):
            self.reset(x)
            self.calls += 1
            return np.sum(x ** 2)

    o = Rebinds()

    def f(x):
        y = 2.0 * x
        return o.loss(y) + np.sum(y * x)

    assert np.allclose(adgen.grad(f)(X.copy()), central(f, X.copy()), atol=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_counter_before_a_method_call_of_self_after_it(policy):
    class Fit:
        def __init__(self):
            self.calls = 0
            self.y = np.array([1.0, 0.0, -1.0])

        def predict(self, x):
            return np.tanh(x)

        def loss(self, x):
            self.calls += 1
            return np.sum((self.predict(x) - self.y) ** 2)

    f = Fit()
    g = adgen.grad(lambda x: f.loss(x), mutation=policy)(X)
    assert np.allclose(g, central(lambda v: Fit().loss(v), X), atol=1e-6)
    assert f.calls == 1


def test_an_attribute_written_in_place_is_named_in_the_hints():
    class Doubler:
        def __init__(self):
            self.w = np.ones(3)

        def loss(self, x):
            y = self.w * x
            self.w *= 2  # overwrites what the gradient of the line above reads
            return np.sum(y)

    # strict: the copy to make is of the attribute (it said 'self = self.copy()')
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(Doubler().loss, mutation="strict")(X)
    assert "self.w = self.w.copy()" in info.value.hint
    # through a lambda (refused until session 29, with the out-of-place form as its hint):
    # the object's method followed as called on it, the same copy named under strict
    d = Doubler()
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(lambda x: d.loss(x), mutation="strict")(X)
    assert "self.w = self.w.copy()" in info.value.hint
    np.testing.assert_allclose(adgen.grad(lambda x: d.loss(x))(X), np.ones(3), rtol=1e-12)
    np.testing.assert_allclose(d.w, 2 * np.ones(3))


@pytest.mark.parametrize("policy", POLICIES)
def test_a_counter_in_a_loop_with_a_method_call(policy):
    # self.step may run before the next update and rebind self.calls (Rebinding: to the
    # array it is given, which += then writes in place as the plain call does). Called on a
    # parameter or on an object of the enclosing scope, the call is the class's function's
    # (bound_callees), whose writes the caller follows; until session 19 the call was left to
    # the dispatch, which refused it ('cannot tell that it holds a number')
    class Sim:
        def __init__(self):
            self.calls = 0

        def step(self, u):
            return np.sin(u)

        def run(self, u):
            for _ in range(3):
                self.calls += 1
                u = self.step(u)
            return np.sum(u)

        def run_assigned(self, u):
            for _ in range(3):
                self.calls = self.calls + 1
                u = self.step(u)
            return np.sum(u)

    class Rebinding(Sim):
        def step(self, u):
            self.calls = u
            return np.sin(u)

    s = Sim()
    expected = central(lambda u: Sim().run(u), X)
    assert np.allclose(adgen.grad(lambda u, sim: sim.run(u), mutation=policy)(X, Sim()),
                       expected, atol=1e-6)
    assert np.allclose(adgen.grad(lambda u: s.run(u), mutation=policy)(X), expected,
                       atol=1e-6)
    assert s.calls == 3
    g = adgen.grad(lambda u: s.run_assigned(u), mutation=policy)(X)
    assert np.allclose(g, central(lambda u: Sim().run_assigned(u), X), atol=1e-6)
    r = Rebinding()
    if policy == "save":
        got = adgen.grad(lambda u: r.run(u))(X.copy())
        assert np.allclose(got, central(lambda u: Rebinding().run(u), X.copy()), atol=1e-6)
    else:  # += writes the array the previous step's sin reads
        with pytest.raises(adgen.MutationError, match=r"self\.calls \+= 1 overwrites"):
            adgen.grad(lambda u: r.run(u), mutation="strict")(X.copy())


def test_explain_and_source_of_a_method_with_example_arguments():
    # explain(model.loss, x) ran the compiled forward without the object (TypeError:
    # missing 'w'); source(model.loss, x) specialised to x as if it were self
    class Sq:
        def __init__(self):
            self.calls = 0

        def loss(self, x):
            self.calls += 1
            y = x * x
            x[0] = 0.0  # overwrites what the gradient of y reads
            return np.sum(y)

    s = Sq()
    sites = adgen.explain(s.loss, X.copy(), file=None)
    decisions = {site.construct: site for site in sites}
    assert decisions["x[0] = 0.0"].decision == "guarded-save"
    assert decisions["x[0] = 0.0"].bytes_saved > 0
    assert s.calls == 1  # the example ran once
    assert "def loss_forward(self, x)" in str(adgen.source(s.loss, X.copy()))


def test_second_derivatives_of_a_counting_method():
    # the method itself: differentiated (they were refused, naming the generated tangent
    # code: 'self_dot.calls = t1_1_dot changes self_dot')
    m = Counted(np.array([0.5, 1.5, -0.7]))
    g = adgen.grad(m.loss)
    expected = np.array([central(lambda s: g(X + s * e), 0.0) for e in np.eye(X.size)]).T
    assert np.allclose(adgen.hessian(m.loss)(X), expected, atol=1e-6)
    assert np.allclose(adgen.hvp(m.loss)(X, np.ones(3)), expected @ np.ones(3), atol=1e-6)
    assert np.allclose(adgen.jacrev(adgen.grad(m.loss))(X), expected, atol=1e-6)
    # called from another function (a lambda): refused, in the user's terms (the pullback
    # of such a call gets no cotangent for what the method sets on its object)
    for take in (lambda: adgen.hessian(lambda x: m.loss(x))(X),
                 lambda: adgen.hvp(lambda x: m.loss(x))(X, np.ones(3)),
                 lambda: adgen.jacrev(adgen.grad(lambda x: m.loss(x)))(X)):
        with pytest.raises(adgen.UnsupportedError) as info:
            take()
        text = str(info.value)
        assert "_dot" not in text and "second derivatives" in text
        assert "Counted.loss" in text and info.value.location.file == __file__


def test_a_counter_property_is_not_run_by_the_check():
    class Counted2:
        def __init__(self):
            self._calls = 0
            self.reads = 0

        @property
        def calls(self):
            self.reads += 1
            return self._calls

        @calls.setter
        def calls(self, v):
            self._calls = v

        def loss(self, x):
            self.calls += 1
            return np.sum(x ** 2)

    c = Counted2()
    with pytest.raises(adgen.UnsupportedError):
        adgen.grad(lambda x: c.loss(x))(X)
    assert c.reads == 0  # adgen's check read no property (the refusal came before the call)
