"""Reads of a local that Python finds unbound raise ``UnboundLocalError`` under adgen too.

The SSA gave every name a value on every path (None before a loop that may run no
iteration, or after an ``if`` without an ``else``), so ``x[j] = 0.0`` after ``for j in
range(0)`` wrote the whole of ``x`` and ``np.sum(y)`` of a ``y`` bound in one arm computed on
None: a number (or a TypeError) where Python raises. The ``unbound`` pass
(``transforms/unbound.py``) checks such reads where the code as written cannot prove them
bound, and only there. Each case is compared with a plain call; the paths that bind the name
are checked against central differences.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from gradcheck import assert_grad_close, check_grad, numerical_grad, numerical_jvp

import adgen

MESSAGE = "cannot access local variable '{}' where it is not associated with a value"


def zero_last(x, n):
    for j in range(n - 1):
        x = x * 2.0
    x[j] = 0.0  # n <= 1: j is unbound
    return np.sum(x * x)


def one_armed(x, c):
    if c > 0.0:
        y = np.sin(x)
    return np.sum(y * x)


def while_may_not_run(x, n):
    k = 0
    while k < n:
        y = np.cos(x) * (k + 1.0)
        k += 1
    return np.sum(y * y)


def broke_out(x, c):
    for i in range(3):
        if x[i] > c:
            z = x[i]
            break
    return z * np.sum(x)


def handled(x, c):
    try:
        if c:
            raise ValueError("no y")
        y = np.exp(x)
    except ValueError:
        pass
    return np.sum(y)


def sh(x, c):  # a user name the generated code reserves: renamed inside, spelled as written
    if c:
        sh = x * 3.0
    return np.sum(sh)


class Model:
    def __init__(self, w):
        self.w = w

    def loss(self, x, steps):
        for t in range(steps):
            h = np.tanh(self.w * x + t)
        return np.sum(h * h)


# (function, arguments where Python raises, arguments where the name is bound, the name)
CASES = [
    (zero_last, (1,), (3,), "j"),
    (one_armed, (-1.0,), (2.0,), "y"),
    (while_may_not_run, (0,), (2,), "y"),
    (broke_out, (5.0,), (0.5,), "z"),
    (handled, (True,), (False,), "y"),
    (sh, (False,), (True,), "sh"),
]


def _x():
    return np.array([0.3, -0.7, 1.1])


def _raises_like_python(call, name):
    with pytest.raises(UnboundLocalError, match=MESSAGE.format(name)) as err:
        call()
    return str(err.value)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_unbound_read_raises_as_python_does(case, mutation):
    f, bad, _, name = case
    _raises_like_python(lambda: f(_x(), *bad), name)  # the plain call: the reference
    message = _raises_like_python(
        lambda: adgen.grad(f, mutation=mutation)(_x(), *bad), name)
    assert __file__ in message  # the user's file and line are named
    _raises_like_python(lambda: adgen.value_and_grad(f, mutation=mutation)(_x(), *bad), name)
    _raises_like_python(lambda: adgen.vjp(f, _x(), *bad), name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_unbound_read_raises_in_forward_and_second_order(case):
    f, bad, _, name = case
    _raises_like_python(lambda: adgen.jvp(lambda x: f(x, bad[0]), (_x(),), (np.ones(3),)), name)
    _raises_like_python(lambda: adgen.hessian(lambda x: f(x, bad[0]))(_x()), name)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_bound_paths_keep_their_gradients(case, mutation):
    f, _, good, _ = case
    check_grad(f, (_x(), *good), grad=lambda g, argnums: adgen.grad(g, argnums=argnums,
                                                                     mutation=mutation))
    value, grad = adgen.value_and_grad(f, mutation=mutation)(_x(), *good)
    assert value == pytest.approx(f(_x(), *good))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_bound_paths_forward_and_second_order(case):
    f, _, good, _ = case
    v = np.array([0.2, -0.5, 0.4])
    _, tangent = adgen.jvp(lambda x: f(x, good[0]), (_x(),), (v,))
    assert_grad_close(np.ravel(tangent), numerical_jvp(f, (_x(), *good), (v, None)))
    # (handled's hessian was refused until session 29, "the except arm reads ...": its jvp
    # code binds y to Unbound before the try, which binds y last, transforms/ssa.py)
    h = adgen.hessian(lambda x: f(x, good[0]))(_x())
    g = adgen.grad(lambda x: f(x, good[0]))
    assert_grad_close(h @ v, numerical_grad(lambda x: g(x) @ v, (_x(),), 0), atol=1e-5)


def test_a_method_whose_loop_may_not_run():
    m = Model(0.5)
    with pytest.raises(UnboundLocalError, match=MESSAGE.format("h")):
        m.loss(_x(), 0)
    with pytest.raises(UnboundLocalError, match=MESSAGE.format("h")):
        adgen.grad(m.loss)(_x(), 0)
    check_grad(m.loss, (_x(), 3))


def test_a_name_from_an_earlier_iteration_is_checked_and_passes():
    """``prev`` is read before the body binds it, in an arm that the first iteration skips:
    Python never finds it unbound, and the check in the arm never fires."""

    def chain(x):
        s = 0.0
        for i in range(3):
            if i > 0:
                s = s + prev * x[i]  # noqa: F821 - bound by the previous iteration
            prev = np.sin(x[i])  # noqa: F841 - read by the next iteration
        return s

    check_grad(chain, (_x(),))
    check_grad(chain, (_x(),), grad=lambda g, argnums: adgen.grad(g, argnums=argnums,
                                                                   mutation="strict"))


def bound_everywhere(x, c):
    if c:
        return np.sum(x)
    else:
        y = x * 2.0
    for i in range(3):
        if x[i] > 10.0:
            z = x[i]
            break
    else:
        z = 1.0
    while True:
        w = z * y
        break
    return np.sum(w)


def test_reads_that_are_bound_on_every_path_get_no_check():
    """Definite assignment on the code as written: an early return, a for-else, a
    ``while True`` left by break; the generated code is what it was before the pass."""
    for c in (True, False):
        check_grad(bound_everywhere, (_x(), c))
        assert "Unbound" not in adgen.source(bound_everywhere, _x(), c)


def test_the_check_sits_at_the_read():
    src = adgen.source(zero_last, _x(), 3)
    forward = src.split("def zero_last_pullback")[0]
    assert forward.count("is Unbound") == 1
    assert "j = Unbound" in forward


def test_numba_runs_it_and_raises_as_python_does():
    # since session 20 (transforms/numba_unbound.py) the numba backend keeps a flag beside a
    # local bound on some paths only (here the loop's index, used as a number): the gradient
    # where it is bound, Python's UnboundLocalError where it is not; it refused the function
    # at the line before ("may be unbound where this line reads it")
    pytest.importorskip("numba")
    g = adgen.grad(zero_last, backend="numba")(_x(), 3)
    assert_grad_close(g, numerical_grad(zero_last, (_x(), 3), 0))
    with pytest.raises(UnboundLocalError, match="'j'"):
        adgen.grad(zero_last, backend="numba")(_x(), 1)
    assert_grad_close(adgen.grad(zero_last, backend="auto")(_x(), 3), g)


def test_standalone_module_raises_as_python_does(tmp_path):
    """``adgen user.py -f NAME -o OUT.py``: the module holds the sentinel and the check."""
    (tmp_path / "user.py").write_text(textwrap.dedent('''
        import numpy as np


        def last_row(x, n):
            for j in range(n):
                x = x * 2.0
            x[j] = 0.0
            return np.sum(x)
    '''))
    r = subprocess.run([sys.executable, "-m", "adgen", "user.py", "-f", "last_row", "-o",
                        "adjoint.py"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert "import adgen" not in (tmp_path / "adjoint.py").read_text()
    runner = textwrap.dedent('''
        import numpy as np
        import adjoint
        out, saved = adjoint.last_row_forward(np.ones(3), 2)
        print(out, adjoint.last_row_pullback(saved, 1.0)[0].tolist())
        try:
            adjoint.last_row_forward(np.ones(3), 0)
        except UnboundLocalError as err:
            print("raised:", err)
    ''')
    r = subprocess.run([sys.executable, "-c", runner], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    # x * 4 with x[1] zeroed (j = 1): the sum is 8, the gradient 4 but at the zeroed item
    assert first == "8.0 [4.0, 0.0, 4.0]"
    assert second.startswith("raised: " + MESSAGE.format("j")) and "user.py, line 8" in second


def closure_of_one_arm(x, c):
    def scaled():
        return y * x

    if c > 0.0:
        y = np.sin(x)
    return np.sum(scaled())


def closure_of_a_loop_counter(x, n):
    def pick():
        return x[j]

    for j in range(n):
        pass
    return np.sum(pick() * x)


@pytest.mark.parametrize("f, bad, good", [(closure_of_one_arm, -1.0, 1.0),
                                          (closure_of_a_loop_counter, 0, 2)],
                         ids=["one_arm", "loop_counter"])
def test_a_nested_def_reading_an_unbound_variable(f, bad, good):
    """Python raises NameError (cannot access free variable) when the nested def reads it;
    the closure cell held None (the forward pre-binds what it saves), so scaled() computed
    None * x, and x[None] for j summed all of x. adgen raises NameError (UnboundLocalError
    in forward mode: a subclass) at the call."""
    with pytest.raises(NameError, match="free variable"):
        f(_x(), bad)
    with pytest.raises(NameError, match="free variable"):
        adgen.grad(f)(_x(), bad)
    with pytest.raises(NameError):
        adgen.jvp(lambda x: f(x, bad), (_x(),), (np.ones(3),))
    with pytest.raises(NameError):
        adgen.hessian(lambda x: f(x, bad))(_x())
    check_grad(f, (_x(), good))


def read_under_the_same_test(x, c):
    if c:
        y = np.sin(x)
    if c:
        return np.sum(y * x)
    return np.sum(x * x)


def read_after_a_loop_when_it_ran(x, n):
    for i in range(n):
        y = x * (i + 1.0)
    if n > 0:
        return np.sum(y * y)
    return np.sum(x)


@pytest.mark.parametrize("f, args", [(read_under_the_same_test, (True,)),
                                     (read_under_the_same_test, (False,)),
                                     (read_after_a_loop_when_it_ran, (0,)),
                                     (read_after_a_loop_when_it_ran, (3,))],
                         ids=["same_test-bound", "same_test-unbound", "loop-none", "loop-ran"])
@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_sentinel_reaches_the_pullback_unread(f, args, mutation):
    """Where the name stays unbound and no read runs, the forward holds runtime.Unbound
    (saved, carried by the loop header) and the pullback meets it (zeros_like, or_zeros):
    no error, and the gradient of the path that ran."""
    check_grad(f, (_x(), *args), grad=lambda g, argnums: adgen.grad(g, argnums=argnums,
                                                                     mutation=mutation))
    h = adgen.hessian(lambda x: f(x, *args), mutation=mutation)(_x())
    g = adgen.grad(lambda x: f(x, *args))
    v = np.array([0.2, -0.5, 0.4])
    assert_grad_close(h @ v, numerical_grad(lambda x: g(x) @ v, (_x(),), 0), atol=1e-5)
