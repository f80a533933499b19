"""Which names carry a derivative when a call starts: activity without the call's own
writes.

Activity is flow-insensitive: ``m = Model(3.0); y = m.energy(x)`` varies ``m`` (the method
may store what it computes from ``x`` in its object), so ``m`` is varied at the call itself,
before anything was stored in it. A call adgen finds only when it runs tells its callee
which values it hands over with a derivative (adgen.passed_derivatives); for that, a value
varied only by what this very call may write into it has none yet. What the call writes is
the callee's own business: compiled for a receiver without a derivative, the callee's
analysis sees its own stores into it (``self.p = x[0]`` varies ``self``'s reads, in every
iteration of a loop around the call). Every other write (another call, a store after the
call in a loop) still varies the name.
"""

from __future__ import annotations

import gast
from adgen.transforms.analyses.activity import Activity

__all__ = ["varied_before"]


def varied_before(act: Activity, stmt: gast.stmt) -> set[str]:
    """The names of ``act.varied`` that stay varied without the flows of ``stmt``'s writes
    into the values it passes to a call (the result's own binding kept); ``act.varied`` where
    ``stmt`` has none, or ``act`` keeps no flows."""
    data = act.flow_data
    if data is None:
        return act.varied
    pairs, owners, bindings, aliases, leave, constants, seeds = data
    bound = stmt.targets[0].id if isinstance(stmt, gast.Assign) and \
        isinstance(stmt.targets[0], gast.Name) else None
    skipped = {k for k, o in enumerate(owners) if o is stmt and pairs[k][1] != {bound}}
    if not skipped:
        return act.varied
    varied = set(seeds)
    changed = True
    while changed:  # (activity's fixpoint, over the other flows)
        changed = False
        for k, (src, dst) in enumerate(pairs):
            if k in skipped or not src & varied:
                continue
            for d in dst:
                for n in {d} if k in bindings else {d} | aliases.get(d, set()) - \
                        leave.get(k, set()):
                    if n not in varied and n not in constants:
                        varied.add(n)
                        changed = True
    return varied & act.varied
