"""The code compiled for any arguments (no signature: callees, the CLI without ``--args``,
``-o`` standalone modules) uses what the function itself makes: ``np.empty((x.shape[0], 3))``
is a matrix whatever ``x`` is (analyses.kinds), so ``h ** 2`` is kept as its shape; and a
row ``x[i]`` of a parameter of unknown kind that nothing writes later is read again by the
pullback instead of taped (values_again.final_value).

Gradients against central differences under both policies, through a callee (compiled
without a signature), a lambda, a method and the standalone module; the near misses (a list
item stored after the read, an array row written after it) keep their tapes and are right."""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import front
from adgen.transforms.analyses.kinds import kinds
from gradcheck import check_grad, numerical_grad

import adgen

POLICIES = ["save", "strict"]


def _pullback_code(f):
    """The statements of f's pullback for any arguments, without the comments."""
    src = adgen.source(f).split(f"def {f.__name__}_pullback")[1]
    return "\n".join(line for line in src.splitlines() if not line.strip().startswith("#"))


def fill_rows(w, x):
    h = np.empty((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        h[i] = np.tanh(x[i] @ w)
    return np.sum(h ** 2)


def calls_fill_rows(w, x):
    return fill_rows(w, x) * 2.0  # fill_rows compiles without a signature


def sum_of_items(xs, w):
    s = 0.0
    for i in range(len(xs)):
        s = s + np.sum(np.sin(xs[i] * w))
    return s


def calls_sum_of_items(xs, w):
    return sum_of_items(xs, w)


def item_stored_after(xs, w):
    s = 0.0
    for i in range(len(xs)):
        r = xs[i]
        s = s + np.sum(np.sin(r * w))
        xs[i] = r * 3.0  # the list's item replaced after the read: r must be taped
    return s + np.sum(xs[0] * w)


def row_written_after(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        r = x[i]
        s = s + np.sum(np.tanh(r * w))
        x[i] = r * r  # the row overwritten after the read
    return s + np.sum(x * w)


def calls_row_written_after(x, w):
    return row_written_after(x.copy(), w)


def test_a_shape_display_gives_the_rank_whatever_its_items():
    parsed, tree, _namer, _headers = front.front(fill_rows)
    known = kinds(tree, {}, lambda node: front.resolve(parsed, node))
    assert known["h"] == 2, known

    def starred(x, s):
        return np.zeros((*s, 2)) + x  # the look-alike: a starred item, rank unknown

    parsed, tree, _namer, _headers = front.front(starred)
    known = kinds(tree, {}, lambda node: front.resolve(parsed, node))
    assert not any(isinstance(k, int) and k >= 2 for k in known.values()), known


def test_the_printed_code_keeps_no_row_and_no_square():
    src = adgen.source(fill_rows)  # for any arguments
    ret = [line for line in src.splitlines() if line.strip().startswith("return (")][0]
    assert "t10" not in ret.split(", (", 1)[1], src  # h ** 2 is not kept (nor its shape)
    assert "out_bar * 2 * h" in src, src  # the sum's adjoint scales h as a number
    assert "t7 = x[i]" in src.split("def fill_rows_pullback")[1], src
    assert "t7" not in src.split("def fill_rows_pullback")[0], src


@pytest.mark.parametrize("mutation", POLICIES)
def test_rows_read_again_through_a_callee(mutation):
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((3, 2)), rng.standard_normal((4, 3)))
    grad = lambda f, argnums: adgen.grad(f, argnums, mutation=mutation)  # noqa: E731
    check_grad(calls_fill_rows, args, (0, 1), grad=grad)
    check_grad(lambda w, x: calls_fill_rows(w, x), args, (0, 1), grad=grad)  # noqa: E731

    class Model:
        def loss(self, w, x):
            return fill_rows(w, x)

    check_grad(Model().loss, args, (0, 1), grad=grad)


@pytest.mark.parametrize("mutation", POLICIES)
def test_items_of_a_list_read_again(mutation):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(3) for _ in range(4)]
    w = rng.standard_normal(3)
    assert "= xs[i]" in _pullback_code(sum_of_items)
    got = adgen.grad(calls_sum_of_items, (0, 1), mutation=mutation)(xs, w)
    want = (np.cos(np.array(xs) * w) * w, np.sum(np.cos(np.array(xs) * w) * np.array(xs), 0))
    for g, x in zip(got[0], want[0]):
        np.testing.assert_allclose(g, x, rtol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)


@pytest.mark.parametrize("mutation", POLICIES)
def test_near_misses_keep_their_tapes(mutation):
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal(3) for _ in range(3)]
    w = rng.standard_normal(3)
    assert "= xs[i]" not in _pullback_code(item_stored_after)
    # (a callee writing a list argument by index is refused: differentiated directly)
    got = adgen.grad(item_stored_after, 1, mutation=mutation)(list(xs), w)
    np.testing.assert_allclose(got, numerical_grad(item_stored_after, (xs, w), 1), rtol=1e-6)
    args = (rng.standard_normal((4, 3)), rng.standard_normal(3))
    assert "= x[i]" not in _pullback_code(row_written_after)
    if mutation == "strict":  # r, a view of the row, is overwritten while the gradient needs it
        with pytest.raises(adgen.MutationError):
            adgen.grad(calls_row_written_after, (0, 1), mutation=mutation)(*args)
        return
    check_grad(calls_row_written_after, args, (0, 1))


def test_the_standalone_module_runs_and_is_right():
    from adgen.transforms.standalone import standalone_module

    rng = np.random.default_rng(3)
    args = (rng.standard_normal((3, 2)), rng.standard_normal((4, 3)))
    ns: dict = {}
    exec(compile(standalone_module(fill_rows), "<standalone>", "exec"), ns)  # noqa: S102
    out, saved = ns["fill_rows_forward"](*args)
    w_bar, x_bar = ns["fill_rows_pullback"](saved, 1.0)
    np.testing.assert_allclose(out, fill_rows(*args))
    np.testing.assert_allclose(w_bar, numerical_grad(fill_rows, args, 0), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(x_bar, numerical_grad(fill_rows, args, 1), rtol=1e-6,
                               atol=1e-8)
