"""explain says what the generated code does, not what the plan first decided.

A write whose overwritten parts the plan copies where the pullback reads them (ADI's
``p[1:n - 1, j] = ...``) may lose those copies when the pullback is emitted:
invariant_finals reads a part again from its array's final contents where the array holds
the same values in every step (the row sweep of ADI, the back substitution below). explain
still said "so that is copied where it is read" for those reads (session 14's
transforms/invariant_finals.py removed the copy). Now the rows say which reads are copied
and which are read again, and a write whose copies are all gone is free; the generated
forward is checked to agree (no copy of the part it says is read again). Gradients against
central differences, under both policies.
"""

import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import check_grad

import adgen

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.workloads.polybench_stencils import adi  # noqa: E402 - ADI as bench runs it


def sweeps(u0):
    n = u0.shape[0]
    u = u0.copy()
    p = np.zeros((n, n))
    for _ in range(3):
        p[:, 0] = 0.0
        for j in range(1, n):
            p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)
            u[:, j] = (u[:, j] - 0.2 * u[:, j - 1]) / (0.5 * p[:, j - 1] + 2.0)
        for j in range(n - 2, -1, -1):
            u[:, j] = p[:, j + 1] * u[:, j + 1] + u[:, j]
    return np.sum(u ** 2)


U0 = np.random.default_rng(5).random((5, 5))


def rows_of(f, *args, **options):
    return {r.construct: r for r in adgen.explain(f, *args, file=None, **options)}


def forward_of(f, *args):
    code = adgen.source(f, *args)
    return code[:code.index("_pullback(")]


def test_a_write_whose_copies_are_read_again_is_free():
    rows = rows_of(sweeps, U0)
    for construct in ("p[:, 0] = 0.0", "p[:, j] = -0.3 / (0.5 * p[:, j - 1] + 2.0)"):
        site = rows[construct]
        assert site.decision == "free", site.reason
        assert "copied" not in site.reason
        assert "reads p[:, (j + 1)] again from p's final contents" in site.reason
        assert "loop at line 31" in site.reason  # for _ in range(3)
    # ... as the generated forward does: no copy of p's columns kept for the pullback
    assert "saved_" not in forward_of(sweeps, U0)
    check_grad(sweeps, [U0])


def test_adi_says_which_sweep_copies_and_which_reads_again():
    n = 8
    u0 = np.random.default_rng(0).random((n, n))
    rows = adgen.explain(adi, u0, file=None)
    writes = [r for r in rows if r.construct.startswith("p[1:n - 1, ")]
    assert len(writes) == 4
    for site in writes:
        assert site.decision == "guarded-save"
        # the column sweep's back substitution (line 212) reads a copy, the row sweep's (line
        # 224) reads p's final contents
        assert "the gradient of line(s) 212 reads, so that is copied where it is read" in \
            site.reason, site.reason
        assert "line(s) 224 reads p[1:(n - 1), j] again from p's final contents" in \
            site.reason, site.reason
        # the copy is a row of the sweep's typed tape, which copy_when_read never counts
        assert "into a row of the loop's tape in each iteration (not in the bytes counted" \
            in site.reason and site.bytes_saved == 0
    forward = forward_of(adi, u0)
    assert forward.count("saved_") >= 1  # the column sweep's copy is on its tape


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_gradients(mutation):
    check_grad(sweeps, [U0], mutation=mutation)


def test_without_example_arguments_nothing_changes():
    # no kinds, no read-again: the plan's copies are what the code keeps
    rows = rows_of(sweeps)
    assert "copied where it is read" in rows["p[:, 0] = 0.0"].reason
    assert "copy_when_read(" in forward_of(sweeps)
