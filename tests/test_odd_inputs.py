"""A catalogue of odd inputs (issue 12): array subclasses, in-place methods with arguments,
containers passed as arguments and written in place, None and strings flowing through calls,
cotangents that do not fit, functions run by exec. Each gives a right answer (checked against
central differences under both policies, with the arguments' final state) or an adgen error
that says what to do; none gives a raw traceback.
"""

import copy

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

POLICIES = ["save", "strict"]
X = np.array([3.0, 1.0, 2.0])


def _check(fn, args, mutation, argnum=0):
    """adgen's gradient equals central differences, and the arguments end as a plain call
    leaves them."""
    plain = copy.deepcopy(list(args))
    fn(*plain)
    mine = copy.deepcopy(list(args))
    g = adgen.grad(fn, argnums=argnum, mutation=mutation)(*mine)
    assert_grad_close(g, numerical_grad(fn, args, argnum))
    for a, b in zip(mine, plain):
        if isinstance(b, dict):
            for k in b:
                np.testing.assert_array_equal(a[k], b[k])
        elif isinstance(b, np.ndarray):
            np.testing.assert_array_equal(a, b)
    return g


# --- array subclasses: refused, naming the argument --------------------------------------


@pytest.mark.parametrize("make", [
    pytest.param(lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]), id="matrix"),
    pytest.param(lambda: np.ma.masked_array([1.0, 2.0], mask=[False, True]), id="masked"),
])
@pytest.mark.parametrize("position", [0, 1])
def test_array_subclass_is_refused(make, position: int) -> None:
    def f(a, b):
        return np.sum(a * b)

    args = [np.ones((2, 2)), np.ones((2, 2))]
    args[position] = make()
    with pytest.raises(adgen.NonDifferentiableError, match=f"argument {position}.*subclass"):
        adgen.grad(f)(*args)
    with pytest.raises(adgen.NonDifferentiableError, match="subclass"):
        adgen.vjp(f, *args)


def test_array_subclass_inside_a_container_is_refused() -> None:
    def f(p):
        return np.sum(p["w"] * p["w"])

    with pytest.raises(adgen.NonDifferentiableError, match="holds a numpy.matrix"):
        adgen.grad(f)({"w": np.matrix([[1.0, 2.0]])})


# --- in-place methods, whatever their arguments ------------------------------------------


def sort_stable(y):
    y = y * 1.0
    y.sort(kind="stable")
    return np.sum(y * np.arange(3.0))


def sort_axis0(xs):
    xs = xs * 1.0
    xs.sort(axis=0)
    return np.sum(xs * np.arange(6.0).reshape(3, 2))


def sort_positional(x):
    x.sort(0, "quicksort")
    return np.sum(x * np.arange(3.0)) + np.sum(x * x)


def fill_value(x):
    y = x * 1.0
    y.fill(x[0] * x[1])
    return np.sum(y * x)


def put_raise(x):
    y = x * 2.0
    y.put([0, 2], x[:2] * x[1:], mode="raise")
    return np.sum(y * y)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, arg", [
    (sort_stable, X),
    (sort_axis0, np.array([[3.0, 1.0], [1.0, 2.0], [2.0, 0.5]])),
    (sort_positional, X),
    (fill_value, X),
    (put_raise, X),
])
def test_in_place_method_with_arguments(fn, arg, mutation: str) -> None:
    _check(fn, (arg,), mutation)


def test_sort_with_kind_is_a_mutation_site() -> None:
    sites = adgen.explain(sort_stable, file=None)
    rows = [s for s in sites if "sort" in s.construct]
    assert rows and all(s.decision == "free" for s in rows), sites


@pytest.mark.parametrize("body, what", [
    ("x.partition(1)", "partition"),
    ("x.put([0], [1.0], mode='clip')", "mode"),
    ("x.sort(order='a')", "order"),
    ("x.sort(key=abs)", "sort"),
    ("x.fill(1.0, 2.0)", "fill"),
    ("x.fill(value=1.0)", "fill"),
    ("np.random.shuffle(x)", "shuffle"),
])
def test_in_place_call_adgen_cannot_follow_is_refused(body: str, what: str, tmp_path) -> None:
    path = tmp_path / "inplace_mod.py"
    path.write_text(f"import numpy as np\n\n\ndef f(x):\n    {body}\n    return np.sum(x * x)\n")
    ns: dict = {"__name__": "inplace_mod"}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102 - a module of the test's
    with pytest.raises(adgen.UnsupportedError, match=what) as info:
        adgen.grad(ns["f"])(X.copy())
    assert info.value.location is not None and info.value.location.line == 5


# --- containers passed as arguments and written in place ---------------------------------


