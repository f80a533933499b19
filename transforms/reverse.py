"""Reverse mode: the forward function (primal + what the pullback reads) and the pullback of one
function, in three phases.

Input: a function in SSA form after lower_mutation, with its activity and effects.
Output: two FunctionDefs, ``<f>_forward(*params) -> (out, saved)`` and
``<f>_pullback(saved, out_bar, sh=None) -> tuple`` (one cotangent per parameter), and the
list of mutation-site decisions (a :class:`Result`).

1. **Plan** (:mod:`reverse_plan`): what each name holds, which names keep adjoints in shadow
   memory, views, statement positions, the rule of each operation, typed-tape loops.
2. **Captures** (:mod:`reverse_captures`): the values the pullback reads that a later in-place
   write may overwrite, the writes guarded for them, and the decision at each mutation site:
   free sites get no code.
3. **Emitters**: the pullback (:mod:`reverse_pullback`, with :mod:`reverse_ops`,
   :mod:`reverse_stores` and :mod:`reverse_calls`), which records what it needs the forward
   to keep (values, or only their shapes: :mod:`shape_saves`), then the forward
   (:mod:`reverse_forward`), which keeps it, with the temporaries the normal form made and
   only one statement reads folded back into that statement (``fold_temporaries.py``).
"""

from __future__ import annotations

from typing import Any

import gast
from adgen.transforms.analyses.activity import Activity
from adgen.transforms.analyses.effects import Effects
from adgen.transforms.analyses.free_containers import refuse_read_back
from adgen.transforms.fold_temporaries import fold_temporaries
from adgen.transforms.names import Namer
from adgen.transforms.node_index import frozen, thaw
from adgen.transforms.parse import Parsed
from adgen.transforms.reverse_ast import Result
from adgen.transforms.reverse_captures import find_captures
from adgen.transforms.reverse_forward import Forward
from adgen.transforms.reverse_plan import Plan
from adgen.transforms.reverse_pullback import Pullback
from adgen.transforms.scalar_extremes import extremes_as_comparisons


def reverse(parsed: Parsed, fn: gast.FunctionDef, namer: Namer, act: Activity, eff: Effects,
            headers: set[str], policy: str, callee_info: Any,
            kinds: dict[str, Any] | None = None, column_dtypes: dict[str, str] | None = None,
            f64_arrays: set[str] | None = None) -> Result:
    """The forward and pullback of ``fn`` (see the module's docstring for the phases)."""
    # the plan, the captures and the pullback build new trees and leave fn's nodes as they
    # are (the forward emitter rewrites fn's statements in place): their walks of fn read
    # one, with the analyses' when the pipeline froze fn for them (node_index)
    with frozen(fn, "the reverse pass's plan, captures and pullback emitter"):
        plan = Plan(parsed, fn, act, eff, headers, policy, callee_info, kinds, column_dtypes,
                    f64_arrays)
        # a value with a derivative put into a global list the function reads back
        refuse_read_back(fn, parsed, act.varied, act.useful, plan.resolve_or_none)
        find_captures(plan)
        pb = Pullback(plan, namer)
        pullback = pb.emit()
        # explain's sites say what the emitted code does (a copy invariant_finals took back);
        # only sites whose overwritten parts are copied where read change
        if any(site.copied for site in pb.rec.sites):
            from adgen.transforms.emitted_sites import sites_as_emitted

            sites_as_emitted(plan, pb.rec)
    thaw(fn)  # the pipeline's frozen block too: the forward rewrites fn's statements
    forward = Forward(plan, pb.rec, namer).forward(pb.rec.saved_names)
    # max(a, b) of numbers as the comparison the builtin makes, without its call
    for tree in (forward, pullback):
        extremes_as_comparisons(tree, plan.kinds, plan.resolve_or_none)
    # the forward reads like the user's code: single-use temporaries back in expressions
    fold_temporaries(forward, namer.temporary)
    return Result(forward, pullback, pb.rec.sites, pb.rec.callees,
                  mutates_params="param" in eff.written, reads_params=plan.reads_params,
                  reads_uncaptured=plan.reads_uncaptured, reads_result=plan.reads_result,
                  mutates_containers="param" in eff.containers_written,
                  written_params=plan.written_params(), lean=pb.lean_facts())
