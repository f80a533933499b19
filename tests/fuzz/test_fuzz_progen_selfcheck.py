"""The program generator and its ground-truth model, checked without the compiler.

- The model gives the verdict worked out by hand on small programs (a conflict exactly where a
  captured element is overwritten; none for linear updates, disjoint regions, fresh buffers,
  the other arm of a branch).
- Generated programs are valid Python that runs, the line numbers the model uses are the
  lines of the module, and the generator reaches every form and both verdicts.
"""

from __future__ import annotations

import collections
import inspect
from pathlib import Path

import numpy as np
import progen
import pytest
from harness import fd_grad, fd_stable
from hypothesis import HealthCheck, Phase, given, settings
from progen import (
    AddAt,
    Alias,
    Arr,
    Assign,
    AugAssign,
    Branch,
    Const,
    CopyTo,
    Elem,
    FillLoop,
    HelperCall,
    Lin,
    Method,
    Mul,
    OutCall,
    Recurrence,
    Repeat,
    Scale,
    SetItem,
    Stencil,
    Swap,
    Unary,
    Zeros,
    build,
)

L0 = progen.FIRST_BODY_LINE   # the line of the first statement of f


def sin(e):
    return Unary("sin", e, e.n)


X, Y = Arr("x", 6), Arr("y", 6)

# (id, body, expected conflicts as {(write line offset, capture line offsets)}; offsets from L0)
# Helper lines are given as ("h", name).
CASES = [
    ("mul_then_write", [Assign("v1", Mul(X, Y, 6)), SetItem("x", "0", Const(1.0))],
     {((1,), (0,))}),
    ("linear_then_write", [Assign("v1", Lin("+", X, Scale(2.0, Y, 6), 6)),
                           SetItem("x", "0", Const(1.0))], set()),
    ("region_disjoint", [Alias("v1", "x", "[3:]"), Assign("v2", sin(Arr("v1", 3))),
                         SetItem("x", "0", Const(0.5))], set()),
    ("region_overlap", [Alias("v1", "x", "[3:]"), Assign("v2", sin(Arr("v1", 3))),
                        SetItem("x", "4", Const(0.5))], {((2,), (1,))}),
    ("compound_operand_is_a_temporary", [Assign("v1", sin(Lin("-", X, Y, 6))),
                                         Method("x", "fill(0.5)")], set()),
    ("x_assign_2x", [SetItem("x", ":", Scale(2.0, X, 6))], set()),
    ("x_assign_sin_x", [SetItem("x", ":", sin(X))], {((0,), (0,))}),
    ("times_equal_const", [AugAssign("y", "*=", Const(0.5))], set()),
    ("times_equal_array", [AugAssign("y", "*=", X)], {((0,), (0,))}),
    ("tanh_output_read", [Assign("v1", Unary("tanh", X, 6)), SetItem("v1", "0", Const(0.5))],
     {((1,), (0,))}),
    ("sin_output_not_read", [Assign("v1", sin(X)), SetItem("v1", "0", Const(0.5))], set()),
    ("exp_out_self", [OutCall("exp", ("y",), "y")], {((0,), (0,))}),
    ("sin_out_other", [Zeros("v1", 6), OutCall("sin", ("x",), "v1"), Method("v1", "sort()")],
     set()),
    ("alias_name", [Alias("v1", "x"), Assign("v2", Mul(Arr("v1", 6), Y, 6)),
                    SetItem("x", "1", Const(0.5))], {((2,), (1,))}),
    ("view_write", [Assign("v1", Mul(X, Y, 6)), Alias("v2", "y", "[::2]"),
                    AugAssign("v2", "*=", Const(3.0))], {((2,), (0,))}),
    ("view_write_other_half", [Alias("v1", "y", "[1::2]"), Assign("v2", sin(Arr("v1", 3))),
                               Alias("v3", "y", "[::2]"), Method("v3", "fill(0.5)")], set()),
    ("sort_mask_swap_addat_free", [Assign("v1", Scale(2.0, X, 6)), Method("v1", "sort()"),
                                   SetItem("v1", "v1 < 0.0", Const(0.0)), Swap("v1", 0, 1),
                                   AddAt("v1", (0, 2, 2), "y")], set()),
    ("mask_after_capture", [Assign("v1", Mul(X, X, 6)), SetItem("x", "x < 0.0", Const(0.0))],
     {((1,), (0,))}),
    ("copyto_self_sin", [CopyTo("y", sin(Y))], {((0,), (0,))}),
    ("helper_alias_sin", [HelperCall("h_sin", "x", "x")],
     {((0, ("h", "h_sin")), (0, ("h", "h_sin")))}),
    ("helper_fresh_sin", [Zeros("v1", 6), HelperCall("h_sin", "v1", "x")], set()),
    ("helper_alias_axpy", [HelperCall("h_axpy", "x", "x")], set()),
    ("helper_fill_reversed_alias", [Alias("v1", "x", "[::-1]"), HelperCall("h_fill", "x", "v1")],
     set()),
    ("helper_bind_aliases", [HelperCall("h_axpy", "y", "x", bind="v1"),
                             Assign("v2", Mul(Arr("v1", 6), X, 6)), SetItem("y", "0", Const(0.5))],
     {((2,), (1,))}),
    ("fill_loop", [FillLoop("v1", 6, Mul(Elem("x", 0, True), Elem("y", 0, True)))], set()),
    ("nonlinear_recurrence", [Recurrence("v1", 6, "x", Lin("+", sin(Elem("v1", -1, True)),
                                                           Elem("x", 0, True)))], set()),
    ("stencil_left", [Stencil("x", 6, Lin("+", Elem("x", 0, True),
                                          Scale(0.1, sin(Elem("x", -1, True)))))], set()),
    ("stencil_right", [Stencil("x", 6, Lin("+", Elem("x", 0, True),
                                           Scale(0.1, sin(Elem("x", 1, True)))))],
     {((1,), (1,))}),
    ("stencil_linear", [Stencil("x", 6, Scale(0.5, Lin("+", Elem("x", -1, True),
                                                       Elem("x", 1, True))))], set()),
    ("repeat_once", [Zeros("v1", 6),
                     Repeat(1, [AugAssign("y", "+=", Const(1.0)), SetItem("v1", ":", sin(Y))])],
     set()),
    ("repeat_twice", [Zeros("v1", 6),
                      Repeat(2, [AugAssign("y", "+=", Const(1.0)), SetItem("v1", ":", sin(Y))])],
     {((2,), (3,))}),
    ("branch_arms_separate", [Zeros("v1", 6), Branch("x", [OutCall("sin", ("y",), "v1")],
                                                     [Method("y", "fill(0.5)")])],
     set()),
    ("branch_then_write", [Zeros("v1", 6),
                           Branch("x", [OutCall("sin", ("y",), "v1")], [Method("y", "fill(0.5)")]),
                           SetItem("y", "0", Const(1.0))],
     {((5,), (2,))}),
]


