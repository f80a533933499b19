"""Segment loops: a function whose top-level ``range`` loops run as checkpointed segments.

Not a pass of the pipeline: the source rewrite behind ``adgen.grad(f, checkpoint=K)``. Every
``for t in range(...)`` statement of ``f``'s body (top level, not nested in another statement)
becomes a loop over segments of K iterations; each segment is a function, written from the
loop's own lines, that receives what the loop body reads and returns what it changes:

    for t in range(n):                      _a = 0; _b = n; _c = 1; _n = len(range(...)); _k = K
        u[1:-1] += r * lap(u)        ->     for _s in range(0, _n, _k): (u,) = segment(_s, ...)

    def segment(lo, hi, a, c, u, r):        # the loop's lines, at their own line numbers
        for t in range(a + lo * c, a + hi * c, c):
            u[1:-1] += r * lap(u)
        return (u,)

The segment is called through a rule (``checkpointing.segment_rule``): the forward pass runs it
without a tape, on a copy of what it writes, and keeps only its inputs; the backward pass runs
it again with ``adgen.vjp``. So the tape of one segment exists at a time, and the forward keeps
one state per segment: memory goes from N steps' tapes to N/K states plus K steps' tape.

Both functions are compiled from text registered in ``linecache`` under names of their own,
with the user's statements at the user's line numbers; they read the user's globals live and
share the user's closure cells. Errors name the user's file (``remap_error``).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import linecache
import textwrap
import types
import weakref
from dataclasses import dataclass, field
from typing import Any

from adgen.transforms.analyses.loop_names import (
    bound_before,
    exposed,
    is_range_loop,
    items_written,
    param_names,
    stores_of_statements,
    walk_body,
)

from adgen.errors import AdgenError, Location, MissingRuleError, UnsupportedError

_COUNTER = itertools.count(1)
# synthetic file name -> the user's file it stands for
_FILES: dict[str, str] = {}
# function -> {(size, policy): (its code, defaults, kw defaults, the rewritten function)}
_DONE: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


@dataclass
class _Loop:
    """One top-level range loop and what its body reads and changes."""

    node: ast.For
    inputs: list[str]  # the function's locals the body reads before writing them
    outputs: list[str]  # what the segment returns: changed, and read after the loop or carried
    checks: list[str]  # the other locals bound before the loop: checked not to alias
    rebound: list[str]  # what the body binds that is carried or read after the loop
    copies: list[str] = field(default_factory=list)  # inputs the segment copies first


def segmented(fn: Any, every: int | bool, mutation: str) -> Any:
    """:func:`rewrite`, once per function, size and policy (each rewrite registers rules):
    again when the function's code or defaults were replaced."""
    if every is False:
        return fn
    try:
        per_fn = _DONE.setdefault(fn, {})
    except TypeError:  # not weak-referenceable: rewritten every time
        return rewrite(fn, every, mutation)
    key = (every, mutation)
    hit = per_fn.get(key)
    if hit is not None and hit[0] is fn.__code__ and hit[1] is fn.__defaults__ and \
            hit[2] is fn.__kwdefaults__ and _still_valid(hit[3], mutation):
        return hit[3]
    new = rewrite(fn, every, mutation)
    per_fn[key] = (fn.__code__, fn.__defaults__, fn.__kwdefaults__, new)
    return new


def _still_valid(new: Any, mutation: str) -> bool:
    """Whether each segment still writes only what it returns (a helper the loop calls may
    have been rebound since)."""
    from adgen.checkpointing import written_positions

    return all(written_positions(seg, mutation) <= returned | {0, 1, 2, 3}
               for seg, returned in new.__adgen_segments__)