def dict_rebind(p):
    p["w"] = 2 * p["w"]
    return np.sum(p["w"] * p["w"])


def dict_element(p):
    p["w"][0] = 5.0
    return np.sum(p["w"] * p["w"]) + np.sum(p["b"] * p["w"])


def dict_augmented(p):
    p["w"] += p["b"]
    return np.sum(p["w"] * p["w"])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [dict_rebind, dict_element, dict_augmented])
def test_dict_argument_written_in_place(fn, mutation: str) -> None:
    p = {"w": np.array([1.0, 2.0]), "b": np.array([0.5, -1.5])}
    _check(fn, (p,), mutation)


class _Params:
    def __init__(self) -> None:
        self.w = np.array([1.0, 2.0])


def object_rebind(m):
    m.w = m.w * 3.0
    return np.sum(m.w * m.w)


@pytest.mark.parametrize("mutation", POLICIES)
def test_object_argument_written_in_place(mutation: str) -> None:
    m = _Params()
    g = adgen.grad(object_rebind, mutation=mutation)(m)
    np.testing.assert_allclose(g.w, 18.0 * np.array([1.0, 2.0]))  # d/dw sum(9 w^2)
    np.testing.assert_array_equal(m.w, [3.0, 6.0])


def list_element(lst):
    lst[0] = lst[0] * lst[1]
    return np.sum(lst[0])


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_list_argument_written_by_index(mutation: str) -> None:
    # (issue 12: refused before) d sum(l0 * l1) = (l1, l0), and the list ends as a plain
    # call leaves it; more cases in tests/mutation/test_list_arguments.py
    lst = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    g = adgen.grad(list_element, mutation=mutation)(lst)
    assert type(g) is list and len(g) == 2
    np.testing.assert_allclose(g[0], [3.0, 4.0])
    np.testing.assert_allclose(g[1], [1.0, 2.0])
    np.testing.assert_array_equal(lst[0], [3.0, 8.0])


# --- None and strings flow through calls and returns -------------------------------------


def _log(v):
    _ = v


def _use(r, x):
    if r is None:
        return x * 3.0
    return r


def _labelled(x, label):
    return np.sum(x * x) if label else 0.0


def none_through_helper(x):
    r = _log(x * 2.0)
    return np.sum(_use(r, x) * x)


def string_through_helper(x, tag):
    label = tag + "!"
    return _labelled(x, label)


def _double_in_place(x):
    x *= 2.0


def none_from_a_mutating_call(x):
    y = x * 1.0
    r = _double_in_place(y)  # None, from a call that writes y: it has a shadow cell
    return np.sum(_use(r, y) * y)


@pytest.mark.parametrize("mutation", POLICIES)
def test_none_and_strings_flow_through_calls(mutation: str) -> None:
    _check(none_through_helper, (X,), mutation)
    _check(string_through_helper, (X, "a"), mutation)
    _check(none_from_a_mutating_call, (X,), mutation)  # crashed (object dtype) before
    assert adgen.grad(_use, argnums=1, mutation=mutation)(None, 2.0) == 3.0


# --- vjp's pullback validates its cotangent ------------------------------------------------


def _double(x):
    return x * 2.0


def _total(x):
    return np.sum(x * x)


def _pair(x):
    return x * 2.0, "label"


@pytest.mark.parametrize("fn, ct, problem", [
    (_double, None, "is None"),
    (_double, np.ones(3), "shape"),
    (_double, "a", "str"),
    (_double, np.ones(2, dtype=complex), "dtype"),
    (_total, None, "is None"),
    (_total, np.ones(3), "shape"),
    (_pair, np.ones(2), "tuple"),
    (_pair, (np.ones(2), 1.0), "no gradient"),
])
def test_vjp_refuses_a_cotangent_that_does_not_fit(fn, ct, problem: str) -> None:
    _, pullback = adgen.vjp(fn, np.array([1.0, 2.0]))
    with pytest.raises(adgen.CotangentError, match=problem):
        pullback(ct)


def test_vjp_accepts_cotangents_that_fit() -> None:
    _, pullback = adgen.vjp(_pair, np.array([1.0, 2.0]))
    np.testing.assert_allclose(pullback((np.ones(2), None))[0], [2.0, 2.0])
    _, pullback = adgen.vjp(_total, np.array([1.0, 2.0]))
    np.testing.assert_allclose(pullback(1)[0], [2.0, 4.0])


# --- functions adgen reads from odd places -------------------------------------------------


