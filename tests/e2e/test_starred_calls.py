"""Calls with starred arguments: ``f(*args)``, ``f(*xs, y)``, ``np.maximum(*pair)``,
``g(**kw)``, ``helper(*xs, c=v)``, in scripts, lambdas and methods.

They were refused ("a call with *arguments is not supported"). desugar now writes them as
``call_starred(f, tuple(xs) + (y,), {'c': v})`` (adgen.runtime), whose rule runs ``f``
through adgen's dispatch when the call runs (the number of arguments is known then) and
hands the cotangents back to the tuple and the dict; forward mode calls ``call_jvp`` with
the tuple's tangent. What the caller's analyses cannot follow through such a call is refused
when it runs: a callee that writes its arguments in place or returns one of them, and a
method whose object would get a gradient. Gradients against central differences, both
policies; jvp and Hessians too.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad, numerical_jvp

import adgen


def helper(a, b, c=1.0):
    return a * b + c


def scaled_sum(scale, *xs):
    out = 0.0
    for v in xs:
        out = out + scale * np.sum(v * v)
    return out


def packed_tuple(x, y):
    args = (x, y)
    return np.sum(helper(*args))


def star_then_positional(x, y):
    xs = [np.sin(x)]
    return np.sum(helper(*xs, y, c=2.0))


def numpy_functions(x, y):
    rows = [x, y]
    pair = (x * y, y)
    return np.sum(np.stack([*rows]) ** 2) + np.sum(np.maximum(*pair)) + \
        np.sum(np.concatenate((*rows, x)))


def keywords_from_a_dict(x, y):
    kw = {"b": y, "c": np.cos(x)}
    return np.sum(helper(x, **kw))


def only_keywords(x, y):
    kw = {"a": x, "b": y}
    return np.sum(helper(**kw))


def into_varargs(x, y):
    parts = [x, 2.0 * y, x * y]
    return scaled_sum(0.5, *parts) + scaled_sum(*[1.5, x])


def built_in_a_loop(x, n):
    parts = []
    for i in range(n):
        parts.append(x * (i + 1.0))
    return np.sum(np.add(*parts[:2])) * np.sum(np.concatenate([*parts]) ** 2)


def shape_from_star(x, y):
    z = np.zeros((*x.shape, 2))
    z[..., 0] = x
    z[..., 1] = y
    return np.sum(np.tanh(z).reshape((*x.shape, 2)) ** 2) + np.sum(np.transpose(z, (*[1], 0)))


def through_a_partial(x, y):
    f = functools.partial(helper, c=3.0)
    return np.sum(f(*(x, y)))


class Model:
    def __init__(self, w):
        self.w = w

    def layer(self, x, b):
        return np.tanh(self.w * x + b)

    def loss(self, x, b):
        args = (x, b)
        return np.sum(self.layer(*args) ** 2)


def method_of_self(x, b, w):
    return Model(w).loss(x, b)


CASES = [packed_tuple, star_then_positional, numpy_functions, keywords_from_a_dict,
         only_keywords, into_varargs, shape_from_star, through_a_partial]


def _x():
    return np.array([0.3, -0.8, 1.1])


def _y():
    return np.array([0.5, 0.25, -0.6])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradients_against_central_differences(f, mutation):
    def grad(g, argnums):
        return adgen.grad(g, argnums=argnums, mutation=mutation)

    check_grad(f, (_x(), _y()), argnums=(0, 1), grad=grad)
    value, _ = adgen.value_and_grad(f, mutation=mutation)(_x(), _y())
    assert value == pytest.approx(f(_x(), _y()))


def test_a_list_built_in_a_loop():
    check_grad(built_in_a_loop, (_x(), 3))


def test_in_a_lambda_and_with_a_free_tuple():
    extra = (2.0,)
    check_grad(lambda x, y: np.sum(helper(x, *extra, c=np.sum(y))), (_x(), _y()),
               argnums=(0, 1))


def test_a_method_called_with_star_whose_object_has_no_gradient():
    m = Model(0.7)
    g = adgen.grad(m.loss, argnums=(0, 1))(_x(), _y())
    assert_grad_close(g[0], numerical_grad(m.loss, (_x(), _y()), 0))
    assert_grad_close(g[1], numerical_grad(m.loss, (_x(), _y()), 1))


def test_a_method_whose_object_gets_a_gradient():
    """self.layer(*args) in a method of an object built inside: w reaches the result through
    self, whose cotangent the call hands back."""
    check_grad(method_of_self, (_x(), _y(), 0.7), argnums=(0, 1, 2))


def views_its_object(x, s):
    z = np.sin(x)
    w = z.reshape(*s)
    w[0] = 0.0  # writes z
    return np.sum(z * x)


def writes_first(a, b):
    a[0] = b[0]
    return np.sum(a)


def calls_a_writer(x, y):
    z = x * 2.0
    args = [z, y]  # a list held by a name: its items are not known when f compiles
    return writes_first(*args) + np.sum(z * y)


def calls_a_writer_with_a_tuple(x, y):
    z = x * 2.0
    args = (z, y)  # a tuple bound once: writes_first(args[0], args[1]) (star_arguments)
    return writes_first(*args) + np.sum(z * y)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_a_writer_given_a_tuple_bound_once(mutation):
    # refused when it ran before session 16 (the dispatch could not tell what it writes)
    for k in (0, 1):
        got = adgen.grad(calls_a_writer_with_a_tuple, argnums=k, mutation=mutation)(_x(), _y())
        assert_grad_close(got, numerical_grad(calls_a_writer_with_a_tuple, (_x(), _y()), k))


def returns_first(a, b):
    return a


def calls_an_aliasing_one(x, y):
    z = x * 2.0
    w = returns_first(*(z, y))
    w[0] = 0.0
    return np.sum(z * y)


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_callees_the_caller_cannot_follow_are_refused(mutation):
    # each at the user's line (the call's file and line, its source and a caret)
    with pytest.raises(adgen.UnsupportedError, match="changes its arguments in place") as err:
        adgen.grad(calls_a_writer, mutation=mutation)(_x(), _y())
    assert "test_starred_calls.py:" in str(err.value) and "writes_first(*args)" in str(err.value)
    with pytest.raises(adgen.UnsupportedError, match="returns one of its arguments") as err:
        adgen.grad(calls_an_aliasing_one, mutation=mutation)(_x(), _y())
    assert "w = returns_first(*(z, y))" in str(err.value)
    with pytest.raises(adgen.UnsupportedError, match=r"a shape as one tuple") as err:
        adgen.grad(views_its_object, mutation=mutation)(_x(), (3,))
    assert "w = z.reshape(*s)" in str(err.value)


def test_mixed_keywords_and_double_star_are_refused_at_the_line():
    def mixed(x, y):
        kw = {"b": y}
        return np.sum(helper(x, c=1.0, **kw))

    with pytest.raises(adgen.UnsupportedError, match=r"passes \*\*kwargs together") as err:
        adgen.grad(mixed)(_x(), _y())
    assert "helper(x, c=1.0, **kw)" in str(err.value)


@pytest.mark.parametrize("f", [packed_tuple, numpy_functions, shape_from_star,
                               star_then_positional], ids=lambda f: f.__name__)
def test_forward_mode_and_hessians(f):
    v = np.array([0.2, -0.1, 0.4])
    _, tangent = adgen.jvp(lambda x: f(x, _y()), (_x(),), (v,))
    assert_grad_close(np.ravel(tangent), numerical_jvp(f, (_x(), _y()), (v, None)))
    # (numpy_functions: reverse over forward through a NumPy rule called when the call runs
    # differentiates a function that calls it by name: tangent_calls.call_jvp_rrule)
    h = adgen.hessian(lambda x: f(x, _y()))(_x())
    g = adgen.grad(lambda x: f(x, _y()))
    assert_grad_close(h @ v, numerical_grad(lambda x: g(x) @ v, (_x(),), 0), atol=1e-5)


def test_forward_mode_refuses_a_varargs_callee_loudly():
    # its jvp takes the extra arguments packed: not lined up when the call runs (it was a raw
    # TypeError)
    with pytest.raises(adgen.UnsupportedError, match="a function with \\*args"):
        adgen.jvp(lambda x: into_varargs(x, _y()), (_x(),), (_x(),))


def test_forward_mode_of_keywords_with_a_derivative():
    # refused before session 28 ("by keyword"): kw's tangents follow the positional ones
    def f(x):
        return keywords_from_a_dict(x, _y())

    v = np.array([1.0, -0.5, 2.0])
    out, dot = adgen.jvp(f, (_x(),), (v,))
    assert out == f(_x())
    np.testing.assert_allclose(dot, numerical_jvp(f, (_x(),), (v,))[0], rtol=1e-6)


def test_a_standalone_module_refuses_a_starred_call_at_its_line(tmp_path):
    """``-o`` modules run without adgen; call_starred needs its dispatch."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "user.py").write_text(textwrap.dedent('''
        import numpy as np


        def helper(a, b):
            return a * b


        def loss(x, y):
            args = (x, y)
            return np.sum(helper(*args))
    '''))
    r = subprocess.run([sys.executable, "-m", "adgen", "user.py", "-f", "loss", "-o",
                        "adjoint.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode != 0
    assert "user.py:11" in r.stderr and "*args" in r.stderr  # return np.sum(helper(*args))
    assert not (tmp_path / "adjoint.py").exists()


class Layer:
    def __init__(self, w):
        self.w = w

    def apply(self, x, b):
        return np.tanh(self.w * x + b)


def through_an_object(m, x):
    args = (x, np.cos(x))
    return np.sum(m.apply(*args) ** 2)


def test_a_method_of_an_argument_object_gets_its_gradient_and_tangent():
    """m.apply(*args) with m an argument: m.w's gradient (reverse) and tangent (forward)
    come through the call's object."""
    w = np.array([0.7, 0.1, -0.3])

    def of_w(w):
        return through_an_object(Layer(w), _x())

    g = adgen.grad(through_an_object)(Layer(w.copy()), _x())
    assert_grad_close(g.w, numerical_grad(of_w, (w,), 0))
    check_grad(lambda x: through_an_object(Layer(w.copy()), x), (_x(),))
    _, tangent = adgen.jvp(through_an_object, (Layer(w.copy()), _x()),
                           (Layer(np.ones(3)), np.zeros(3)))
    assert_grad_close(np.ravel(tangent), numerical_jvp(of_w, (w,), (np.ones(3),)))


def sorted_in_place(x):
    y = x * 2.0
    y.sort(*())
    return np.sum(y * x)


def added_into(x):
    c = np.zeros(3)
    np.add(*(x, x), out=c)
    return np.sum(c * x)


def multiplied_into(x):
    c = np.zeros(3)
    np.multiply(*(x, x, c))
    return np.sum(c * x)


def copied_into(x):
    y = x * 2.0
    np.copyto(*(y, x * 5.0))  # its result is discarded: no pullback would run to refuse
    return np.sum(y * x)


@pytest.mark.parametrize("f, error, what", [
    (sorted_in_place, adgen.UnsupportedError, "an array's, a list's or a dict's methods"),
    (added_into, adgen.UnsupportedError, "an out= array"),
    (multiplied_into, adgen.UnsupportedError, "an out= array"),
    (copied_into, adgen.MissingRuleError, "holding floats")],
    ids=["sort", "out_keyword", "out_positional", "copyto"])
def test_in_place_writes_through_a_starred_call_are_refused_before_they_run(f, error, what):
    """Each writes an array the caller's analyses do not know is written (np.copyto's
    gradient was 14, 7 for 20, 10: a silent wrong gradient before this check)."""
    with pytest.raises(error, match=what) as err:
        adgen.grad(f)(_x())
    assert "test_starred_calls.py:" in str(err.value)


def prints_and_counts(x):
    xs = (np.sum(x), 2.0)
    print(*xs, sep=", ")
    return np.sum(x * x) + len(*(x,))


def test_builtins_called_with_star():
    """print(*xs) runs as written; len(*(x,)) is an int, through which no gradient flows."""
    check_grad(prints_and_counts, (_x(),))
