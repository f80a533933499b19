"""An array handed to a helper inside a list, tuple or dict that the helper writes in place,
when the caller (or the call's own arguments) read the array before the write:
``relax({'u': u}, x * u)``, ``ps = [u]; step(ps, x * u)``.

The forward saves a value the gradient reads (``x * u`` reads ``u``) until a guarded write
overwrites it; a write through a container the call is handed went unguarded (the guard
looked for an array and found a dict), so under "save" the pullback read the written values
(a silently wrong gradient) and "strict" did not refuse. Under "save" the captures of every
array in the container are saved before the call. Under "strict" nothing is copied behind
the user's back (it was, until session 17): the helper's write refuses, naming the call
that handed the array, the helper's line that writes it and the lines whose gradient reads
it, as a direct ``relax_array(u, x * u)`` is refused; the hint, applied as written (a copy
where the gradient reads), runs under "strict" with the gradient of the function as it was.

Gradients against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def relax(state, force):
    u = state["u"]
    u += 0.5 * force


def relax_items(items, force):
    u = items[0]
    u += 0.5 * force


def through_a_dict_display(x):
    u = np.sin(x)
    relax({"u": u}, x * u)
    return np.sum(u ** 2)


def through_a_named_dict(x):
    u = np.sin(x)
    state = {"u": u}
    energy = np.sum(u * np.cos(x))
    relax(state, x * u)
    return energy + np.sum(state["u"] ** 2)


def through_a_named_list(x):
    u = np.sin(x)
    items = [u]
    relax_items(items, x * u)
    return np.sum(u ** 2)


def through_a_named_tuple(x):
    u = x * 1.0
    before = np.sum(u * x)
    pair = (u, x)
    relax_items(pair, x * u)
    return before + np.sum(u * x)


# the functions above with strict's hint applied: each line whose gradient reads u reads a
# copy of it (the values computed are the same: the gradient is the original function's)


def through_a_dict_display_hint_applied(x):
    u = np.sin(x)
    relax({"u": u}, x * u.copy())
    return np.sum(u ** 2)


def through_a_named_dict_hint_applied(x):
    u = np.sin(x)
    state = {"u": u}
    energy = np.sum(u.copy() * np.cos(x))
    relax(state, x * u.copy())
    return energy + np.sum(state["u"] ** 2)


def through_a_named_list_hint_applied(x):
    u = np.sin(x)
    items = [u]
    relax_items(items, x * u.copy())
    return np.sum(u ** 2)


def through_a_named_tuple_hint_applied(x):
    u = x * 1.0
    before = np.sum(u.copy() * x)
    pair = (u, x)
    relax_items(pair, x * u.copy())
    return before + np.sum(u * x)


def line_of(f, text):
    """The line of ``f``'s source in this file that holds ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(f)
    return first + next(k for k, ln in enumerate(lines) if text in ln)


X = np.array([0.35, 0.8, 1.1, 0.55, 0.95])
CASES = [through_a_dict_display, through_a_named_dict, through_a_named_list,
         through_a_named_tuple]
