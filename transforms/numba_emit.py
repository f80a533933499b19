"""numba_emit: one generated forward and pullback rewritten into numba's nopython subset.

Input: the final forward and pullback trees of ``pipeline._compile`` (after cleanup and
free_values; ``Compiled.trees``), as ``ast`` trees, and the numba type of each argument
(:class:`ArgType`: a number or an array of a dtype and rank). :class:`Rewriter` holds the pair, which
the steps rewrite in place (fresh names, the user's line of each statement, what the steps
found), and :meth:`Rewriter.check_calls` refuses what has no nopython form. The steps are
functions of the Rewriter in their own modules (``numba_call_forms``, ``numba_guarded_sites``,
``numba_tapes``, ``numba_shadows``); ``adgen.transforms.numba_module`` runs them in order,
per function of the module, and assembles the source. Each step refuses what it cannot
prove equivalent with an ``UnsupportedError`` naming the user's file, line and construct.
Nothing is approximated.

The steps:

- *guarded sites under "save"* (``saved = capture(x, ...)``, ``before_write(x, region,
  'save', ...)``): the captured array is copied when captured, a number kept as it is, and
  the writes lose their checks (the pullback reads the same contents);
- *guarded sites under "strict"*: the captures record the element addresses they view in a
  scope of the forward's (``strict_capture``), and each guarded write looks up the elements
  it overwrites (``strict_before_write``), raising what adgen.backends makes the default
  backend's MutationError;
- *views*: where the forward records a basic-indexing view of a buffer whose adjoint the
  pullback takes (``t12 = hs[t11]``), it records the names the index reads beside it;
- *typed tapes* (``tape_columns(range(a, b), 'float64')`` / ``reversed_rows(tape, range(a,
  b))``) become a tuple of ``np.empty`` columns and an index loop running backwards;
- *list tapes* (``tape = []``, ``tape.append((i, t3, inner))``, ``for ... in
  reversed(tape)``) become one column per recorded value and a row counter (``tape_n``),
  flat across nested loops: an inner tape's rows for one outer iteration are a range of
  rows, whose bounds the outer tape records. A number's column is a typed array (its dtype
  from :func:`scalar_types`, checked against numba's inference after compilation), reserved
  from the loop bounds before a counted loop and grown geometrically before each append
  otherwise (``numba_runtime.grow``); any other value (an array, a callee's record) goes to
  a ``numba.typed.List`` of one element type;
- *shadow memory* (``sh.of(x)``) becomes one static zero array per buffer, allocated at the
  top of the pullback: the forward must bind every name the pullback takes a shadow of to a
  parameter, a fresh allocation, another name of the same buffer (``out=``, a loop's
  sequence, a plain rebinding), or a basic-indexing view of one (whose shadow is the same
  view of the buffer's). Parameters are distinct buffers only if the caller's arrays do not
  share memory, which ``adgen.backends`` checks at every call. ``root_of(a) is root_of(b)``
  is decided here;
- runtime helpers become their nopython versions in ``adgen.numba_runtime``; ``add(a, b)``
  becomes ``a + b``;
- refused: guarded sites under "strict" whose captured values are not arrays or numbers,
  or in a callee; ``try`` guards, containers, and every other runtime helper.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from adgen.transforms import numba_call_forms
from adgen.transforms.analyses.numba_types import ArgType, call_name
from adgen.transforms.numba_live_bindings import Companions
from adgen.transforms.numba_shadows import unfollowed_view
from adgen.transforms.numba_statements import (
    Place,
    annotate_lines,
    own_nodes,
    statements,
)
from adgen.transforms.numba_tapes import tape_target
from adgen.transforms.reverse_ast import user_name_of

from adgen.errors import UnsupportedError

__all__ = ["COMMENT", "NOPYTHON_HELPERS", "Rewriter"]

# Runtime helpers with a nopython version (adgen.numba_runtime), and the rewrites' own.
NOPYTHON_HELPERS = frozenset({"abs_vjp", "zeros_like", "loop_sequence", "unpacked_len",
                              "index_with_derivative", "slots_changed", "slots_changed_by",
                              "unbroadcast", "stored_into",
                              "balanced_eq", "extreme_vjp", "add_item", "grow", "sum_vjp",
                              "cast_vjp", "cotangent_as",
                              "mean_vjp",
                              "copy_adjoint", "zero_if_none", "or_zeros", "add_out",
                              "max_vjp", "matmul_vjp_a", "matmul_vjp_b", "inverse_axes",
                              "matrix_transpose", "det_vjp", "solve_vjp_a", "solve_vjp_b",
                              "zeros_of_tree", "or_zeros_of_tree", "max_axis", "min_axis",
                              "sum_axis", "sum_keepdims", "mean_axis", "add_newaxis", "diag_vjp",
                              "cholesky_vjp", "entry_items", "with_shadows",
                              "add_matmul_vjp_a", "add_matmul_vjp_b", "add_outer", "item",
                              "remap_tree", "saved_copy"})
COMMENT = re.compile(r"^(\s*)(['\"])\\x00(# .*)\2$", re.MULTILINE)


def _scatter_view(st: ast.stmt) -> str | None:
    """The view ``scatter_if_copy(sh, r, 0, t4)`` in ``st`` names (``r``), or None."""
    for node in ast.walk(st):
        if call_name(node) == "scatter_if_copy" and len(node.args) > 1 and \
                isinstance(node.args[1], ast.Name):
            return node.args[1].id
    return None


class Rewriter:
    def __init__(self, forward: ast.FunctionDef, pullback: ast.FunctionDef, file: str,
                 params: dict[str, ArgType]) -> None:
        self.fwd = forward
        self.pb = pullback
        self.place = Place(file)
        self.columns: dict[str, str] = {}
        self.params = params
        # guarded sites under "strict" (strict_guards): [file, line, col, construct] per
        # write, [file, line, what] per capture, numbered as the generated code numbers them
        self.strict_writes: list[list[Any]] = []
        self.strict_captures: list[list[Any]] = []
        # whether the code is right only for array arguments that do not share memory (an
        # argument's adjoint is a static buffer, or root_of(a) is root_of(b) was decided)
        self.distinct = False
        # the code is a callee's (its pullback is called with its caller's adjoints, never
        # the top call: ``x if top else y`` is ``y``); set by numba_module
        self.callee = False
        # a callee's parameters it fills in place, whose adjoint buffers its caller passes
        # its pullback (numba_filled_arguments)
        self.passed: list[str] = []
        # names holding different buffers on different iterations (view_indices)
        self.live = Companions({})
        # the list tapes (numba_tapes.list_tapes) and the views (numba_shadows.view_indices)
        self.tapes: dict[str, Any] = {}
        self.views: dict[str, Any] = {}
        # names that may hold the Unbound sentinel (numba_unbound.unbound_flags)
        self.maybe_unbound: set[str] = set()
        numba_call_forms.unshare_inverses(pullback)
        self.taken = {n.id for t in (forward, pullback) for n in ast.walk(t)
                      if isinstance(n, ast.Name)} | {a.arg for a in forward.args.args}
        annotate_lines(forward.body)
        annotate_lines(pullback.body, markers=True)
        # statements the reverse pass built may lack positions, which ast.unparse reads
        ast.fix_missing_locations(forward)
        ast.fix_missing_locations(pullback)

    def fresh(self, base: str) -> str:
        out, k = base, 1
        while out in self.taken:
            k += 1
            out = f"{base}_{k}"
        self.taken.add(out)
        return out

    def refuse(self, st: ast.AST, message: str, hint: str) -> UnsupportedError:
        return self.place.refuse(getattr(st, "_user_line", 0), message, hint)

    def held_arrays(self, st: ast.AST) -> UnsupportedError:
        """The refusal of an array read from a tuple or list (``pop_number``: its gradient
        is in the default backend's shadow memory). (A swap of two names, ``u, un = un,
        u``, is no tuple: desugar binds the names one by one.)"""
        return self.refuse(
            st, "the numba backend does not follow arrays held in a tuple or list: it keeps "
            "each array's gradient in a buffer of its own, and those of arrays held in a "
            "container in adgen's shadow memory, which nopython code does not have",
            "keep each array in a name of its own, or use backend='default' (or 'auto', "
            "which falls back to it)")

    def check_calls(self, fn: ast.FunctionDef, runtime_names: set[str],
                    callees: frozenset[str] = frozenset()) -> None:
        """Refuses what has no nopython form, naming the user's line (a guarded write first:
        it is the site ``explain`` reports, with the lines whose values it may overwrite)."""
        captured = sorted({n.args[2].value for n in ast.walk(fn) if call_name(n) == "capture"
                           and len(n.args) > 2 and isinstance(n.args[2], ast.Constant)})
        for st in statements(fn.body):
            check = next((n for n in own_nodes(st) if isinstance(n, ast.Compare) and
                          isinstance(n.comparators[0], ast.Name) and
                          n.comparators[0].id == "Unbound"), None)
            if check is not None:
                # a read that may find a local unbound (transforms/unbound.py) where
                # numba_unbound could not tell the variable's type
                user = user_name_of(ast.unparse(check.left))
                raise self.refuse(
                    st, f"the numba backend does not take {user} here, a local variable "
                    "that may be unbound where this line reads it (Python raises "
                    "UnboundLocalError there when no assignment has run: a loop that ran "
                    "no iteration, an if without an else) and whose type adgen cannot "
                    "tell", f"assign {user} before the loop or the if (to a value of the "
                    "type it holds), or use backend='default' / 'auto'")
        for st in statements(fn.body):
            guard = next((n for n in own_nodes(st) if call_name(n) == "before_write"), None)
            if guard is not None:
                reads = f" (values read at line(s) {', '.join(map(str, captured))})" \
                    if captured else ""
                strict = len(guard.args) > 2 and isinstance(guard.args[2], ast.Constant) and \
                    guard.args[2].value == "strict"
                raise self.refuse(
                    st, "the numba backend checks the guarded sites of mutation='strict' "
                    "where the values the gradient reads are arrays or numbers, and this "
                    f"in-place write may overwrite one that is not{reads}" if strict else
                    "the numba backend copies the values a guarded site may overwrite when "
                    f"they are captured, and cannot here (a value read at line(s) "
                    f"{', '.join(map(str, captured))} is not an array or a number)",
                    "use mutation='save' (the numba backend then copies the values the "
                    "gradient reads), the default backend (backend='default', or 'auto'), or "
                    "write into a copy so the site is free (adgen.explain lists the sites)"
                    if strict else "use the default backend (backend='default', or 'auto'), "
                    "or write into a copy so the site is free (adgen.explain lists the sites)")
        for st in statements(fn.body):
            for node in own_nodes(st):
                f = call_name(node) if isinstance(node, ast.Call) else None
                if f in ("capture", "before_write", "write_region", "partial_try"):
                    raise self.refuse(
                        st, f"the numba backend does not run adgen's mutation guards ({f}): "
                        "an in-place write here may overwrite a value the gradient reads",
                        "use the default backend (backend='default', or 'auto', which falls "
                        "back to it), or write into a copy so the site is free")
                if f in ("call_forward", "call_pullback"):
                    raise self.refuse(
                        st, "the numba backend differentiates calls of functions it can name "
                        "when it compiles (a global or closure function, a numba.njit "
                        "function), not calls through a value (a method, a function passed "
                        "as an argument)", "call the function by its name, or use "
                        "backend='default' / 'auto'")
                if f is not None and f.endswith(("_forward", "_pullback")) and \
                        f.rsplit("_", 1)[0] not in callees and \
                        isinstance(node.func, ast.Name) and node.func.id not in runtime_names:
                    raise self.refuse(
                        st, "the numba backend does not differentiate this call "
                        f"({f.rsplit('_', 1)[0]})", "use backend='default' / 'auto'")
                if isinstance(node, ast.Call) and call_name(node) == "plain_result" and \
                        len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    # what the user wrote: a call adgen runs as it is (an object's method, a
                    # function known when it runs) or a global object's attribute or item,
                    # checked when it runs to be a plain ndarray (analyses.foreign_values)
                    raise self.refuse(
                        st, f"the numba backend cannot run {node.args[1].value} here: adgen "
                        "runs it as it is (code it does not compile: a method of an object, "
                        "a function known only when it runs, an attribute or item of a "
                        "global object), and its value, which meets values with a "
                        "derivative, must be checked to be a plain ndarray, not np.matrix or "
                        "a masked array, which nopython code cannot do",
                        f"compute {node.args[1].value} before taking the gradient and pass "
                        "it as an argument (np.asarray of it), or use backend='default' "
                        "(or 'auto', which falls back to it)")
                if isinstance(node, ast.Name) and node.id in ("ufunc_at", "ufunc_at_vjp"):
                    # what lower_mutation made of the user's np.maximum.at(x, i, v)
                    raise self.refuse(
                        st, "the numba backend does not differentiate np.multiply.at, "
                        "np.maximum.at or np.minimum.at (their gradient follows repeated "
                        "indices with vectorised helpers that have no nopython form)",
                        "use backend='default' (or 'auto', which falls back to it), or write "
                        "the update as an indexed assignment in a loop (x[i[k]] = max(x[i[k]], "
                        "v[k]))")
                if isinstance(node, ast.Name) and node.id in runtime_names and \
                        node.id not in NOPYTHON_HELPERS:
                    view = _scatter_view(st)
                    # an item of a reshape of a buffer (r[0] of r = y.reshape(2, 3)):
                    # scatter_if_copy, where the reshape may have copied; named as such
                    refused = unfollowed_view(self, view, st) if view else None
                    if refused is not None:
                        raise refused
                    if node.id == "pop_number":
                        raise self.held_arrays(st)
                    unbound = sorted({user_name_of(n.id) for n in own_nodes(st)
                                      if isinstance(n, ast.Name) and
                                      n.id in self.maybe_unbound})
                    if unbound:
                        # (the default pipeline's kinds do not take the sentinel for an
                        # array: its code asks at run time what the element read is)
                        user = unbound[0]
                        raise self.refuse(
                            st, f"the numba backend cannot follow {user} here: {user} is "
                            "unbound until an assignment inside a loop or a branch runs, so "
                            f"adgen does not know that {user} holds an array where this line "
                            "reads or writes its elements, and its code asks when it runs, "
                            "which nopython code cannot", f"bind {user} before the loop or "
                            f"the if too (for an array: {user} = np.zeros(n), written over "
                            "where the loop makes it anew), or use backend='default' / 'auto'")
                    raise self.refuse(
                        st, f"the numba backend has no nopython form of adgen's {node.id}, "
                        "which the gradient of this line uses (this first version takes "
                        "scalar-loop code: element-wise rules on numbers and array elements, "
                        "full sums; not lists, dicts, objects, views, broadcasting, or the "
                        "vectorised rules' helpers)", "use backend='default' (or 'auto')")
                if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.ListComp)) and \
                        not (isinstance(node, ast.List) and not node.elts and
                             tape_target(st)):
                    raise self.refuse(st, "the numba backend takes arrays and numbers, not "
                                      "Python lists, dicts or sets",
                                      "use NumPy arrays, or backend='default' / 'auto'")
