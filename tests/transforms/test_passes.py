"""Each pass's invariants hold on a corpus of functions, checked after every pass."""

import math

import gast
import numpy as np
import pytest
from adgen.transforms.front import front
from adgen.transforms.pipeline import PASS_NAMES, stage_source
from adgen.transforms.verify import verify
from gradcheck import numerical_grad

import adgen
from adgen.errors import CompilerError


def straight(x, y):
    a = x * y + np.sin(x)
    b, c = a, a * 2.0
    return np.sum(b * c)


def branches(x, k):
    if k > 2 and x[0] > 0:
        y = x * 2.0
    elif k == 1 or k == 0:
        y = -x
    else:
        y = x ** 2
    z = y if k else y * 3.0
    return np.sum(z)


def loops(x, n):
    s = 0.0
    for i in range(n):
        if i == 3:
            continue
        if s > 100.0:
            break
        s += x[i] ** 2
    j = 0
    while j < n and s < 1e6:
        s = s * 1.01
        j += 1
    return s


def early(x):
    for v in x:
        if v > 10.0:
            return v
    return 0.0


def comprehensions(xs):
    ys = [math.sin(v) for v in xs if v > 0]
    d = {i: v * 2.0 for i, v in enumerate(xs)}
    return sum(ys) + d[0]


def iterate(xs, ws):
    total = 0.0
    for i, (a, b) in enumerate(zip(xs, ws)):
        total += a * b * i
    return total


def mutating(x):
    h = np.empty(3)
    h.fill(1.0)
    np.multiply(x, 2.0, out=h)
    h[1] += x[0]
    h.sort()
    np.copyto(h, h * 2.0)
    return np.sum(h)


def trying(x):
    try:
        y = math.sqrt(x)
    except ValueError:
        y = 0.0
    return y


def nested(x, n):
    acc = x
    for i in range(n):
        for j in range(n):
            acc = acc * 1.5 + j
    return acc


def loop_else(x):
    for i in range(2):
        x = x * 2.0
    else:
        x = x + 1.0
    k = 0
    while k < 2:
        k += 1
    else:
        x = x * 3.0
    return x


def loop_else_with_break(x):
    for i in range(3):
        if x > 10.0:
            break
        x = x * 2.0
    else:
        x = x - 1.0
    return x


CORPUS = [straight, branches, loops, early, comprehensions, iterate, mutating, trying, nested]
# (not in CORPUS: the reverse stage's dump of a loop taping one value shows a 1-tuple per row,
# which the compiled forward no longer has: dead_columns runs after the dump)
LOOP_ELSE = [loop_else, loop_else_with_break]


@pytest.mark.parametrize("fn", CORPUS + LOOP_ELSE, ids=lambda f: f.__name__)
@pytest.mark.parametrize("stage", ["lower_control", "desugar", "anf", "lower_mutation", "ssa"])
def test_invariants_after_each_pass(fn, stage):
    _, tree, _, _ = front(fn, stop=stage if stage != "ssa" else None)
    verify(stage, tree)


def test_verifier_catches_a_broken_invariant():
    # Stopping before ANF leaves nested expressions: the ANF check must reject them.
    _, tree, _, _ = front(straight, stop="desugar")
    with pytest.raises(CompilerError, match="after pass 'anf'"):
        verify("anf", tree)


def test_verifier_catches_a_loop_else_arm_left_in_place():
    # the else arm of a loop left where it was (lower_control's early return before 465cbb4)
    _, tree, _, _ = front(straight, stop="lower_control")
    loop = gast.parse("for i in range(2):\n    pass\nelse:\n    y = 1.0").body[0]
    tree.body.insert(0, loop)
    with pytest.raises(CompilerError, match="else arm survived"):
        verify("lower_control", tree)


def test_a_crash_in_forward_modes_pass_is_a_compiler_error_naming_it(monkeypatch):
    # the tangent pass is not in PASS_NAMES (forward mode has its own last passes): a crash
    # there must still be a CompilerError naming the pass, not a ValueError from the message
    from adgen.transforms import tangent

    def crash(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(tangent, "tangent_code", crash)

    def fresh(x):
        return x * 2.0

    with pytest.raises(CompilerError, match=r"internal error in pass 'tangent'.*KeyError"):
        adgen.jvp(fresh, (1.0,), (1.0,))


def test_stage_source_names_every_pass():
    for stage in PASS_NAMES:
        if stage in ("reverse", "cleanup"):
            continue
        assert "def straight" in stage_source(straight, stage)
    with pytest.raises(ValueError, match="the passes are"):
        stage_source(straight, "no-such-pass")


def test_ssa_gives_loop_carried_names_one_binding_per_iteration():
    src = stage_source(nested, "ssa")
    # the accumulator is carried in a header version copied at the end of the body
    assert "acc_" in src


def _scale_in_place(a):
    a *= 2.0
    return a


def calls_a_mutating_helper(x):
    y = x * x
    _scale_in_place(x)
    return np.sum(y) + np.sum(x)


@pytest.mark.parametrize("fn", CORPUS + [calls_a_mutating_helper], ids=lambda f: f.__name__)
def test_reverse_stage_is_the_compiled_code_before_cleanup(fn):
    # cleanup rewrites the pullback only: the forward the dump shows is the one that runs
    from adgen.transforms.pipeline import compile_function

    from adgen.errors import AdgenError

    try:
        compiled = compile_function(fn).own_source.split("\n\ndef ")[0]
    except AdgenError as err:  # (iterate: enumerate(zip(...)) has no rule)
        with pytest.raises(type(err)):
            stage_source(fn, "reverse")
        return
    dumped = stage_source(fn, "reverse").split("\n\ndef ")[0]
    assert dumped == compiled


def repeated_tanh(x):
    # each iteration tapes one value (h after tanh): a row of one column
    h = x.copy()
    for _ in range(3):
        h = np.tanh(h)
    return np.sum(h)


def _tape_lines(text):
    return [line.strip() for line in text.splitlines()
            if ".append(" in line or "in reversed(" in line]


def test_reverse_stage_shows_a_row_of_one_column_as_the_compiled_code_has_it():
    # the compiled code records the value itself, not a 1-tuple: the dump shows the same
    from adgen.transforms.pipeline import compile_function

    dumped = stage_source(repeated_tanh, "reverse")
    compiled = compile_function(repeated_tanh).own_source
    assert _tape_lines(dumped) == _tape_lines(compiled)
    assert _tape_lines(dumped) == ["tape1.append(h_2)", "for h_2 in reversed(tape1):"]
    assert dumped.split("\n\ndef ")[0] == compiled.split("\n\ndef ")[0]
    # and the code shown is right: the gradient against central differences
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(adgen.grad(repeated_tanh)(x),
                               numerical_grad(repeated_tanh, (x,), 0), rtol=1e-6)