def rewrite(fn: Any, every: int | bool, mutation: str) -> Any:
    """``fn`` with its top-level range loops run in checkpointed segments of ``every``
    iterations (``True``: about the square root of the loop's length).

    Raises:
        UnsupportedError: ``fn`` has no top-level ``for ... in range(...)`` loop, or a loop
            has a ``break``, ``return``, ``else`` or nested ``def``, or keeps a value from one
            iteration to the next that is not bound before the loop.
    """
    if isinstance(every, bool):
        if not every:
            return fn
    elif not isinstance(every, int) or every < 1:
        raise ValueError(f"checkpoint must be a positive int (iterations per segment) or "
                         f"True (about the square root of the length), not {every!r}")
    code = getattr(fn, "__code__", None)
    if code is None or code.co_name == "<lambda>":
        raise UnsupportedError(
            f"checkpoint= needs a def with a for loop; {getattr(fn, '__qualname__', fn)} is "
            "not one", hint="write the function as a def with its loop at the top level")
    try:
        lines, first = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(code) or inspect.getfile(code)
    except (OSError, TypeError) as exc:
        raise MissingRuleError(f"the source of {fn.__qualname__} cannot be read, so "
                               "checkpoint= cannot split its loop") from exc
    text = textwrap.dedent("".join(lines))
    fdef = ast.parse(text).body[0]
    ast.increment_lineno(fdef, first - 1)
    if not isinstance(fdef, ast.FunctionDef):
        raise UnsupportedError(f"checkpoint= needs a plain def, not {type(fdef).__name__}",
                               _location(file, fdef))
    all_lines = linecache.getlines(file)
    loops = [_analyse(fdef, s, file) for s in fdef.body if is_range_loop(s)]
    if not loops:
        raise UnsupportedError(
            f"checkpoint= splits a loop of {fn.__qualname__} into segments, but its body has "
            "no for loop over range(...) at the top level", _location(file, fdef),
            hint="write the long loop as `for t in range(n):` directly in the function's body, "
                 "or put the steps in a helper decorated with @adgen.checkpoint")
    n = next(_COUNTER)
    out_file = f"<adgen checkpoint={every} of {fn.__qualname__} #{n}>"
    _FILES[out_file] = file
    cells = _cells(fn)
    reserved = {x.id for x in ast.walk(fdef) if isinstance(x, ast.Name)} | set(cells)
    prefix = _fresh_prefix(reserved)
    out_lines = [""] * max(len(all_lines), fdef.end_lineno) + [""]
    for k in range(fdef.lineno, fdef.end_lineno + 1):
        out_lines[k - 1] = all_lines[k - 1] if k - 1 < len(all_lines) else "\n"
    segments: dict[str, Any] = {}
    parts: list[tuple[Any, set[int]]] = []  # each segment and the inputs it returns
    owner = _owner(fn)
    from adgen.transforms.pipeline import compile_function

    from adgen.checkpointing import segment_rule, written_positions

    for k, loop in enumerate(loops, 1):
        name = _segment_name(prefix, fn, loop)
        seg = None
        for attempt in ("every input", "what it changes"):
            # one file per segment function: each keeps its loop's lines at their numbers
            seg_lines = [""] * (len(out_lines) + 1)
            def_line = _rewrite_loop(loop, k, prefix, every, out_lines, seg_lines, all_lines,
                                     name)
            seg_file = f"<adgen checkpoint segment {k} of {fn.__qualname__} #{n}" + \
                (">" if attempt == "every input" else ", returning what it changes>")
            _FILES[seg_file] = file
            linecache.cache[seg_file] = (len("".join(seg_lines)), None, seg_lines, seg_file)
            seg = _define(seg_lines, seg_file, def_line, fn, cells, {}, owner=owner)
            # a method's segment reads as one of its class (private names mangle alike)
            seg.__qualname__ = ".".join(fn.__qualname__.split(".")[:-1] + [name])
            seg.__name__ = name
            if attempt == "every input":
                _refuse_argument_writes(fn, fdef, loop, seg, mutation, file)
                # compiled with every input returned: the inputs it writes in place (through
                # helpers too) are returned, with what it rebinds for later
                compiled = compile_function(seg, mutation=mutation)
                exact = written_positions(seg, mutation)
                written = set(exact)
                if compiled.mutates_containers:
                    written = set(range(4 + len(loop.inputs)))  # which ones: unknown
                kept = {x for j, x in enumerate(loop.inputs) if j + 4 in written}
                changed = {j for j in exact if j >= 4}
                loop.outputs = sorted(kept | set(loop.rebound))
                # copied first by the segment itself: what it is known to write (a list it
                # appends to too: list.copy() is enough, its items stay as they are)
                # (not a name the body updates with `x += ...`: it may be a number, which
                # has no .copy(); the rule copies the segment's written inputs anyway)
                if compiled.written_params is not True:
                    augmented = {st.target.id for st in ast.walk(loop.node)
                                 if isinstance(st, ast.AugAssign) and
                                 isinstance(st.target, ast.Name)}
                    loop.copies = sorted(x for j, x in enumerate(loop.inputs)
                                         if j + 4 in exact and x not in augmented)
        shelves = {k + 4 for k, x in enumerate(loop.inputs)
                   if not items_written(loop.node.body, x)}
        returned = {j + 4 for j, x in enumerate(loop.inputs) if x in loop.outputs}
        parts.append((seg, returned))
        segments[name] = segment_rule(seg, mutation, _location(file, loop.node), loop.checks,
                                      shelves, changed, returned)
    linecache.cache[out_file] = (len("".join(out_lines)), None, out_lines, out_file)
    new = _define(out_lines, out_file, fdef.lineno, fn, cells, segments, owner=owner)
    new.__adgen_segmented__ = (fn, every)  # type: ignore[attr-defined]
    new.__adgen_segments__ = parts  # type: ignore[attr-defined]
    return new


