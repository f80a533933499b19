"""Where a line of generated code came from, said in the user's words.

Generated pullbacks carry a ``# line N: <source>`` comment over each block; reports about the
generated code (``explain(grad(f), x)``'s route: why reverse over reverse cannot run) name the
user's line and statement through it instead of the generated file, its line numbers and its
helpers' names, which the user never wrote.
"""

from __future__ import annotations

import ast
import re

from adgen.errors import AdgenError

# What each runtime helper that has no second-order rule does, in terms of the user's code.
HELPER_MEANING = {
    "remap_saved": "a callee's saved values redirected to the copies taken when its "
                   "argument was overwritten after the call",
    "call_forward": "a call adgen resolves at run time (a closure, a method, a function held "
                    "in a variable, a checkpointed helper)",
    "call_pullback": "a call adgen resolves at run time (a closure, a method, a function held "
                     "in a variable, a checkpointed helper)",
    "scatter_if_copy": "the adjoint of a copy (an advanced index) added into an array "
                       "written in place",
    "collect": "the adjoint of a list, dict or object gathered from the adjoints of its "
               "arrays",
    "with_shadows": "the adjoint of a list, dict or object a callee returns, gathered from "
                    "the adjoints of its arrays",
    "add_out": "the adjoint of an array a callee returns and writes in place",
    "items_to_shadows": "the adjoints of a list's or dict's arrays that are written in place",
    "shadows_to_items": "the adjoints of the arrays written in place in a list, dict or object "
                        "a callee is given",
}
SHADOW_MAP_MEANING = ("the hand-over of the adjoints of a list, dict or object, or of arrays "
                      "written in place, between a function and its callee")


def user_line(text: str, lineno: int) -> tuple[int, str] | None:
    """The user's line and statement of line ``lineno`` of generated ``text``: the nearest
    ``# line N: ...`` comment above it in the same generated function (None: there is none,
    as in a forward function, whose statements carry no comments)."""
    lines = text.splitlines()
    for k in range(min(lineno, len(lines)) - 1, -1, -1):
        found = re.match(r"\s*# line (\d+): (.*)$", lines[k])
        if found:
            return int(found.group(1)), found.group(2).strip()
        if lines[k].startswith("def "):
            return None
    return None


def returned_parameter(tree: ast.Module, node: ast.AST) -> str | None:
    """The user's parameter whose adjoint ``node`` (a call in the return statement a
    generated pullback ends with, ``collect(sh, p, p_bar)``) gives back, or None."""
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name.endswith("_pullback") and fn.body
                and isinstance(fn.body[-1], ast.Return)):
            continue
        if any(n is node for n in ast.walk(fn.body[-1])) and isinstance(node, ast.Call) and \
                len(node.args) > 1 and isinstance(node.args[1], ast.Name):
            name = node.args[1].id
            base, _, suffix = name.rpartition("_")  # an SSA version (p_1) is the user's p
            return base if base and suffix.isdigit() else name
    return None


def function_name(name: str) -> str:
    """How the user calls a compiled function: ``lambda_12`` (adgen's name) is a lambda."""
    return "the lambda" if re.fullmatch(r"lambda_\d+", name) else name


def refusal(text: str, tree: ast.Module, node: ast.AST, construct: str, meaning: str,
            file: str, name: str) -> str:
    """Why reverse over reverse cannot run: ``construct`` of the generated code (a helper's
    call, ``collect(...)``) does ``meaning``, located at the user's line where it has one."""
    what = f"{meaning} ({construct}) has no second-order rule yet"
    param = returned_parameter(tree, node)
    if param is not None:
        text = (f"{file}: in {function_name(name)}, the adjoint of its argument {param} "
                f"({construct}: {meaning}) has no second-order rule yet")
        if construct.startswith("collect("):
            text += (f" (for reverse over reverse, pass the arrays of {param} as separate "
                     f"arguments, or read {param} as a global)")
        return text
    at = user_line(text, getattr(node, "lineno", 0))
    if at is not None:
        return f"{file}:{at[0]}: {at[1]} -- in {function_name(name)}, {what}"
    return f"{file}: in {function_name(name)}, {what}"


def program_refusal(exc: AdgenError) -> str:
    """Why adgen's reverse mode could not compile the program over the generated code, from
    the error it raised (located at the user's line by the ``# line N:`` comments): a helper
    of the generated code is said to be one, since the user never called it."""
    from adgen import runtime

    text = exc.message.splitlines()[0] if exc.message else str(exc).splitlines()[0]
    found = re.match(r"(\w+)\(\) has no derivative rule", text)
    if found and found.group(1) in runtime.__all__:
        text = (f"{found.group(1)}(), a helper of adgen's generated pullback, has no "
                "derivative rule yet")
    loc = exc.location
    if loc is None:
        return text
    source = f" {loc.source_line.strip()} --" if loc.source_line.strip() else ""
    return f"{loc.file}:{loc.line}:{source} {text}"
