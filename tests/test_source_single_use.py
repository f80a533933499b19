"""adgen.source shows the pullback grad runs (its single-use form, which may write saved
arrays in place, said by a comment at the top) with example arguments, and vjp's reusable
pair with single_use=False or without arguments; the CLI's --args / --reusable likewise. The
shown code is run and checked against central differences."""

import subprocess
import sys

import numpy as np
import pytest
from gradcheck import assert_grad_close, numerical_grad

import adgen

NOTE = "# What grad runs for these arguments: a single-use pullback"


def xent(W, X, Y):
    Z = X @ W
    Z = Z - np.max(Z, axis=1, keepdims=True)
    e = np.exp(Z)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.sum(Y * np.log(p)) / X.shape[0]


class Classifier:
    def __init__(self, temperature):
        self.temperature = temperature

    def loss(self, W, X, Y):
        return xent(W / self.temperature, X, Y)


RNG = np.random.default_rng(7)
W = 0.3 * RNG.standard_normal((4, 3))
X = RNG.standard_normal((5, 4))
Y = np.eye(3)[[0, 1, 2, 0, 1]]


def run_shown(text, name, *args, times=1):
    """The shown module executed: the forward once, its pullback ``times`` times."""
    ns: dict = {}
    exec(compile(text, "<shown>", "exec"), ns)  # noqa: S102 - the code adgen shows users
    out, saved = ns[f"{name}_forward"](*args)
    return out, [ns[f"{name}_pullback"](saved, 1.0) for _ in range(times)]


def test_with_arguments_the_pullback_grad_runs():
    text = adgen.source(xent, W, X, Y)
    assert text.startswith(NOTE) and "which writes p (saved by the forward) in place" in text
    assert "p *=" in text  # the softmax's saved array, consumed
    out, (grads,) = run_shown(text, "xent", W, X, Y)
    assert_grad_close(grads[0], numerical_grad(xent, [W, X, Y], 0))
    assert_grad_close(grads[0], adgen.grad(xent)(W, X, Y))


def test_the_reusable_pair_on_request_and_without_arguments():
    text = adgen.source(xent, W, X, Y, single_use=False)
    assert not text.startswith("#") and "p *=" not in text
    out, (first, again) = run_shown(text, "xent", W, X, Y, times=2)
    np.testing.assert_array_equal(first[0], again[0])  # reusable: the same answer twice
    assert_grad_close(first[0], numerical_grad(xent, [W, X, Y], 0))
    assert not adgen.source(xent).startswith("#")
    with pytest.raises(ValueError, match="needs example arguments"):
        adgen.source(xent, single_use=True)
    assert adgen.source(xent, W, X, Y, single_use=True) == adgen.source(xent, W, X, Y)


def test_a_list_argument_has_no_single_use_form():
    def total(ws):
        return np.sum(np.exp(ws[0]) * ws[1])

    ws = [np.ones(3), np.arange(3.0)]
    assert not adgen.source(total, ws).startswith("#")
    with pytest.raises(ValueError, match="reusable pullback for these arguments"):
        adgen.source(total, ws, single_use=True)


def test_a_method_and_a_lambda():
    # grad of a method runs the reusable pullback (its object is an argument of no kind)
    model = Classifier(2.0)
    assert not adgen.source(model.loss, W, X, Y).startswith("#")
    with pytest.raises(ValueError, match="a method's self"):
        adgen.source(model.loss, W, X, Y, single_use=True)
    out, (grads,) = run_shown(adgen.source(model.loss, W, X, Y), "loss", model, W, X, Y)
    assert_grad_close(grads[1], numerical_grad(model.loss, [W, X, Y], 0))
    f = lambda W, X, Y: xent(W, X, Y) * 2.0  # noqa: E731
    assert "xent_forward" in adgen.source(f, W, X, Y)


def test_the_cli_shows_the_same(tmp_path):
    (tmp_path / "model.py").write_text(
        "import numpy as np\nimport adgen\n\n\n@adgen.differentiable\n"
        "def xent(W, X, Y):\n    Z = X @ W\n    Z = Z - np.max(Z, axis=1, keepdims=True)\n"
        "    e = np.exp(Z)\n    p = e / np.sum(e, axis=1, keepdims=True)\n"
        "    return -np.sum(Y * np.log(p)) / X.shape[0]\n")
    example = "np.ones((4, 3)), np.ones((5, 4)), np.eye(3)[[0, 1, 2, 0, 1]]"

    def cli(*extra):
        r = subprocess.run([sys.executable, "-m", "adgen", "model.py", *extra], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert cli("--args", example).startswith(NOTE)
    reusable = cli("--args", example, "--reusable")
    assert not reusable.startswith("#") and "p *=" not in reusable
    assert not cli().startswith("#")
