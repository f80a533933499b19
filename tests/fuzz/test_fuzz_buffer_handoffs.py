"""Random programs where a helper of the user's writes an array in place, and the array reaches
it in each of the ways users hand one over.

Each program is ``def f(x)`` on a float64 vector of length 5. It makes a buffer (a copy or a
function of ``x``, zeros, or ``x`` itself) and, one to three times, hands it to a module-level
helper that writes it in place (``a[1:4] = ...``, ``+=``, ``*=``, ``np.multiply(a, v, out=a)``,
``a.fill(...)``, an element store reading ``a``): by position, by keyword, inside a list, tuple
or dict display made at the call, through a closure, a lambda, a ``functools.partial`` (by
position or keyword), a bound method of an object holding it, as ``out=`` of the user's
function, as a view (``buf[1:]``), through a helper passing it on by keyword, unpacked from
``*args``, ``**{...}`` or ``*(display)``, forwarded by a helper's own ``*rest``, or returned by
the helper that wrote it. The caller reads the buffer before and/or after each hand-off, and returns a sum of
what it read.

The session's four families of silent wrong gradients were all here (keyword, display,
closure/lambda/partial, method and out=). The property: under ``mutation="save"`` the gradient
equals central differences, or adgen raises an adgen error naming the program's file; under
``"strict"`` the same (a refusal is acceptable, a wrong number never is). The value and the
argument's final state match a plain call. An internal CompilerError is a failure.

Found by it: an array in a dict (or named list/tuple) handed to a helper that writes it, when
something read it before (``wd_iadd({'a': buf}, x * buf)``): the capture of ``buf`` was never
saved, wrong under both policies (tests/e2e/test_containers_written_after_a_read.py). Many
programs are refused (closures, lambdas and methods of an object the function makes handing a
buffer to a writing helper): a refusal must name the program's file. A partial made once at
the top of ``f`` and only called (``op = functools.partial(w, buf)``) is differentiated since
session 16 (transforms/bound_callees.py); made twice, it is refused. List and tuple displays
at the call, ``*args`` of a tuple bound once, ``*(display)`` and ``**{...}`` are differentiated
since session 16 (the display is named before the call, the starred items spelled out:
display_arguments.py, star_arguments.py), which ``test_displays_and_starred_arguments_are_followed``
checks for every write. Found by the ``forwarded_star`` form: ``def wf(a, *rest): w(a, *rest)``
gave a silently wrong gradient under both policies (refused at that call since session 16).

CI: a bounded campaign (``progen.campaign_settings``); ``ADGEN_FUZZ=long`` runs thousands.
"""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import progen
import pytest
from gradcheck import assert_grad_close, numerical_grad
from hypothesis import given
from hypothesis import strategies as st

import adgen
from adgen.errors import AdgenError, CompilerError

N = 5
_COUNTER = itertools.count()

# the in-place writes of a helper, of its array ``{a}`` and a value ``{v}`` (same length)
WRITES = {
    "setitem": "{a}[1:4] = np.sin({v}[0:3]) * 1.5",
    "iadd": "{a} += 0.5 * {v}",
    "imul": "{a} *= np.cos({v})",
    "out": "np.multiply({a}, {v}, out={a})",
    "fill": "{a}.fill(np.sum({v}) * 0.25)",
    "elem": "{a}[0] = {a}[2] * {v}[1] + {a}[0]",
}

# how the buffer reaches the helper: the caller's lines, with {k} the write, {b} the buffer and
# {v} the value handed with it
FORMS = {
    "positional": ["w_{k}({b}, {v})"],
    "keyword": ["w_{k}(v={v}, a={b})"],
    "list": ["ws_{k}([{b}], {v})"],
    "tuple": ["ws_{k}(({b}, {v}), {v})"],
    "dict": ["wd_{k}({{'a': {b}}}, {v})"],
    "closure": ["def op(v):", "    w_{k}({b}, v)", "op({v})"],
    "lambda": ["op = lambda v: w_{k}({b}, v)", "op({v})"],
    "partial": ["op = functools.partial(w_{k}, {b})", "op({v})"],
    "partial_keyword": ["op = functools.partial(w_{k}, a={b})", "op(v={v})"],
    "method": ["h = Holder({b})", "h.m_{k}({v})"],
    "method_self": ["Holder({b}).own_{k}({v})"],
    "out_keyword": ["wo_{k}({v}, out={b})"],
    "view": ["w_{k}({b}[1:], ({v})[1:])"],
    "nested_keyword": ["wn_{k}({b}, {v})"],
    "star_display": ["w_{k}(*({b}, {v}))"],
    "forwarded_star": ["wf_{k}({b}, {v})"],
    "star": ["args = ({b}, {v})", "w_{k}(*args)"],
    "kwargs": ["w_{k}(**{{'a': {b}, 'v': {v}}})"],
    "returned": ["out = wr_{k}({b}, {v})", "acc = acc + np.sum(out * x)"],
}

BUFFERS = {
    "copy": "x * 1.0",
    "sin": "np.sin(x)",
    "zeros": "np.zeros_like(x)",
    "arg": "x",
}

VALUES = ["x", "np.cos(x)", "buf", "x * buf"]