def test_function_run_by_exec_without_a_module_name(tmp_path) -> None:
    path = tmp_path / "execd.py"
    path.write_text("import numpy as np\n\n\ndef h(v):\n    return v * 2.0\n\n\n"
                    "def e(x):\n    return np.sum(h(x) * x)\n")
    ns: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)  # noqa: S102 - no __name__ in ns
    assert ns["e"].__module__ is None
    for mutation in POLICIES:
        np.testing.assert_allclose(adgen.grad(ns["e"], mutation=mutation)(X), 4.0 * X)


def _oddly_named(v):
    return v * 3.0


_oddly_named.__name__ = _oddly_named.__qualname__ = "my-inner fn"


def _calls_oddly_named(x):
    return np.sum(_oddly_named(x) * x)


def test_callee_whose_name_is_not_an_identifier() -> None:
    np.testing.assert_allclose(adgen.grad(_calls_oddly_named)(X), 6.0 * X)
    assert "def " in adgen.standalone_source(_calls_oddly_named)


# --- a list, dict or object written through one name and read through another --------------


def dict_alias(w):
    p = {"w": w}
    q = p
    q["w"] = q["w"] * 3.0  # ALIAS-WRITE
    return np.sum(p["w"])


def object_alias(m):
    m2 = m
    m2.w = m2.w * 3.0  # ALIAS-WRITE
    return np.sum(m.w)


def list_alias(w):
    p = [w]
    q = p
    q.append(w * 2.0)  # ALIAS-WRITE
    return np.sum(p[1])


def held_alias(w):
    p = {"w": w}
    holder = [p]
    inner = holder[0]
    inner["w"] = w * 3.0  # ALIAS-WRITE
    return np.sum(p["w"])


@pytest.mark.parametrize("fn, make", [
    (dict_alias, lambda: np.array([1.0, 2.0])),
    (object_alias, _Params),
    (list_alias, lambda: np.array([1.0, 2.0])),
    (held_alias, lambda: np.array([1.0, 2.0])),
])
def test_container_written_through_an_alias_is_refused(fn, make) -> None:
    # the adjoint of a container follows its name: a silently wrong gradient before
    with pytest.raises(adgen.UnsupportedError, match="reaches the same") as info:
        adgen.grad(fn)(make())
    assert "ALIAS-WRITE" in info.value.location.source_line


def alias_one_name_used(w):
    p = {"w": w}
    q = p
    q["w"] = q["w"] * 3.0
    return np.sum(q["w"] * q["w"])


def written_before_alias(w):
    p = {"w": w}
    p["w"] = p["w"] * 3.0
    q = p
    return np.sum(q["w"] * p["w"])


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [alias_one_name_used, written_before_alias])
def test_container_alias_without_a_conflict(fn, mutation: str) -> None:
    _check(fn, (np.array([1.0, 2.0]),), mutation)


def _ident(d):
    return d


def alias_through_a_call(w):
    p = {"w": w}
    q = _ident(p)
    q["w"] = q["w"] * 3.0  # ALIAS-WRITE
    return np.sum(p["w"])


def test_container_alias_through_a_call_is_refused() -> None:
    with pytest.raises(adgen.UnsupportedError, match="reaches the same") as info:
        adgen.grad(alias_through_a_call)(np.array([1.0, 2.0]))
    assert "ALIAS-WRITE" in info.value.location.source_line


# --- a callee that writes a list, dict or object argument in place --------------------------


def _set_w(d, w):
    d["w"] = w * 3.0


def _append_w(lst, w):
    lst.append(w * 3.0)


def _set_attr(m, w):
    m.w = m.w * w


def callee_writes_dict(w):
    p = {"w": w}
    _set_w(p, w)
    return np.sum(p["w"] * w)


def callee_appends(w):
    p = [w]
    _append_w(p, w)
    return np.sum(p[1] * p[0])


def callee_sets_attribute(w):
    m = _Params()
    m.w = w * 2.0
    _set_attr(m, w)
    return np.sum(m.w)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [callee_writes_dict, callee_appends, callee_sets_attribute])
def test_callee_writes_a_container_in_place(fn, mutation: str) -> None:
    # the call's result is discarded: its pullback must still run (it was elided: a silently
    # wrong gradient)
    _check(fn, (np.array([1.0, 2.0]),), mutation)


class _HoldsAFunction:
    def __init__(self) -> None:
        self.f = _double  # a plain function in an attribute: self.f(x) does not pass self

    def run(self, x):
        return self.f(x) * x


def calls_a_function_attribute(x):
    return np.sum(_HoldsAFunction().run(x))


def test_function_held_in_an_attribute() -> None:
    # raised a raw ValueError (the call was taken for a method, with self's cotangent)
    _check(calls_a_function_attribute, (X,), "save")


# --- array forms adgen cannot map: refused at the user's line, never a raw traceback -------
# (y.flat[...] = v gave a silently wrong gradient: the write went to a cell of the iterator
# while y's adjoint kept the gradient of the elements it overwrote)


