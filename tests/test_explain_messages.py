"""explain and MutationError speak the user's code (issue 17): one row per statement, the
user's names (never SSA versions such as Z_1), and hints that work when followed."""

import re

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen


def heat(u, r, steps):
    for _ in range(steps):
        lap = u[:-2] - 2.0 * u[1:-1] + u[2:]
        u[1:-1] += r * lap
    return np.sum(u ** 2)


def standardize(Z):
    Z = Z - Z.mean(axis=0)
    Z /= Z.std(axis=0)
    return np.sum(Z ** 3)


def standardize_out_of_place(Z):  # the hint, followed
    Z = Z - Z.mean(axis=0)
    Z = Z / Z.std(axis=0)
    return np.sum(Z ** 3)


def square_then_reset(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def square_then_reset_copy(x):  # the hint, followed
    y = x * x
    x = x.copy()
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


@pytest.mark.parametrize("args", [(), (np.linspace(0, 1, 8), 0.1, 3)])
def test_one_row_per_statement(args):
    rows = adgen.explain(heat, *args, file=None)
    keys = [(r.line, r.construct) for r in rows]
    assert len(keys) == len(set(keys)), rows


def test_reasons_use_the_user_s_names():
    rows = adgen.explain(standardize, np.arange(8.0).reshape(4, 2) ** 2, file=None)
    text = " ".join(r.reason for r in rows)
    # the write overwrites Z (the user's name, not an SSA version); std's result, a fresh
    # array, is not overwritten and is not listed
    assert "may overwrite Z," in text and "Z.std(axis=0)," not in text
    assert not re.search(r"\bZ_\d", text), text


def test_a_write_that_overwrites_its_own_operand_hints_out_of_place():
    Z = np.random.default_rng(0).normal(size=(5, 2))
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(standardize, mutation="strict")(Z.copy())
    assert "Z = Z / Z.std(axis=0)" in str(info.value)
    # followed, the hint gives a function strict differentiates
    got = adgen.grad(standardize_out_of_place, mutation="strict")(Z.copy())
    assert_grad_close(got, numerical_grad(standardize, [Z], 0))


def test_the_copy_hint_works_when_followed():
    x = np.array([1.0, -2.0, 0.5])
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(square_then_reset, mutation="strict")(x.copy())
    assert "x = x.copy() before line" in str(info.value)
    got = adgen.grad(square_then_reset_copy, mutation="strict")(x.copy())
    assert_grad_close(got, 2 * x)


def recurrence(p):
    w = p.copy()
    w[1:] += w[:-1] ** 2
    return np.sum(w ** 2)


def recurrence_copy(p):
    w = p.copy()
    w[1:] += w[:-1].copy() ** 2
    return np.sum(w ** 2)


def test_a_write_overwriting_what_its_value_reads_hints_a_copy_of_that_read():
    # it hinted w[1:] = w[1:].copy() + w[:-1] ** 2, which strict refuses again: the gradient
    # reads w[:-1], not the written w[1:]
    p = np.array([0.2, -0.3, 0.4, 0.1])
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(recurrence, mutation="strict")(p.copy())
    assert "w[1:] += w[:-1].copy() ** 2" in info.value.hint
    got = adgen.grad(recurrence_copy, mutation="strict")(p.copy())
    assert_grad_close(got, numerical_grad(recurrence, [p], 0))


def fill_after_use(x):
    y = x * x
    x.fill(0.0)
    return np.sum(y) + np.sum(x)


def test_the_strict_message_in_the_mutation_guide_is_the_real_one():
    from pathlib import Path

    guide = (Path(__file__).parent.parent / "docs" / "mutation.md").read_text()
    shown = guide.split("```text\nexample.py:")[1].split("\n```")[0]
    with pytest.raises(adgen.MutationError) as info:
        adgen.grad(fill_after_use, mutation="strict")(np.array([1.0, 2.0, 3.0]))
    real = str(info.value).split(":", 1)[1]  # without the file name

    def lines_apart(text):  # the guide numbers the lines of its own snippet
        return re.sub(r"\d+", "N", text)

    assert lines_apart(real) == lines_apart(shown)


def reinterprets(x):
    y = x.view(np.float64)
    return np.sum(y * y)


def test_a_view_of_another_dtype_says_what_to_do():
    # x.view() without a dtype has a rule since a2631a3; x.view(dtype) has none
    with pytest.raises(adgen.UnsupportedError) as info:
        adgen.grad(reinterprets)(np.ones(3))
    assert "np.view" not in str(info.value)  # NumPy has no such function
    assert "y = x.view(np.float64)" in str(info.value)  # the user's line, as written
    assert "this call of numpy.ndarray.view is not differentiated" in str(info.value)
    assert "astype" in str(info.value)


def test_a_function_sent_by_value_says_where_its_source_went():
    import types

    def misfit(p):
        return np.sum(p * p)

    code = misfit.__code__.replace(co_filename="<dynamic-code>")  # as cloudpickle sends it
    shipped = types.FunctionType(code, misfit.__globals__, "misfit")
    with pytest.raises(adgen.MissingRuleError) as info:
        adgen.grad(shipped)(np.ones(2))
    assert "by value" in str(info.value) and "import" in info.value.hint
