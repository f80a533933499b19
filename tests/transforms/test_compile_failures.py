"""A callee that does not compile is compiled once per outermost compilation
(compile_cache.FAILURES), and again in the next one.

The analyses of every caller ask about a callee again (what it returns, whether it writes its
arguments), and a failing one was compiled afresh each time, its own callees with it:
exponential in the depth of a library's calls (grad of scipy.stats.cauchy.logpdf took more
than ten minutes to reach its refusal, and hung CI). The failure is kept only while the
outermost compilation runs: a helper the user fixes is compiled again.
"""

from __future__ import annotations

import numpy as np
import pytest
from adgen.transforms import pipeline

import adgen


def broken(x):
    return eval("x") * 2.0  # adgen refuses eval


def first(x):
    return broken(x) + 1.0


def second(x):
    return broken(x) * 3.0


def loss(x):
    return np.sum(first(x) + second(x))


def test_a_failing_callee_is_compiled_once_per_outermost_compilation(monkeypatch):
    calls = []
    real = pipeline._compile

    def counting(fn, *args, **kwargs):
        calls.append(fn.__name__)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(pipeline, "_compile", counting)
    pipeline.clear_cache()
    with pytest.raises(adgen.AdgenError, match="eval") as info:
        adgen.grad(loss)(np.array([1.0, 2.0]))
    assert calls.count("broken") == 1, calls
    # the error still names the user's line inside broken
    assert info.value.location.file == __file__
    # and the next compilation tries again (nothing kept past the outermost one)
    calls.clear()
    with pytest.raises(adgen.AdgenError, match="eval"):
        adgen.grad(loss)(np.array([1.0, 2.0]))
    assert calls.count("broken") == 1, calls


def test_a_helper_fixed_by_the_user_compiles_again():
    global broken
    with pytest.raises(adgen.AdgenError, match="eval"):
        adgen.grad(loss)(np.array([1.0, 2.0]))
    saved = broken

    def fixed(x):
        return x * 2.0

    broken = fixed
    try:
        # d/dx sum((2x + 1) + 6x) = 8
        assert np.allclose(adgen.grad(loss)(np.array([1.0, 2.0])), [8.0, 8.0])
    finally:
        broken = saved


def test_the_kept_failure_reads_as_the_first():
    # copy.copy builds an exception again from its args (the formatted text) and each copy
    # prefixed it once more: "UnsupportedError: UnsupportedError: file:line: error: ..."
    pipeline.clear_cache()
    with pytest.raises(adgen.AdgenError) as info:
        adgen.grad(loss)(np.array([1.0, 2.0]))
    text = str(info.value)
    assert text.startswith(f"{__file__}:"), text
    assert text.count("Error:") == 1, text
