"""Issue 3: random programs over the mutation forms, straight line and loops.

Each program (tests/progen.py) is written to a module file, then checked against central
differences of the plain function: right under mutation="save"; under "strict" right, or a
MutationError only where the generator's ground truth says a value the backward pass may need
is overwritten (and the error names a write line and a capture line of such a conflict).
Programs the model calls conflict-free must differentiate under "strict" without error.

The ground truth is documented in progen's module docstring (element-precise captures and
writes; conservative about activity, liveness and scalar reads, so only "no conflict" is
certain and only that direction is asserted as "strict must not raise").

Run long: ADGEN_FUZZ=long .venv/bin/python -m pytest tests/mutation/test_random_programs.py
"""

from __future__ import annotations

import progen
import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

# As the other files of tests/mutation, every program also runs with float32 buffers: x, y
# and W as float32 arrays, checked against central differences in float64 at the same values
CONFIGS = {dtype: progen.GenConfig(max_stmts=6, max_body=3, helpers=True, loops=True,
                                   branches=False, arg_dtypes=(dtype,))
           for dtype in ("float64", "float32")}


@pytest.mark.parametrize("dtype", list(CONFIGS))
@progen.campaign_settings(ci_examples=60)
@given(data=st.data())
def test_random_mutating_program(dtype: str, data: st.DataObject, tmp_path_factory,
                                 shrink_budget) -> None:
    prog = data.draw(progen.programs(CONFIGS[dtype]), label="prog")
    note(prog.summary())   # the falsifying example prints as its source
    for form in prog.forms:
        event(f"form: {form}")
    event("model: a needed value is overwritten" if prog.may_need else "model: conflict-free")
    verdict = progen.run(prog, _directory(tmp_path_factory))
    assume(not verdict.rejected)
    event("strict raised MutationError" if verdict.strict_raised else "strict differentiated")


_DIRS: dict[int, object] = {}


def _directory(factory):
    """One temporary folder for all programs of the session (hypothesis reuses the test)."""
    key = id(factory)
    if key not in _DIRS:
        _DIRS[key] = factory.mktemp("random_programs")
    return _DIRS[key]
