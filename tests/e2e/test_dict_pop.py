"""``y = d.pop(k)`` and ``y = d.pop(k, default)`` of a dict the function builds are
differentiated (since session 29): where only the name reaches the dict
(analyses.unshared_lists with kind="dict"), lower_mutation reads the item (``d[k]``, or
``d.get(k, default)``) and binds the name to a new dict of the other items, in order
(transforms/dict_pop.py). Both were refused ("the in-place method .pop() of a dict is not
supported"). Gradients against central differences under both policies, jvp and hessian
against them, a hand formula; a dict another name reaches, or a parameter, stays refused at
the line."""

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, check_jvp, numerical_hessian

import adgen

X = np.array([0.7, -1.3, 2.1, 0.4])
V = np.cos(np.arange(4.0))


def split_params(x):
    params = {"w": x * 2.0, "b": np.sin(x), "scale": 3.0}
    w = params.pop("w")
    return np.sum(w * params["b"]) * params["scale"] + len(params)


def popped_with_defaults(x):
    params = {"w": x[:2] * x[2:], "lr": 0.5}
    b = params.pop("b", np.cos(x[:2]))  # absent: the default
    w = params.pop("w", 0.0)
    lr = params.pop("lr")
    return np.sum(w * b) * lr + len(params)


def make_layer(x):
    return {"w": x[0] * x[1], "b": x[2] ** 2, "name": "dense"}


def popped_in_a_loop(x):
    # the config style: options popped one by one, the rest used after
    cfg = dict(make_layer(x))  # a copy: only cfg reaches it
    cfg["extra"] = np.tanh(x[3])
    total = 0.0
    for k in ["w", "b"]:
        total = total + cfg.pop(k) * (2.0 if k == "w" else 1.0)
    rest = sum(v for v in cfg.values() if not isinstance(v, str))
    return total * rest


def popped_then_stored_again(x):
    d = dict(a=x[0] * 3.0, b=x[1])
    a = d.pop("a")
    d["a"] = a * a  # stored again: after b now
    keys = list(d.keys())
    return d[keys[0]] * d[keys[1]] + np.exp(x[2]) * a


def popped_from_a_comprehension(x):
    d = {f"x{i}": x[i] ** 2 for i in range(4)}
    first = d.pop("x0")
    d.pop("x3")  # the value dropped
    s = 0.0
    for k, v in d.items():
        s = s + v * first
    return s


CASES = [split_params, popped_with_defaults, popped_in_a_loop, popped_then_stored_again,
         popped_from_a_comprehension]


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_central_differences(f, mutation):
    check_grad(f, (X.copy(),), mutation=mutation, strict_must_compute=True)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp(f):
    check_jvp(f, (X.copy(),), (V,))


@pytest.mark.parametrize("f", [split_params, popped_with_defaults,
                               popped_from_a_comprehension], ids=lambda f: f.__name__)
def test_hessian(f):
    np.testing.assert_allclose(adgen.hessian(f)(X.copy()), numerical_hessian(f, X.copy()),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f, offset", [(popped_in_a_loop, 6), (popped_then_stored_again, 3)],
                         ids=["loop", "stored_again"])
def test_second_order_through_a_rebound_dict_is_refused_at_the_line(f, offset):
    # the dict rebound in a loop, or written after the pop: second order follows a
    # container by its name, as for a dict comprehension's (refused, never wrong)
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.hessian(f)(X.copy())
    assert info.value.location.line == f.__code__.co_firstlineno + offset


def test_hand_formula():
    # popped_from_a_comprehension: x0^2 * (x1^2 + x2^2)
    expected = np.array([2 * X[0] * (X[1] ** 2 + X[2] ** 2), 2 * X[1] * X[0] ** 2,
                         2 * X[2] * X[0] ** 2, 0.0])
    assert_grad_close(adgen.grad(popped_from_a_comprehension)(X.copy()), expected)
    assert popped_from_a_comprehension(X) == pytest.approx(
        X[0] ** 2 * (X[1] ** 2 + X[2] ** 2))


def test_the_dict_after_the_pop_is_pythons():
    # the order of the items kept, a missing key's KeyError
    def f(x):
        d = {"a": x[0], "b": x[1], "c": x[2]}
        d.pop("b")
        d["b"] = x[3]
        return d

    out, _ = adgen.vjp(f, X.copy())
    assert list(out) == ["a", "c", "b"]

    def missing(x):
        d = {"a": x[0]}
        return d.pop("z") * 2.0

    with pytest.raises(KeyError):
        adgen.grad(missing)(X.copy())


def shared_then_popped(x):
    d = {"a": x[0], "b": x[1] * 2.0}
    e = d
    d.pop("a")  # MARK shared
    return e["b"] * 3.0


def handed_in(d):
    d.pop("a")  # MARK parameter
    return d["b"]


def calls_a_helper_popping(x):
    return handed_in({"a": x[0], "b": x[1] * 2.0}) * 3.0


def _line(mark: str) -> int:
    with open(__file__) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(mark))


@pytest.mark.parametrize("f, mark, why", [
    (shared_then_popped, "# MARK shared", "another name"),
    (calls_a_helper_popping, "# MARK parameter", "parameter")])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_dict_another_name_reaches_is_refused(f, mark, why, mutation):
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(f, mutation=mutation)(X.copy())
    err = info.value
    assert (err.location.file, err.location.line) == (__file__, _line(mark))
    assert ".pop()" in err.message and why in err.message and "d.get(k" in err.hint