def helpers_source() -> str:
    lines = ["import functools", "", "import numpy as np", ""]
    for k, w in WRITES.items():
        lines += ["", f"def w_{k}(a, v):", "    " + w.format(a="a", v="v")]
        lines += ["", f"def ws_{k}(ps, v):", "    a = ps[0]", "    " + w.format(a="a", v="v")]
        lines += ["", f"def wd_{k}(d, v):", "    a = d['a']", "    " + w.format(a="a", v="v")]
        lines += ["", f"def wo_{k}(v, out=None):", "    " + w.format(a="out", v="v")]
        lines += ["", f"def wf_{k}(a, *rest):", f"    w_{k}(a, *rest)"]
        lines += ["", f"def wn_{k}(a, v):", f"    w_{k}(v=v, a=a)"]
        lines += ["", f"def wr_{k}(a, v):", f"    w_{k}(a, v)", "    return a"]
    lines += ["", "", "class Holder:", "    def __init__(self, a):", "        self.a = a"]
    for k, w in WRITES.items():
        lines += ["", f"    def m_{k}(self, v):", f"        w_{k}(self.a, v)"]
        lines += ["", f"    def own_{k}(self, v):", "        " + w.format(a="self.a", v="v")]
    return "\n".join(lines) + "\n"


@st.composite
def handoff_programs(draw: st.DrawFn) -> str:
    """The source of a module defining the helpers and ``f(x)``."""
    body = [f"buf = {BUFFERS[draw(st.sampled_from(sorted(BUFFERS)))]}", "acc = 0.0"]
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.sampled_from(sorted(WRITES)))
        form = draw(st.sampled_from(sorted(FORMS)))
        v = draw(st.sampled_from(VALUES))
        if draw(st.booleans()):
            body.append("acc = acc + np.sum(buf * np.cos(x))")
        body += [line.format(k=k, b="buf", v=v) for line in FORMS[form]]
        if draw(st.booleans()):
            body.append("acc = acc + np.sum(buf * x)")
    body.append("return acc + np.sum(buf ** 2)")
    return helpers_source() + "\n\ndef f(x):\n" + "".join(f"    {s}\n" for s in body)


def _load(source: str, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("handoffs") / f"handoff_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def check_program(source: str, x0: np.ndarray, mutation: str, tmp_path_factory) -> None:
    f = _load(source, tmp_path_factory)
    plain = x0.copy()
    expected_value = f(plain)
    ours = x0.copy()
    try:
        value, grad = adgen.value_and_grad(f, mutation=mutation)(ours)
    except CompilerError:
        raise
    except AdgenError as err:
        # a refusal is acceptable; it names the user's file
        assert f.__code__.co_filename in str(err), f"refusal not at the user's file: {err}\n{source}"
        return
    try:
        assert_grad_close(grad, numerical_grad(f, (x0,), 0), rtol=1e-5, atol=1e-6)
    except AssertionError as err:
        raise AssertionError(f"{err}\ngradient under {mutation!r} of\n{source}") from None
    np.testing.assert_allclose(value, expected_value, rtol=1e-10, err_msg=source)
    np.testing.assert_allclose(ours, plain, rtol=1e-12, err_msg=f"x after the call of\n{source}")


@progen.campaign_settings(ci_examples=80)
@given(source=handoff_programs(), mutation=st.sampled_from(["save", "strict"]),
       seed=st.integers(0, 2**16))
def test_fuzz_buffer_handed_to_a_writing_helper(source, mutation, seed, tmp_path_factory,
                                                shrink_budget) -> None:
    x0 = np.random.default_rng(seed).uniform(0.3, 1.2, N)
    check_program(source, x0, mutation, tmp_path_factory)


def test_every_write_and_form_is_generated() -> None:
    """The grammar's helpers compile as Python, and each form names a helper it defines."""
    namespace: dict = {}
    exec(compile(helpers_source(), "<helpers>", "exec"), namespace)
    for k in WRITES:
        for form in FORMS.values():
            for line in form:
                for name in ("w_", "ws_", "wd_", "wo_", "wn_", "wr_", "wf_"):
                    if name + "{k}" in line:
                        assert f"{name}{k}" in namespace


@pytest.mark.parametrize("form", ["list", "tuple", "star", "kwargs", "star_display"])
@pytest.mark.parametrize("k", sorted(WRITES))
def test_displays_and_starred_arguments_are_followed(k, form, tmp_path_factory) -> None:
    """Refused before session 16 (list and tuple displays at the call; ``*args`` and
    ``**{...}`` through the dispatch): under "save" each is differentiated, never refused,
    with a read of the buffer before and after the hand-off."""
    body = ["buf = np.sin(x)", "acc = np.sum(buf * np.cos(x))"]
    body += [line.format(k=k, b="buf", v="x * buf") for line in FORMS[form]]
    body += ["acc = acc + np.sum(buf * x)", "return acc + np.sum(buf ** 2)"]
    source = helpers_source() + "\n\ndef f(x):\n" + "".join(f"    {s}\n" for s in body)
    f = _load(source, tmp_path_factory)
    x0 = np.random.default_rng(0).uniform(0.3, 1.2, N)
    grad = adgen.grad(f, mutation="save")(x0.copy())
    assert_grad_close(grad, numerical_grad(f, (x0,), 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mutation", ["save", "strict"])
@pytest.mark.parametrize("k", sorted(WRITES))
def test_forwarded_star_arguments_are_refused(k, mutation, tmp_path_factory) -> None:
    """``def wf(a, *rest): w(a, *rest)``: silently wrong under both policies before session
    16 (wf was taken to write nothing); refused at the forwarding call, in the program's file."""
    body = ["buf = np.sin(x)", f"wf_{k}(buf, x)", "return np.sum(buf * x)"]
    source = helpers_source() + "\n\ndef f(x):\n" + "".join(f"    {s}\n" for s in body)
    f = _load(source, tmp_path_factory)
    with pytest.raises(adgen.UnsupportedError, match=r"w_\w+\(a, \*rest\)") as info:
        adgen.grad(f, mutation=mutation)(np.linspace(0.3, 1.2, N))
    assert info.value.location.file == f.__code__.co_filename