def _line(spec) -> int:
    if isinstance(spec, tuple):
        return progen.HELPER_LINE[spec[1]]
    return L0 + spec


@pytest.mark.parametrize("name,body,expected", CASES, ids=[c[0] for c in CASES])
def test_model_verdict(name, body, expected, tmp_path: Path) -> None:
    prog = build(body)
    got = {(tuple(sorted(c.write_lines)), tuple(sorted(c.capture_lines)))
           for c in prog.conflicts}
    want = {(tuple(sorted(_line(s) for s in w)), tuple(sorted(_line(s) for s in c)))
            for w, c in expected}
    assert got == want, f"{name}:\n{prog.source}"
    assert prog.may_need == bool(expected)
    # And the program runs as Python, with every statement on the line the model used.
    module = progen.load(prog.source, tmp_path)
    module.f(*prog.make_args())
    _assert_lines(prog)


def _assert_lines(prog: progen.Program) -> None:
    lines = prog.source.splitlines()
    line = L0
    for stmt in prog.body:
        for k, text in enumerate(stmt.lines()):
            assert lines[line - 1 + k] == "    " + text
        line += stmt.size()
    for name, at in progen.HELPER_LINE.items():
        assert lines[at - 1].startswith("    ") and ("dst" in lines[at - 1]), name


def test_helper_lines_point_at_the_helper_bodies() -> None:
    lines = progen.PREAMBLE.splitlines()
    assert lines[progen.HELPER_LINE["h_mul"] - 1].strip() == "dst *= src"
    assert lines[progen.HELPER_LINE["h_sin"] - 1].strip() == "dst[:] = np.sin(src)"
    assert lines[L0 - 2] == "def f(x, y, W):"