def _segment_name(prefix: str, fn: Any, loop: _Loop) -> str:
    return f"{prefix}{fn.__name__}_loop{loop.node.lineno}"


def _refuse_argument_writes(fn: Any, fdef: ast.FunctionDef, loop: _Loop, seg: Any,
                            mutation: str, file: str) -> None:
    """A loop that writes an argument of ``fn`` in place (the caller's array) is refused: the
    segments work on copies, so the caller's array would keep its values."""
    from adgen.checkpointing import written_positions

    params = param_names(fdef)
    rebound = stores_of_statements(fdef.body[:fdef.body.index(loop.node)])
    # positions 0-3 are the segment's own bounds (lo, hi, a, c): never a user's name (an
    # argument called x0 was taken for one)
    names: list[str | None] = [None] * 4 + list(loop.inputs)
    for k in sorted(written_positions(seg, mutation)):
        name = names[k] if k < len(names) else None
        if name in params and name not in rebound:
            raise UnsupportedError(
                f"checkpoint=: the loop writes the argument {name} of {fn.__qualname__} in "
                "place; the segments work on copies, so the caller's array would keep its "
                "values", _location(file, loop.node),
                hint=f"copy it before the loop ({name} = {name}.copy()) and return what the "
                     "caller needs")


def remap_error(exc: AdgenError) -> AdgenError:
    """An error about a segmented function, naming the user's file instead of the rewrite's
    (the lines are the user's: the rewrite keeps them)."""
    changed = False
    for attr in ("location", "captured_at"):
        loc = getattr(exc, attr, None)
        if isinstance(loc, Location) and loc.file in _FILES:
            user = _FILES[loc.file]
            setattr(exc, attr, Location(user, loc.line, loc.col,
                                        linecache.getline(user, loc.line)))
            changed = True
    if changed:
        exc.args = (exc.format(),)
    text = str(exc)
    for fake, user in _FILES.items():
        if fake in text:
            exc.message = exc.message.replace(fake, user)
            exc.args = (exc.format(),)
    return exc


