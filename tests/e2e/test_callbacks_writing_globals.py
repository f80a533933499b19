"""A function passed in (or held in a container) and called where adgen runs it as it is,
that writes in place an array the call does not pass it: a global scratch array
(``def fill(): WORK[1:] *= 3`` called as ``cb()``), its object's buffer (a bound method
writing ``self.buf``), a partial's argument, an ndarray's own method (``WORK.fill``).

adgen ran such a call as it is and did not see the write: the gradient was silently wrong
under both policies ([2, 12, 18, 24] where central differences give [2, 36, 54, 72]). Now the
forward calls the callee through ``checked_callable``, which refuses it at the call, naming
the callee and the write; a callback that writes nothing (or only its own arrays, a list, a
print) runs as before, and passing the array to a function called by its name is right.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import numerical_grad

import adgen

WORK = np.zeros(4)
LOG: list[float] = []
CB = {}
X = np.array([1.0, 2.0, 3.0, 4.0])
POLICIES = ["save", "strict"]


@pytest.fixture(autouse=True)
def _fresh():
    WORK[:] = 0.0
    LOG.clear()
    yield
    WORK[:] = 0.0


def fill():
    WORK[:] = 2.0


def triple_tail():
    WORK[1:] *= 3


def scale_tail(k):
    WORK[1:] *= k


def fill_by_helper():
    fill()


class Buffer:
    def __init__(self):
        self.buf = WORK

    def triple(self):
        self.buf[1:] *= 3

    def __call__(self):
        self.buf[1:] *= 3


def uses_callback(x, cb):
    WORK[:] = x
    cb()
    return np.sum(WORK ** 2)


def uses_callback_with_constant(x, cb):
    WORK[:] = x
    cb(3.0)
    return np.sum(WORK ** 2)


def uses_global_dict(x):
    WORK[:] = x
    CB["cb"]()
    return np.sum(WORK ** 2)


def uses_each(x, cbs):
    WORK[:] = x
    for c in cbs:
        c()
    return np.sum(WORK ** 2)


def run(cb):
    cb()


def uses_runner(x, cb):
    WORK[:] = x
    run(cb)
    return np.sum(WORK ** 2)


def _callbacks():
    b = Buffer()
    return {
        "function": fill,
        "update": triple_tail,
        "lambda-method": lambda: WORK.fill(2.0),
        "lambda-out": lambda: np.multiply(WORK, 3.0, out=WORK),
        "bound-method": b.triple,
        "callable-object": b,
        "partial": functools.partial(scale_tail, 3.0),
        "array-method": WORK.sort,
        "partial-of-array-method": functools.partial(WORK.fill, 2.0),
        "partial-of-copyto": functools.partial(np.copyto, WORK, 2.0),
        "helper-calling-writer": fill_by_helper,
    }


def _refused(call, *names):
    with pytest.raises(adgen.UnsupportedError) as info:
        call()
    text = str(info.value)
    assert "as it is" in text and "test_callbacks_writing_globals.py" in text, text
    for n in names:
        assert n in text, text
    return text


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", list(_callbacks()))
def test_callback_writing_an_array_it_is_not_passed_is_refused(name, policy):
    cb = _callbacks()[name]
    x = X[::-1].copy() if name == "array-method" else X.copy()
    if name == "callable-object":
        # an argument holding WORK, which the function writes: refused as an argument that
        # shares a global's memory (aliased_globals) before the callback runs
        with pytest.raises(adgen.MutationError, match="argument 1 \\(cb\\) shares memory"):
            adgen.grad(uses_callback, mutation=policy)(x, cb)
        CB["cb"] = cb  # held where no argument holds it: refused at the call
        _refused(lambda: adgen.grad(uses_global_dict, mutation=policy)(X.copy()), "Buffer")
        return
    _refused(lambda: adgen.grad(uses_callback, mutation=policy)(x, cb))


@pytest.mark.parametrize("policy", POLICIES)
def test_the_refusal_names_the_callee_the_write_and_the_call(policy):
    text = _refused(lambda: adgen.grad(uses_callback, mutation=policy)(X.copy(), triple_tail),
                    "triple_tail", "WORK[1:] *= 3", "cb()", "fill(WORK)")
    line = uses_callback.__code__.co_firstlineno + 2
    assert f"test_callbacks_writing_globals.py:{line}" in text


@pytest.mark.parametrize("policy", POLICIES)
def test_callback_given_a_constant(policy):
    _refused(lambda: adgen.grad(uses_callback_with_constant, mutation=policy)(X.copy(),
                                                                              scale_tail),
             "scale_tail")


@pytest.mark.parametrize("policy", POLICIES)
def test_callback_in_a_global_dict(policy):
    CB["cb"] = triple_tail
    _refused(lambda: adgen.grad(uses_global_dict, mutation=policy)(X.copy()), "triple_tail")


@pytest.mark.parametrize("policy", POLICIES)
def test_list_of_callbacks(policy):
    _refused(lambda: adgen.grad(uses_each, mutation=policy)(X.copy(), [triple_tail]),
             "triple_tail")


@pytest.mark.parametrize("policy", POLICIES)
def test_callback_called_by_a_helper(policy):
    _refused(lambda: adgen.grad(uses_runner, mutation=policy)(X.copy(), triple_tail),
             "triple_tail")


@pytest.mark.parametrize("policy", POLICIES)
def test_vjp_and_value_and_grad(policy):
    _refused(lambda: adgen.vjp(uses_callback, X.copy(), triple_tail, mutation=policy))
    _refused(lambda: adgen.value_and_grad(uses_callback, mutation=policy)(X.copy(),
                                                                          triple_tail))


def log_only():
    LOG.append(1.0)


def own_scratch():
    t = np.zeros(3)
    t[0] = 1.0
    return t


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("cb", [log_only, own_scratch, lambda: None, print,
                                functools.partial(np.sum, X)],
                         ids=["list-append", "own-array", "lambda", "print", "partial-sum"])
def test_callbacks_that_write_no_array_of_the_program_run(cb, policy):
    got = adgen.grad(uses_callback, mutation=policy)(X.copy(), cb)
    np.testing.assert_allclose(got, numerical_grad(lambda x: uses_callback(x, cb), (X,), 0),
                               rtol=1e-6)


def triple_given(w):
    w[1:] *= 3


def passes_the_array(x):
    WORK[:] = x
    triple_given(WORK)
    return np.sum(WORK ** 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_the_hinted_form_is_right(policy):
    got = adgen.grad(passes_the_array, mutation=policy)(X.copy())
    expected = numerical_grad(passes_the_array, (X,), 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got, 2 * X * np.array([1.0, 9.0, 9.0, 9.0]))  # by hand


def test_standalone_module_refuses_a_checked_callback():
    with pytest.raises(adgen.UnsupportedError, match="standalone module would need adgen"):
        adgen.standalone_source(uses_callback)


def uses_attribute_hook(x, opts):
    WORK[:] = x
    opts.hook()
    return np.sum(WORK ** 2)


def uses_item_hook(x, hooks):
    WORK[:] = x
    hooks["h"]()
    return np.sum(WORK ** 2)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("name", ["update", "lambda-method", "partial-of-copyto"])
def test_callback_held_by_an_object_or_a_dict_argument(name, policy):
    import types

    cb = _callbacks()[name]
    _refused(lambda: adgen.grad(uses_attribute_hook, mutation=policy)(
        X.copy(), types.SimpleNamespace(hook=cb)))
    _refused(lambda: adgen.grad(uses_item_hook, mutation=policy)(X.copy(), {"h": cb}))


class Counter:
    def __init__(self):
        self.calls = 0
        self.scale = np.array([1.0, 2.0])

    def tick(self):
        self.calls += 1  # a number: no array written


def counts_and_draws(x, counter, rng):
    counter.tick()
    noise = rng.normal(size=4)  # a Generator's method: runs as it is
    return np.sum(x ** 2) + 0.0 * np.sum(noise)


@pytest.mark.parametrize("policy", POLICIES)
def test_methods_that_write_no_array_run(policy):
    counter = Counter()
    got = adgen.grad(counts_and_draws, mutation=policy)(X.copy(), counter,
                                                        np.random.default_rng(0))
    np.testing.assert_allclose(got, 2 * X)
    assert counter.calls == 1


class Model:
    def __init__(self):
        self.W = np.array([1.0, 2.0, 3.0])
        self.cache = np.zeros(3)

    def reset(self):
        self.cache[:] = 0.0  # an array of its own object, which the gradient does not read

    def loss(self, x):
        self.reset()
        return np.sum((self.W * x) ** 2)


@pytest.mark.parametrize("policy", POLICIES)
def test_a_method_of_the_object_itself_runs_as_before(policy):
    m = Model()
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(adgen.grad(m.loss, mutation=policy)(x), 2 * m.W ** 2 * x)


def squares_after(x, cb):
    cb()
    return np.sum(x ** 2)


def test_forward_mode_refuses_a_callback_writing_the_argument_it_was_given():
    # jvp(f, (WORK, triple_tail), ...): the callback triples WORK[1:], which is x; the jvp
    # code ran it as it is and left x's tangent untripled: 2 * [1, 6, 9, 12] . [1, 1, 1, 1]
    # = 56, where the derivative of sum(tripled(x + t v) ** 2) is 2 * (1 + 18 + 27 + 36) = 164
    WORK[:] = X
    with pytest.raises(adgen.UnsupportedError, match="triple_tail"):
        adgen.jvp(squares_after, (WORK, triple_tail), (np.ones(4), None))
    with pytest.raises(adgen.UnsupportedError, match="triple_tail"):
        adgen.hessian(lambda x: squares_after(x, triple_tail))(WORK)


def test_forward_mode_runs_a_callback_writing_nothing_of_the_program():
    def note():
        LOG.append(1.0)

    value, tangent = adgen.jvp(squares_after, (X, note), (np.ones(4), None))
    assert value == pytest.approx(30.0) and tangent == pytest.approx(2 * np.sum(X))
    np.testing.assert_allclose(adgen.hessian(lambda x: squares_after(x, note))(X),
                               2 * np.eye(4))
    assert LOG  # it ran


def test_forward_mode_names_the_users_call_of_the_callback():
    # the refusal raised when the jvp code runs names the line of cb() in squares_after (it
    # named the line of the jvp call: the jvp code kept no "# line N:" comment for cb())
    WORK[:] = X
    with pytest.raises(adgen.UnsupportedError) as err:
        adgen.jvp(squares_after, (WORK, triple_tail), (np.ones(4), None))
    assert err.value.location.file == __file__
    assert err.value.location.source_line.strip() == "cb()"


def triple_all(w):
    w *= 3.0


def triples_a_copy(x, cb):
    y = x * 1.0
    cb(y)
    return np.sum(y ** 2)


def test_forward_mode_follows_a_callback_writing_the_array_it_is_given():
    # cb(y) as a statement, y with a derivative: the jvp code ran it as it is and y's tangent
    # missed the write, 2 * [3, 6, 9, 12] . 1 = 60 where 18 * sum(x) = 180 is right; it is now
    # the callee's jvp, as for z = cb(y)
    value, slope = adgen.jvp(triples_a_copy, (X, triple_all), (np.ones(4), None))
    assert value == pytest.approx(9 * np.sum(X ** 2))
    expected = numerical_grad(lambda x: triples_a_copy(x, triple_all), (X,), 0) @ np.ones(4)
    assert slope == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("policy", POLICIES)
def test_second_derivatives_refuse_it_as_the_gradient_does_in_the_users_names(policy):
    # reverse mode refuses a function held in a variable writing its argument; under hessian
    # the refusal named the callee's jvp ('triple_all_jvp (<adgen triple_all jvp>:1)')
    for derivative in (adgen.grad, adgen.hessian):
        with pytest.raises(adgen.UnsupportedError) as err:
            derivative(lambda x: triples_a_copy(x, triple_all), mutation=policy)(X)
        text = str(err.value)
        assert "triple_all (" in text and "_jvp" not in text and "<adgen" not in text
        assert err.value.location.file == __file__
        assert err.value.location.source_line.strip() == "cb(y)"


def note():
    LOG.append(1.0)


def sines_after(x, cb):
    cb()
    return np.sum(np.sin(x) * x ** 2)


def test_third_derivatives_through_a_checked_callback():
    # the jvp code calls cb through checked_callable, and a third derivative differentiates
    # that code twice more: it raised MissingRuleError ('checked_callable() has no
    # derivative rule'); generated code is read with the wrapper taken off (and wrapped
    # again by the mode differentiating it). By hand: d3/dx3 of sin(x) x^2
    x = np.array([0.3, -0.7, 1.1])
    v = np.array([1.0, 0.5, -0.2])
    third = -x ** 2 * np.cos(x) - 6 * x * np.sin(x) + 6 * np.cos(x)
    _, slope = adgen.jvp(adgen.hessian(sines_after), (x, note), (v, None))
    np.testing.assert_allclose(slope, np.diag(third * v), atol=1e-12)
    cube = adgen.jacfwd(adgen.hessian(sines_after))(x, note)
    np.testing.assert_allclose(np.einsum("iik->ik", cube), np.diag(third), atol=1e-12)
    assert LOG  # it ran
    WORK[:] = X
    with pytest.raises(adgen.UnsupportedError, match="triple_tail"):
        adgen.jacfwd(adgen.hessian(squares_after))(WORK[:3].copy(), triple_tail)


def shown_then_squared(x, show):
    show(x)
    return np.sum(x ** 2)


def test_a_builtin_callback_given_an_array_with_a_derivative_runs_as_it_is():
    # show(x) with show = print (or a list's append) runs as it is under jvp and hessian, as
    # under grad; e96c64c sent it through the callee's jvp, which refused print
    seen = []
    x = np.array([0.3, -0.7, 1.1])
    for show in (print, seen.append):
        _, slope = adgen.jvp(shown_then_squared, (x, show), (np.ones(3), None))
        assert slope == pytest.approx(2 * np.sum(x))
        np.testing.assert_allclose(adgen.hessian(shown_then_squared)(x, show), 2 * np.eye(3))
    # one run of the jvp, one per column of the Hessian, two plain runs it compares
    assert len(seen) == 1 + 3 + 2