# (the call, the lines whose gradient reads u, in the order the message names them, the
# hint's rewrite of each, the helper and its write)
REFUSED = {
    through_a_dict_display: ('relax({"u": u}, x * u)', ['relax({"u": u}, x * u)'],
                             ['relax({"u": u}, x * u.copy())'], relax),
    through_a_named_dict: ("relax(state, x * u)",
                           ["energy = np.sum(u * np.cos(x))", "relax(state, x * u)"],
                           ["energy = np.sum(u.copy() * np.cos(x))",
                            "relax(state, x * u.copy())"], relax),
    through_a_named_list: ("relax_items(items, x * u)", ["relax_items(items, x * u)"],
                           ["relax_items(items, x * u.copy())"], relax_items),
    through_a_named_tuple: ("relax_items(pair, x * u)",
                            ["before = np.sum(u * x)", "relax_items(pair, x * u)"],
                            ["before = np.sum(u.copy() * x)",
                             "relax_items(pair, x * u.copy())"], relax_items),
}
APPLIED = {through_a_dict_display: through_a_dict_display_hint_applied,
           through_a_named_dict: through_a_named_dict_hint_applied,
           through_a_named_list: through_a_named_list_hint_applied,
           through_a_named_tuple: through_a_named_tuple_hint_applied}


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences_under_save(f):
    value, grad = adgen.value_and_grad(f, mutation="save")(X.copy())
    assert_grad_close(grad, numerical_grad(f, (X,), 0))
    assert value == pytest.approx(f(X.copy()))


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_strict_refuses_naming_the_call_the_write_and_the_reads(f):
    call, reads, rewrites, helper = REFUSED[f]
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(f, mutation="strict")(X.copy())
    err = info.value
    # at the user's call that hands u over, with the helper's write under it
    assert (err.location.file, err.location.line) == (__file__, line_of(f, call))
    assert err.location.source_line.strip() == call
    write = line_of(helper, "u += 0.5 * force")
    assert (err.inner[0].file, err.inner[0].line) == (__file__, write)
    assert f"overwrites it in place at line {write} (u += 0.5 * force)" in err.message
    # the first line whose gradient reads u, and every other one
    assert (err.captured_at.file, err.captured_at.line) == (__file__, line_of(f, reads[0]))
    for text in reads:
        assert f"the gradient of line {line_of(f, text)} ({text}) reads" in err.message
    assert 'mutation="save"' in err.hint
    for text, rewrite in zip(reads, rewrites):
        assert f"line {line_of(f, text)}: {rewrite}" in err.hint


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_the_hint_applied_runs_under_strict_with_the_gradient(f, mutation):
    # the hint's rewrite, as written in REFUSED, is this function's
    applied = APPLIED[f]
    for rewrite in REFUSED[f][2]:
        line_of(applied, rewrite)
    value, grad = adgen.value_and_grad(applied, mutation=mutation)(X.copy())
    assert value == pytest.approx(f(X.copy()))
    assert_grad_close(grad, numerical_grad(f, (X,), 0))  # the original function's


def test_a_container_written_after_no_read_is_unchanged():
    # nothing read before the write: both policies differentiate it, as before
    def f(x):
        u = np.sin(x)
        relax({"u": u}, x)
        return np.sum(u ** 2)

    expected = numerical_grad(f, (X,), 0)
    for mutation in ("save", "strict"):
        assert_grad_close(adgen.grad(f, mutation=mutation)(X.copy()), expected)


def step(p, g):
    p -= 0.1 * g


def step_each(params, g):
    # hands an item of its list on to a helper that writes its array argument
    step(params[0], g)


def handed_on(x):
    w = np.sin(x)
    loss = np.sum(w ** 3)
    step_each([w], np.ones_like(x))
    return loss + np.sum(w ** 2)


def test_an_array_handed_on_by_the_helper_is_refused_where_it_is_written():
    assert_grad_close(adgen.grad(handed_on, mutation="save")(X.copy()),
                      numerical_grad(handed_on, (X,), 0))
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(handed_on, mutation="strict")(X.copy())
    err = info.value
    assert err.location.line == line_of(handed_on, "step_each([w], np.ones_like(x))")
    assert err.inner[0].line == line_of(step_each, "step(params[0], g)")
    assert err.captured_at.line == line_of(handed_on, "loss = np.sum(w ** 3)")


def fill_rows(x, v):
    for i in range(x.shape[0]):
        x[i] = 2.0 * v[i] * x[i]
    return np.sum(x ** 2)


def test_an_array_parameter_written_by_its_own_name_gets_no_guard_under_strict():
    # its caller guards the call that hands the array over: a guard at each write of the
    # loop would cost a call per element (design.md 2.2)
    text = adgen.source(fill_rows, X.copy(), X.copy(), mutation="strict")
    assert "before_write" not in text.split("def fill_rows_pullback")[0]
    expected = numerical_grad(fill_rows, (X, X), 1)
    assert_grad_close(adgen.grad(fill_rows, argnums=1, mutation="strict")(X.copy(), X), expected)