def _analyse(fdef: ast.FunctionDef, loop: ast.For, file: str) -> _Loop:
    """What the loop body reads, changes and carries; refuses what segments cannot split."""
    where = _location(file, loop)
    if not isinstance(loop.target, ast.Name):
        raise UnsupportedError("checkpoint= needs the loop variable to be one name",
                               where, hint="write `for t in range(...)`")
    if loop.orelse:
        raise UnsupportedError("checkpoint= cannot split a for loop with an else: clause",
                               where, hint="move the else: block after the loop")
    if loop.body[0].lineno <= loop.iter.end_lineno:
        raise UnsupportedError("checkpoint= needs the loop body on lines of its own", where,
                               hint="start the body on the line after `for ...:`")
    for node in walk_body(loop.body):
        what = None
        if isinstance(node, (ast.Break, ast.Return)):
            what = f"a {type(node).__name__.lower()} statement"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            what = f"a nested {'class' if isinstance(node, ast.ClassDef) else 'def'}"
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom)):
            what = f"a {type(node).__name__.lower()} statement"
        if what:
            raise UnsupportedError(
                f"checkpoint= cannot split a loop whose body has {what} into segments",
                _location(file, node),
                hint="checkpoint= cuts the loop into segments of a fixed number of steps, "
                     "so the body must run to its end every step: keep the loop as it is, drop "
                     "checkpoint= and put the body's work in a helper decorated with "
                     "@adgen.checkpoint (u, v = step(u, v) in the loop)")
    params = param_names(fdef)
    local = params | {x.id for x in ast.walk(fdef) if isinstance(x, ast.Name) and
                      isinstance(x.ctx, ast.Store)}
    local |= {a.asname or a.name.split(".")[0] for x in ast.walk(fdef)
              if isinstance(x, (ast.Import, ast.ImportFrom)) for a in x.names}
    local |= {x.name for x in ast.walk(fdef) if x is not fdef and
              isinstance(x, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    before, maybe = bound_before(fdef.body[:fdef.body.index(loop)], params)
    read_first = exposed(loop.body, {loop.target.id}) & local
    stores = stores_of_statements(loop.body) | {loop.target.id}
    carried = read_first & stores
    for name in sorted(carried - before):
        raise UnsupportedError(
            f"checkpoint= splits the loop into segments, and {name} is kept from one iteration "
            "to the next but not bound before the loop", where,
            hint=f"bind {name} before the loop (e.g. {name} = None)")
    after = set()
    for s in fdef.body[fdef.body.index(loop) + 1:]:
        after |= {x.id for x in ast.walk(s) if isinstance(x, ast.Name) and
                  isinstance(x.ctx, ast.Load)}
    loaded_elsewhere = set(after)
    inputs = sorted(read_first - {loop.target.id})
    # every input comes back (a helper the body calls may change it in place: the segment
    # runs on copies of what it writes), and what the body binds that is read after the loop
    outputs = sorted(set(inputs) | (stores & after))
    for name in sorted((maybe - before) & loaded_elsewhere):
        raise UnsupportedError(
            f"checkpoint= needs to check that {name} does not share memory with what the loop "
            "changes, but it is bound only on some paths before the loop", where,
            hint=f"bind {name} before the loop on every path (e.g. {name} = None first)")
    checks = sorted((before & (loaded_elsewhere | params)) - set(inputs))
    _refuse_closures_over(fdef, loop, stores | set(inputs), file)
    return _Loop(loop, inputs, outputs, checks, sorted((stores & after) | carried))


def _refuse_closures_over(fdef: ast.FunctionDef, loop: ast.For, changed: set[str],
                          file: str) -> None:
    """A nested def or lambda outside the loop that reads a name the loop changes would read
    the function's binding of it, not the segment's: refused."""
    inside = {id(n) for n in ast.walk(loop)}
    for node in ast.walk(fdef):
        if node is fdef or id(node) in inside or not isinstance(
                node, (ast.FunctionDef, ast.Lambda, ast.AsyncFunctionDef)):
            continue
        own = param_names(node) | {x.id for x in ast.walk(node) if isinstance(x, ast.Name)
                                    and isinstance(x.ctx, ast.Store)}
        free = {x.id for x in ast.walk(node) if isinstance(x, ast.Name) and
                isinstance(x.ctx, ast.Load)} - own
        shared = sorted(free & changed)
        if shared:
            what = "lambda" if isinstance(node, ast.Lambda) else f"def {node.name}"
            raise UnsupportedError(
                f"checkpoint=: the {what} reads {', '.join(shared)} from the function, and "
                "the loop changes it; in a segment it would read the value from before the "
                "segment", _location(file, node),
                hint=f"pass {shared[0]} to it as an argument")


def _rewrite_loop(loop: _Loop, k: int, prefix: str, every: int | bool,
                  out_lines: list[str], seg_lines: list[str], all_lines: list[str],
                  name: str) -> int:
    """Writes the segment's lines and the loop over segments in place of the loop; returns
    the line of the segment's def."""
    node = loop.node
    header = node.lineno
    indent = all_lines[header - 1][:len(all_lines[header - 1]) -
                                   len(all_lines[header - 1].lstrip())]
    args = [ast.unparse(a) for a in node.iter.args]
    a, b, c = (["0"] + args + ["1"])[:3] if len(args) == 1 else (args + ["1"])[:3]
    p = f"{prefix}{k}_"
    size = f"max(1, int({p}n ** 0.5))" if every is True else str(every)
    params = [f"{p}lo", f"{p}hi", f"{p}a", f"{p}c", *loop.inputs]
    # the segment: its own def, the loop over its part of the range, the user's body lines
    def_line = header - 1
    if loop.copies and header >= 3:
        # what the body writes in place, copied first: the segment writes its own buffers
        # (cheaper code than writing its arguments) and leaves its inputs as they were
        def_line = header - 2
        seg_lines[header - 2] = indent + "; ".join(f"{x} = {x}.copy()"
                                                   for x in loop.copies) + "\n"
    seg_lines[def_line - 1] = f"def {name}({', '.join(params)}):\n"
    seg_lines[header - 1] = (f"{indent}for {node.target.id} in range({p}a + {p}lo * {p}c, "
                             f"{p}a + {p}hi * {p}c, {p}c):\n")
    for line in range(node.body[0].lineno, node.end_lineno + 1):
        seg_lines[line - 1] = all_lines[line - 1]
    if node.end_lineno >= len(seg_lines):
        seg_lines.append("")
    ret = ", ".join(loop.outputs) + ("," if len(loop.outputs) == 1 else "")
    seg_lines[node.end_lineno] = f"{indent}return ({ret})\n"
    # the loop over segments, on the loop's own first two lines
    out_lines[header - 1] = (f"{indent}{p}a = {a}; {p}b = {b}; {p}c = {c}; "
                             f"{p}n = len(range({p}a, {p}b, {p}c)); {p}k = {size}\n")
    call = (f"{name}({p}s, min({p}s + {p}k, {p}n), {p}a, {p}c"
            + "".join(f", {x}" for x in loop.inputs + loop.checks) + ")")
    target = f"({ret}) = " if loop.outputs else ""
    out_lines[header] = f"{indent}for {p}s in range(0, {p}n, {p}k): {target}{call}\n"
    for line in range(header + 2, node.end_lineno + 1):
        out_lines[line - 1] = "\n"
    return def_line


def _define(lines: list[str], file: str, line: int, fn: Any, cells: dict[str, Any],
            extra: dict[str, Any], owner: str | None) -> Any:
    """The function defined at ``line`` of the synthetic ``file``, with ``fn``'s globals,
    its closure cells, and ``extra`` values as cells of their own."""
    block = inspect.getblock(lines[line - 1:])
    src = textwrap.dedent("".join(block))
    tree = ast.parse(src)
    ast.increment_lineno(tree, line - 1)
    fdef = tree.body[0]
    fdef.decorator_list = []
    body: list[ast.stmt] = [fdef]
    if owner:  # compiled in a class of the owner's name: private names mangle alike
        body = [ast.ClassDef(name=owner, bases=[], keywords=[], body=[fdef],
                             decorator_list=[], type_params=[])]
    names = list(cells) + list(extra)
    factory = ast.FunctionDef(
        name="adgen_factory", args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=x) for x in names], kwonlyargs=[],
            kw_defaults=[], defaults=[]),
        body=body + [ast.Return(value=None)], decorator_list=[], returns=None,
        type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    for node in ast.walk(factory):
        if node is factory or node in body or isinstance(node, (ast.arguments, ast.arg)):
            node.lineno = node.end_lineno = line
    ast.fix_missing_locations(module)
    code = compile(module, file, "exec", dont_inherit=True)
    fcode = _find_code(code, fdef.name)
    values = {**{k: v for k, v in cells.items()},
              **{k: types.CellType(v) for k, v in extra.items()}}
    closure = tuple(values[x] if x in values else types.CellType() for x in fcode.co_freevars)
    # fn's defaults belong to fn's signature: a segment's parameters are its loop's inputs
    # (given fn's defaults, `def f(x0, k, damping=0.1)` gave its segment's last input 0.1)
    own = fdef.name == fn.__name__
    new = types.FunctionType(fcode, fn.__globals__, fdef.name,
                             fn.__defaults__ if own else None, closure)
    new.__kwdefaults__ = fn.__kwdefaults__ if own else None
    new.__module__ = fn.__module__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    return new


def _find_code(code: Any, name: str) -> Any:
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            if const.co_name == name:
                return const
            found = _find_code(const, name)
            if found is not None:
                return found
    return None


def _cells(fn: Any) -> dict[str, Any]:
    return dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))


def _owner(fn: Any) -> str | None:
    parts = fn.__qualname__.split(".")
    return parts[-2] if len(parts) >= 2 and parts[-2] != "<locals>" else None


def _fresh_prefix(taken: set[str]) -> str:
    prefix = "ckpt_"
    while any(t.startswith(prefix) for t in taken):
        prefix = "c" + prefix
    return prefix


def _location(file: str, node: ast.AST) -> Location:
    line = getattr(node, "lineno", 0) or 0
    return Location(file, line, getattr(node, "col_offset", 0) or 0,
                    linecache.getline(file, line))
