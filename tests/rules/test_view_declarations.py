"""A rule whose primal can return its first argument, or a view of it, says so (view=True).

The reverse pass keeps one adjoint per buffer (shadow memory): a result that shares memory
with its argument but is taken for a new array gets an adjoint of its own, and a store of it
back into the argument's buffer (``u_dot[1:-1] = float_part(t_dot, k)``, where float_part
returns ``t_dot``, a view of ``u_dot``) zeroes the adjoint it should have kept: a silently
wrong gradient (found through hvp of ``u[1:-1] += 0.05 * np.sin(u[1:-1])``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from adgen.rules import registry
from rules.cases import CASES
from rules.test_rules import bound_values


def _view_cases() -> list[Any]:
    out = []
    for rule in registry.all_rules():
        if rule.is_rrule or not rule.params or rule.params[0].varargs:
            continue
        for i, case in enumerate(CASES.get(rule.name, [])):
            if case.raises is None:
                out.append(pytest.param(rule, case, id=f"{rule.name}-{i}"))
    return out


@pytest.mark.parametrize("rule,case", _view_cases())
def test_a_result_sharing_memory_with_the_argument_is_declared_a_view(rule, case):
    first = bound_values(rule, case)[rule.params[0].name]
    if not isinstance(first, np.ndarray):
        return
    if rule.primal in (list, tuple):
        # list(x) / tuple(x) of an array: a container of row views, which the effects
        # analysis follows as items of x (tests/mutation/test_list_arguments.py,
        # test_rows_of_an_array_written_through_a_list)
        return
    with np.errstate(all="ignore"):
        out = rule.primal(*case.args, **case.kwargs)
    results = out if isinstance(out, tuple) else (out,)
    # a read-only view (np.diag of a matrix) cannot be written through
    shares = any(isinstance(r, np.ndarray) and r.flags.writeable and
                 np.may_share_memory(r, first) for r in results)
    assert rule.view or not shares, \
        f"{rule.name} returned memory of its argument but is not declared view=True"