def real_attribute_store(x):
    y = np.zeros(3)
    y.real = np.sin(x)
    return np.sum(y * y)


def real_attribute_update(x):
    y = x * 1.0
    y.real += np.sin(x)
    return np.sum(y * y)


def shape_attribute_store(x):
    y = np.concatenate([x, x])
    y.shape = (2, 3)
    return np.sum(y[0] * y[1])


def flat_attribute_store(x):
    y = np.zeros(3)
    y.flat = x * x
    return np.sum(y * y)


def flat_write_transposed(x):
    y = np.outer(x, x).T  # not C-contiguous: y.flat has no view of y's adjoint
    y.flat[1] = 7.0
    return np.sum(y * y)


def structured_field(x):
    r = np.zeros(3, dtype=[("a", float), ("b", float)])
    r["a"] = x
    return np.sum(r["a"] * r["a"])


def matrix_made_inside(x):
    m = np.asmatrix(np.outer(x, x))
    return np.sum(m * m)


def masked_made_inside(x):
    m = np.ma.masked_array(x, mask=[False, True, False])
    return np.sum(m * m)


def _line(fn, snippet: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if snippet in text)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn, line, error, words", [
    (real_attribute_store, "y.real =", adgen.UnsupportedError, "attribute .real"),
    (real_attribute_update, "y.real +=", adgen.UnsupportedError, "attribute .real"),
    (shape_attribute_store, "y.shape =", adgen.UnsupportedError, "attribute .shape"),
    (flat_attribute_store, "y.flat =", adgen.UnsupportedError, "attribute .flat"),
    (flat_write_transposed, "y.flat[1]", adgen.UnsupportedError, "y.flat of an array"),
    (structured_field, "return", adgen.UnsupportedError, "structured array"),
    # refused as subclass makers (transforms/array_subclasses), also where x is a constant
    (matrix_made_inside, "np.asmatrix", adgen.NonDifferentiableError, "asmatrix"),
    (masked_made_inside, "np.ma.masked_array", adgen.NonDifferentiableError, "masked_array"),
], ids=lambda v: v.__name__ if callable(v) and hasattr(v, "__code__") else None)
def test_array_form_refused_at_the_line(fn, line: str, error, words: str, mutation: str) -> None:
    try:
        adgen.grad(fn, mutation=mutation)(X.copy())
    except adgen.MutationError:
        # strict may refuse y.real += v first (np.real's pullback reads y): also at the line
        assert mutation == "strict" and fn is real_attribute_update
        return
    except error as err:
        assert words in str(err), err
        assert err.location is not None, err
        assert err.location.file.endswith("test_odd_inputs.py"), err
        assert err.location.line == _line(fn, line), err
        assert "hint" in str(err) or error is adgen.MissingRuleError, err
    else:
        raise AssertionError(f"{fn.__name__}: a gradient where adgen should refuse")


def flat_write(x):
    y = x * 1.0
    y.flat[...] = 7.0
    return np.sum(y * y) + np.sum(x ** 2)


def flat_index_write(x):
    y = x * 2.0
    c = np.sum(y ** 3)  # its gradient reads y, which the next line overwrites
    y.flat[1] = 7.0
    return np.sum(y * y) + c


def flat_read(x):
    y = x * 1.0
    return y.flat[2] * 3.0 + np.sum(y) + np.sum(np.outer(x, x).T.flat[1:4] ** 2)


def flat_read_after_write(x):
    y = x * 1.0
    f = y.flat
    y[0] = 5.0  # y is written in place: its adjoint is in shadow memory, f's a flat view of it
    return f[0] * f[2] + np.sum(y ** 2)


@pytest.mark.parametrize("mutation", POLICIES)
@pytest.mark.parametrize("fn", [flat_write, flat_index_write, flat_read, flat_read_after_write])
def test_flat_read_and_written_by_index(fn, mutation: str) -> None:
    # y.flat[i] and y.flat[i] = v (y C-contiguous) were refused; flat_index_write's guard must
    # see the write through the iterator (it was skipped: a silently wrong gradient)
    if fn is flat_index_write and mutation == "strict":
        with pytest.raises(adgen.MutationError, match="y.flat"):
            adgen.grad(fn, mutation=mutation)(X.copy())
        return
    _check(fn, (X,), mutation)


def _iterates_flat(x):
    s = 0.0
    for v in x.T.flat:  # the items in C order of the transpose
        s = s + v * v * v
    return s


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_iterating_over_flat(mutation):
    # x.flat read in a loop is the array's items (np.ravel's rule); it was a raw TypeError
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(adgen.grad(_iterates_flat, mutation=mutation)(x), 3 * x ** 2)
