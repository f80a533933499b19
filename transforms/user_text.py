"""The user's words for what generated code holds and does: the source line a generated
statement came from, and the name (or expression) the user wrote for a generated name
(``h_2`` is ``h``; ``t5`` is ``Z.std(axis=0)``; ``relax_y`` is ``y (in relax)``). What
errors, hints and explain's sites say; read from the parsed function only.

``Plan.construct``, ``Plan.user_name``, ``Plan.code_name`` and ``Plan.source_line`` ask these
functions about the plan's function, so the emitters ask the plan as before.
"""

from __future__ import annotations

import gast
from adgen.transforms.emit import unnumbered
from adgen.transforms.node_index import memo, nodes_of
from adgen.transforms.parse import Parsed
from adgen.transforms.reverse_ast import operand_text, src_text, user_name_of
from adgen.transforms.walk import clone, walk


def construct(parsed: Parsed, stmt: gast.stmt) -> str:
    """The user's source text of the statement a generated one came from."""
    line = getattr(stmt, "lineno", 0)
    text = source_line(parsed, line) if line else ""
    if parsed.file.startswith("<adgen ") and line:
        # generated code differentiated again (the jvp code of hessian, hvp): the line
        # of the user's that its "# line N:" comment names, not the generated statement
        import linecache

        from adgen.adjoints import through_generated

        file, n = through_generated(parsed.file, line)
        if file is not None:
            text = linecache.getline(file, n)
    return text.split("#")[0].strip() or src_text(stmt)


def user_name(parsed: Parsed, fn: gast.FunctionDef, n: str, depth: int = 0) -> str:
    """A name the user wrote for what ``n`` holds (temporaries: the expression's text, in
    the user's names: ``Z.std(axis=0)``, not ``Z_1.std(axis=0)``)."""
    if depth == 0:
        # once per name while the function is frozen: explain's texts of the sites ask
        # for the same few names again and again (ADI: 20 questions about 3 names, each
        # a scan of the assignments and the expression printed)
        return memo(fn, ("user_name", n), lambda: _user_name(parsed, fn, n, 0))
    return _user_name(parsed, fn, n, depth)


def code_name(parsed: Parsed, n: str) -> str:
    """The name the user's code has for ``n`` (``h_2`` -> ``h``; ``relax_y``, a written-out
    nested def's variable, -> ``y``), for a hint's code."""
    base = user_name_of(n)
    inlined = parsed.inlined_names.get(n) or parsed.inlined_names.get(base)
    return inlined[0] if inlined is not None else base


def _user_name(parsed: Parsed, fn: gast.FunctionDef, n: str, depth: int) -> str:
    base = user_name_of(n)
    inlined = parsed.inlined_names.get(n) or parsed.inlined_names.get(base)
    if inlined is not None:  # a written-out nested def's variable (relax_y)
        return f"{inlined[0]} (in {inlined[1]})"
    if base.endswith("_dot") and len(base) > 4 and \
            parsed.file.startswith("<adgen ") and unnumbered(parsed.file).endswith(" jvp>"):
        # the jvp code adgen differentiates again (hessian, hvp): a tangent is written
        # where its primal is, and the user knows the primal's name
        return user_name(parsed, fn, base[:-4], depth)
    code = getattr(parsed.fn, "__code__", None)
    if base.startswith("retval") and base[6:].isdigit() and code is not None and \
            base not in code.co_varnames + code.co_names + code.co_cellvars:
        # (lower_control's name for a function's result where it has several returns)
        return f"what {fn.name} returns"
    temporary = base.startswith("t") and base[1:].isdigit() or \
        base.startswith("seq") and base[3:].isdigit()  # (desugar's loop sequences)
    if base in {a.id for a in fn.args.args} or not temporary:
        return base
    for st in nodes_of(fn, gast.Assign):
        if isinstance(st, gast.Assign) and isinstance(st.targets[0], gast.Name) and \
                st.targets[0].id == n:
            expr = clone(st.value)
            if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and \
                    expr.func.id in ("loop_sequence", "list_snapshot") and expr.args:
                # (for m in models: the sequence is models; a read of hist before it grows
                # reads list_snapshot(hist): transforms/grown_list_reads.py)
                expr = expr.args[0]
            for sub in walk(expr):
                if isinstance(sub, gast.Name):
                    inner = user_name(parsed, fn, sub.id, depth + 1) if depth < 3 else \
                        user_name_of(sub.id)
                    sub.id = inner if inner.isidentifier() else operand_text(inner)
            return src_text(expr)
    return base


def source_line(parsed: Parsed, line: int) -> str:
    """The user's source line ``line`` of the parsed function's file, stripped ("" past its
    end)."""
    try:
        return parsed.lines[line - 1].strip()
    except IndexError:
        return ""
