"""Random programs over a list argument written in place (issue 12), and array subclasses.

Each program is ``def f(ws)`` on a list of three items (float64 or float32 vectors of length
4, or floats) and runs a random sequence of item stores, appends, writes through an array
item, ``+=`` on an array item and a loop over the list, then returns a weighted sum of its
items. adgen's gradient is checked against central differences (in float64 at the same
values, float32 with its tolerance) and the list's final state against a plain call, under
both policies. Items are arrays or floats, mixed, and a float item may become an array; writes
through an item and stores into its slot mix freely. Array subclasses, alone or inside a list
or dict, must be refused.

CI: a bounded campaign (``progen.campaign_settings``); ``ADGEN_FUZZ=long`` runs thousands.
"""

from __future__ import annotations

import copy
import importlib.util
import itertools

import numpy as np
import progen
import pytest
from container_checks import assert_grad_close, fd_container
from harness import RTOL_F32, assert_same_state
from hypothesis import given
from hypothesis import strategies as st

import adgen

N = 4
_COUNTER = itertools.count()


@st.composite
def container_programs(draw: st.DrawFn) -> tuple[str, list]:
    """(source of ``f``, its argument)."""
    dtype = draw(st.sampled_from(["float64", "float32"]))
    # arrays and floats mixed: a float item may become an array (ws[2] = ws[2] * ws[0]), and
    # its gradient is still a number (the structure the function received)
    kinds = [draw(st.sampled_from(["array", "float"])) for _ in range(3)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    arg = [rng.uniform(0.2, 0.9, N).astype(dtype) if k == "array" else
           float(rng.uniform(0.2, 0.9)) for k in kinds]
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        n = len(kinds)
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        c = draw(st.sampled_from([0.5, 1.5, -0.75]))
        op = draw(st.sampled_from(["mul", "sin", "append", "through", "iadd", "loop"]))
        if op == "mul":
            lines.append(f"ws[{i}] = ws[{i}] * ws[{j}]")
            kinds[i] = "array" if "array" in (kinds[i], kinds[j]) else "float"
        elif op == "sin":
            lines.append(f"ws[{i}] = np.sin(ws[{j}]) + {c} * ws[{i}]")
            kinds[i] = "array" if "array" in (kinds[i], kinds[j]) else "float"
        elif op == "append" and n < 5:
            lines.append(f"ws.append(ws[{i}] * {c})")
            kinds.append(kinds[i])
        elif op == "through" and kinds[i] == "array" and i != j:
            src = f"ws[{j}][0]" if kinds[j] == "array" else f"ws[{j}]"
            lines.append(f"ws[{i}][1] = {src} * {c}")
        elif op == "iadd" and i != j and (kinds[i] == "array" or kinds[j] == "float"):
            lines.append(f"ws[{i}] += {c} * ws[{j}]")
        elif op == "loop":
            lines.append("for k in range(len(ws)):\n        ws[k] = np.tanh(ws[k]) * 0.9")
    terms = [f"{w} * np.sum(ws[{k}] * ws[{k}])" for k, w in
             zip(range(len(kinds)), itertools.cycle(["1.0", "0.5", "-0.25"]))]
    body = "\n    ".join(lines + [f"return {' + '.join(terms)}"])
    return f"import numpy as np\n\n\ndef f(ws):\n    {body}\n", arg


def source_path(f) -> str:
    return f.__code__.co_filename


def _load(source: str, tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("containers") / f"prog_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@progen.campaign_settings(ci_examples=40)
@given(prog=container_programs(), mutation=st.sampled_from(["save", "strict"]))
def test_fuzz_list_argument(prog, mutation, tmp_path_factory) -> None:
    source, arg = prog
    f = _load(source, tmp_path_factory)
    ours = copy.deepcopy(arg)
    plain = copy.deepcopy(arg)
    expected_value = f(plain)
    try:
        value, grad = adgen.value_and_grad(f, mutation=mutation)(ours)
    except adgen.MutationError as err:
        # strict refuses a write over a value the gradient reads (ws[1][1] = ... after
        # ws[0] = ws[0] * ws[1]); the same program must be right under save
        assert mutation == "strict" and str(err).startswith(source_path(f)), err
        ours = copy.deepcopy(arg)
        value, grad = adgen.value_and_grad(f, mutation="save")(ours)
    narrow = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in arg)
    assert_grad_close(grad, fd_container(f, arg), RTOL_F32 if narrow else 1e-5,
                      f"gradient of\n{source}")
    np.testing.assert_allclose(value, expected_value, rtol=1e-12)
    assert_same_state(ours, plain, f"the list after the call of\n{source}")


_SUBCLASSES = [
    lambda: np.matrix([[0.5, 1.5]]),
    lambda: np.ma.masked_array([0.5, 1.5], mask=[False, True]),
    lambda: np.array([0.5, 1.5]).view(type("Tagged", (np.ndarray,), {})),
]


@progen.campaign_settings(ci_examples=20)
@given(which=st.sampled_from(range(3)), where=st.sampled_from(["alone", "list", "dict"]))
def test_fuzz_subclass_arguments_are_refused(which, where) -> None:
    def f(a):
        return np.sum(a * 2.0)

    def g(ws):
        ws[0] = ws[0] * 2.0
        return np.sum(ws[0])

    def h(d):
        d["w"] = d["w"] * 2.0
        return np.sum(d["w"])

    value = _SUBCLASSES[which]()
    fn, arg = {"alone": (f, value), "list": (g, [value]), "dict": (h, {"w": value})}[where]
    with pytest.raises(adgen.NonDifferentiableError, match="subclass"):
        adgen.grad(fn)(arg)