def test_generated_programs_run_and_cover_every_form(tmp_path_factory) -> None:
    directory = tmp_path_factory.mktemp("progen")
    forms: collections.Counter[str] = collections.Counter()
    verdicts: collections.Counter[str] = collections.Counter()
    rebuilt_differs = 0

    @settings(max_examples=300, deadline=None, database=None, derandomize=True,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(progen.programs(progen.GenConfig(branches=True, drop_terms=True)))
    def run(prog: progen.Program) -> None:
        module = progen.load(prog.source, directory)
        _assert_lines(prog)
        assert inspect.getsource(module.f).startswith("def f(x, y, W):")
        args = prog.make_args()
        out = module.f(*args)
        assert np.isfinite(out), prog.source
        assert abs(out) < 1e4, "the bounds of the generator let values grow"
        forms.update(prog.forms)
        # The verdict is a function of the program text: rebuilding it gives the same one.
        nonlocal rebuilt_differs
        rebuilt_differs += build(prog.body, prog.seed, prog.terms).conflicts != prog.conflicts
        verdicts["needed" if prog.may_need else "free"] += 1
        fine = fd_grad(module.f, args, (0, 1, 2))
        verdicts["stable" if fd_stable(fine, fd_grad(module.f, args, (0, 1, 2), 1e-4))
                 else "kink"] += 1

    run()
    assert rebuilt_differs == 0, "the model depends on more than the program's statements"
    every = {"assign", "alias", "zeros", "setitem", "mask", "augassign", "method", "copyto",
             "out=", "add.at", "fancy-swap", "helper", "fill-loop", "recurrence", "stencil",
             "repeat-loop", "loop-else", "branch", "fancy-set", "out=view", "helper-twice"}
    assert every <= set(forms), f"never generated: {every - set(forms)}"
    assert verdicts["needed"] >= 30 and verdicts["free"] >= 30, verdicts
    assert verdicts["kink"] <= 30, verdicts   # most programs are usable


# ---------------------------------------------------------------------------------------------
# check_program itself, with stand-ins for adgen: an oracle that is right (finite differences,
# then the plain call's effects), and broken ones that check_program must catch.

class _MutationError(Exception):
    pass


class _Oracle:
    """Right by construction: central differences, and the arguments mutated as f does."""

    MutationError = _MutationError

    def __init__(self, scale: float = 1.0, strict_raises: bool = False,
                 skip_effects: bool = False) -> None:
        self.scale = scale
        self.strict_raises = strict_raises
        self.skip_effects = skip_effects
        self.message = ""

    def grad(self, f, argnums, mutation):
        def g(*args):
            if mutation == "strict" and self.strict_raises:
                raise _MutationError(self.message)
            grads = fd_grad(f, args, argnums)
            if not self.skip_effects:
                f(*args)
            return tuple(self.scale * gr for gr in grads)
        return g

    def vjp(self, f, *args, mutation="save"):
        grads = fd_grad(f, args, tuple(range(len(args))))
        out = f(*args)
        return out, lambda out_bar: tuple(out_bar * gr for gr in grads)


def _programs(n: int) -> list[progen.Program]:
    found: list[progen.Program] = []

    @settings(max_examples=n, deadline=None, database=None, derandomize=True,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(progen.programs(progen.GenConfig(max_stmts=4, branches=True)))
    def collect(prog: progen.Program) -> None:
        found.append(prog)

    collect()
    return found


def test_check_program_accepts_a_right_oracle_and_catches_wrong_ones(tmp_path: Path) -> None:
    programs = _programs(40)
    usable = 0
    for prog in programs:
        verdict = progen.run(prog, tmp_path, reuse=True, ad=_Oracle())
        if verdict.rejected:
            continue
        usable += 1
        touches_grad = any(np.any(np.asarray(g) != 0)
                           for g in fd_grad(progen.load(prog.source, tmp_path).f,
                                            prog.make_args(), (0, 1, 2)))
        if touches_grad:
            with pytest.raises(AssertionError, match="gradient"):
                # (beyond the tolerance of a program with float16/float32 buffers)
                progen.run(prog, tmp_path, ad=_Oracle(scale=1.0 + max(0.01, 3 * prog.rtol)))
        mutates_args = any(isinstance(s, (SetItem, AugAssign, Method, CopyTo, OutCall, AddAt,
                                          Swap, HelperCall, Stencil, Repeat, Branch))
                           for s in prog.body)
        if mutates_args and _changes_args(prog, tmp_path):
            with pytest.raises(AssertionError, match="final contents"):
                progen.run(prog, tmp_path, ad=_Oracle(skip_effects=True))
        # A MutationError is accepted only where the model finds a conflict, and only if it
        # names a write line and a capture line of one.
        liar = _Oracle(strict_raises=True)
        if prog.may_need:
            c = prog.conflicts[0]
            file = Path(progen.load(prog.source, tmp_path).__file__).name
            liar.message = (f"{file}:{min(c.write_lines)}:4: overwrites a value read at line "
                            f"{min(c.capture_lines)}")
            assert progen.run(prog, tmp_path, ad=liar).strict_raised
            liar.message = f"{file}:1:0: overwrites a value"
            with pytest.raises(AssertionError, match="does not name both lines"):
                progen.run(prog, tmp_path, ad=liar)
        else:
            with pytest.raises(AssertionError, match="no value the backward pass needs"):
                progen.run(prog, tmp_path, ad=liar)
    assert usable >= 30


def _changes_args(prog: progen.Program, tmp_path: Path) -> bool:
    args = prog.make_args()
    after = [a.copy() for a in args]
    progen.load(prog.source, tmp_path).f(*after)
    return any(not np.array_equal(a, b) for a, b in zip(args, after))
