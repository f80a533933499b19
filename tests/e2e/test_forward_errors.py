"""An exception the user's own code raises while a gradient runs (a shape mismatch, a write into
a read-only argument, an error in a helper in another module) came out of adgen's generated
forward function: the traceback named ``<adgen loss save> forward``, line 2, and Python's
own hook printed no source line at all, so nothing said which line of the user's code failed.
Such an exception keeps its type and gets a note naming the user's file, line and source
(PEP 678); an adgen error raised at run time without a location (np.interp with period=0,
refused by its reference implementation) is located at the user's call."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import adgen


def mismatched(x, w):
    h = np.tanh(x)
    out = h @ w
    return np.sum(out)


def writes_its_argument(x):
    y = x * 2.0
    x[0] = y[0] ** 2
    return np.sum(x * y)


def periodic(x):
    grid = np.linspace(0.0, 6.0, 12)
    return np.sum(np.interp(np.array([0.5, 7.1]), grid, x, period=0.0))


def _notes(err: BaseException) -> str:
    return "\n".join(getattr(err, "__notes__", []))


@pytest.mark.parametrize("run", [lambda: adgen.grad(mismatched)(np.ones((2, 3)), np.ones((4, 1))),
                                 lambda: adgen.vjp(mismatched, np.ones((2, 3)),
                                                   np.ones((4, 1)))],
                         ids=["grad", "vjp"])
def test_a_shape_mismatch_names_the_users_line(run):
    with pytest.raises(ValueError, match="matmul") as err:
        run()
    notes = _notes(err.value)
    assert f"{__file__}:22" in notes and "out = h @ w" in notes


def test_a_write_into_a_read_only_argument_names_the_write():
    x = np.array([1.0, 2.0, 3.0])
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only") as err:
        adgen.grad(writes_its_argument)(x)
    assert "x[0] = y[0] ** 2" in _notes(err.value)


def test_an_error_in_a_helper_module_names_the_helpers_line(tmp_path, monkeypatch):
    (tmp_path / "helpers_fwd_h5.py").write_text(
        "import numpy as np\n"
        "\n"
        "def normalise(v):\n"
        "    total = float(np.sum(v))\n"
        "    return v / (total - total)\n"
        "\n"
        "def checked(v):\n"
        "    if v.ndim != 1:\n"
        "        raise ValueError('expected a vector')\n"
        "    return v\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    helpers = importlib.import_module("helpers_fwd_h5")

    def loss(x):
        return np.sum(helpers.checked(x) ** 2)

    with pytest.raises(ValueError, match="expected a vector") as err:
        adgen.grad(loss)(np.ones((2, 2)))
    notes = _notes(err.value)
    assert str(tmp_path / "helpers_fwd_h5.py") + ":9" in notes
    assert "raise ValueError('expected a vector')" in notes
    sys.modules.pop("helpers_fwd_h5", None)


def test_a_refusal_at_run_time_is_located_at_the_users_call():
    with pytest.raises(adgen.RuleError, match="period") as err:
        adgen.grad(periodic)(np.ones(12))
    assert str(err.value).startswith(f"{__file__}:34")
    assert "np.interp(np.array([0.5, 7.1]), grid, x, period=0.0)" in str(err.value)


@pytest.mark.parametrize("run", [
    lambda: adgen.jvp(lambda x: mismatched(x, np.ones((4, 1))), (np.ones((2, 3)),),
                      (np.ones((2, 3)),)),
    lambda: adgen.hvp(lambda x: mismatched(x, np.ones((4, 1))))(np.ones((2, 3)),
                                                                np.ones((2, 3)))],
    ids=["jvp", "hvp"])
def test_forward_mode_and_second_derivatives_name_the_users_line_too(run):
    with pytest.raises(ValueError, match="matmul") as err:
        run()
    notes = _notes(err.value)
    assert f"{__file__}:22" in notes and "out = h @ w" in notes
    assert "_jvp" not in notes  # no generated name
