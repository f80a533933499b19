"""Functions held in a variable that generated code runs as they are, checked at the call.

A call of a function adgen cannot name when it compiles (``cb()`` of a parameter, ``c()`` of
a list's item, ``CB["cb"]()``) through which no derivative flows (its arguments have none,
its result is not used) runs as it is: adgen does not differentiate it, and did not see what
it writes. A callback that writes in place an array it is not given::

    WORK = np.zeros(4)
    def fill(): WORK[1:] *= 3
    def f(x, cb):
        WORK[:] = x
        cb()                      # WORK's values, and their derivative, change here
        return np.sum(WORK ** 2)

was a silently wrong gradient under both policies ([2, 12, 18, 24] for [2, 36, 54, 72]). The
forward now calls such a callee through :func:`checked_callable` (transforms/unseen_calls.py),
which returns it unchanged after refusing, at the call, one that writes an array the call
does not pass it:

- a Python function (a lambda, a function of another module, a bound method, a
  ``functools.partial``, a callable object's ``__call__``): adgen compiles it and reads what
  it writes (``Compiled.free_writes``: a global or closure array; ``written_params``: its
  object's arrays, ``self.buf``, or the arguments a partial gives it);
- a method of an ndarray that writes it (``WORK.fill``, ``WORK.sort``);
- a partial of a function adgen has no source for (NumPy's, ``operator``'s) that gives it an
  array, when the function writes its arguments (``partial(np.copyto, WORK, 2.0)``,
  ``out=WORK``).

Functions without source (builtins, C functions) write only the arrays they are given (an
argument, the array a method is bound to, a partial's arguments): those are the cases above.
A Python function adgen cannot compile is refused when it stores into an array that a
global or closure name of it holds (read from its bytecode), and runs as it is otherwise.
"""

from __future__ import annotations

import dis
import functools
import linecache
import types
from typing import Any

import numpy as np

from adgen.errors import AdgenError, Location, UnsupportedError
from adgen.generated_lines import user_line
from adgen.transforms.analyses.number_updates import holds_numbers

# ndarray methods that write the array they are bound to
_ARRAY_WRITERS = frozenset({"fill", "sort", "partition", "put", "itemset", "resize",
                            "setfield", "setflags", "byteswap", "__setitem__", "__iadd__",
                            "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                            "__imod__", "__ipow__", "__imatmul__", "__iand__", "__ior__",
                            "__ixor__", "__ilshift__", "__irshift__"})
# functions without source that write an argument in place (besides out=)
_ARGUMENT_WRITERS = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal",
                               "put_along_axis", "shuffle", "setitem", "iadd", "isub", "imul",
                               "itruediv", "ifloordiv", "imod", "ipow", "imatmul", "iand",
                               "ior", "ixor", "ilshift", "irshift", "at"})
_HINT = ("pass the array to the function as an argument and call the function by its name "
         "(fill(WORK)), whose in-place writes adgen follows, or make the write in the "
         "function differentiated")
# Python functions that passed the checks of their code, with the rule registry's generation
# then and their compilation (None: adgen cannot compile it)
_CHECKED: dict[Any, tuple[int, Any]] = {}


def checked_callable(fn: Any, owner: Any = None, reads: dict[str, tuple[Any, int]] | None = None,
                     file: str = "", given: bool = False) -> Any:
    """``fn``, after refusing one that writes in place an array it is not passed (a global
    or closure array, its object's, a partial's argument). Generated code calls a callee it
    could not name when it compiled through this: ``checked_callable(cb)(3.0)``;
    ``checked_callable(opts.hook, opts)`` for an attribute, where a method of ``owner``
    itself (``self.reset()``) may write ``owner``'s arrays, as a method called on an object
    the function is given does without a check (only its writes of other arrays are
    refused). With ``reads`` (``{'CACHE': (CACHE, 13)}``: global or closure containers the
    function reads into its result after the call, at those lines of ``file``), ``fn``
    wrapped: the call refuses, at the read, a value that may carry a derivative that ``fn``
    put into one of them (:func:`_reading_back`).
    With ``given`` (``sorted(xs, key=checked_callable(k, None, None, '', True))``: a
    function a library function calls on the values it is given, its key held in a
    parameter), also refused where it writes its own arguments in place, which the library
    call's rule never sees (transforms/called_back.py checks the keys the compiler can name).

    Raises:
        UnsupportedError: naming the callee and the write (its line, where adgen can read
            it), with how to pass the array instead.
    """
    if fn is None:
        return None  # (sorted(xs, key=k) with k None)
    kind = type(fn)
    if kind is types.FunctionType:
        _check_function(fn, fn, (), ())
    elif kind is types.MethodType:
        own = owner is not None and fn.__self__ is owner
        _check_function(fn, fn.__func__, () if own else (fn.__self__,), ())
    elif kind is functools.partial:
        _check_partial(fn)
    elif kind is types.BuiltinMethodType or kind is types.MethodWrapperType:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, np.ndarray) and fn.__name__ in _ARRAY_WRITERS:
            _refuse(fn, f"writes the array it is a method of in place ({_name(fn)})")
    elif not isinstance(fn, type):
        call = getattr(kind, "__call__", None)
        if isinstance(call, types.FunctionType):  # an object called as a function
            _check_function(fn, call, (fn,), ())
    if given:
        _refuse_argument_writes(fn)
    checked = _reading_back(fn, reads, file) if reads else fn
    from adgen.counter_slots import COUNTERS

    if COUNTERS and fn is not _call_forward():
        # a counter a function updates as a number (STATS["calls"] += 1): fn must not put
        # an array there (adgen.counter_slots; call_forward checks by itself)
        from adgen.counter_slots import keeping_counters

        # (around adgen's call_jvp(cb, ...): the callee shown is its first argument)
        adgens = str(getattr(fn, "__module__", "")).startswith("adgen.")
        return keeping_counters(checked, None if adgens else fn)
    return checked


def _refuse_argument_writes(fn: Any) -> None:
    """Refuses a Python function (a partial or bound method of one) that writes its own
    arguments in place: called by a library function on values it is given (a key=)."""
    inner = fn
    while isinstance(inner, functools.partial):
        inner = inner.func
    if isinstance(inner, types.MethodType):
        inner = inner.__func__
    if not isinstance(inner, types.FunctionType) or \
            str(getattr(inner, "__module__", "")).startswith(("numpy", "adgen.")):
        return
    from adgen.rules import registry
    from adgen.transforms.pipeline import compile_function

    if registry.lookup(inner) is not None:
        return
    try:
        compiled = compile_function(inner)
    except AdgenError:
        return
    written = compiled.written_params if compiled.mutates_params else ()
    if written:
        names = "an argument" if written is True else ", ".join(sorted(written))
        _refuse(fn, f"is called by a library function (sorted's, max's, list.sort's key=) on "
                    f"the values it is given, and writes {names} in place",
                "have it only read what it is given (return a[1]) and make the change before "
                "or after the call, where adgen follows it")


def _call_forward() -> Any:
    from adgen.runtime import call_forward

    return call_forward


def _reading_back(fn: Any, reads: dict[str, tuple[Any, int]], file: str) -> Any:
    """``fn``, called so that a value that may carry a derivative it puts into one of the
    containers of ``reads`` (a new or replaced item of a list or dict: ``CACHE["y"] = y``,
    ``HIST.append(y)`` of a callback held in a parameter or a dict) is refused at the line
    that reads the container back: the gradient would miss its part (a silently wrong
    gradient). What the callee leaves as it was (a Butcher tableau, a dict of options) and
    what it puts there without a derivative (a count, a string, a literal of its code:
    ``CACHE["k"] = 2.5``) pass."""

    def call(*args: Any, **kwargs: Any) -> Any:
        before = {g: _items(c) for g, (c, _) in reads.items()}
        out = fn(*args, **kwargs)
        # (around adgen's call_forward(cb, y) / call_jvp: the callee is cb)
        shown = args[0] if args and str(getattr(fn, "__module__", "")).startswith(
            "adgen.") else fn
        for g, (container, line) in reads.items():
            put = _put_since(container, before[g], shown)
            if put is not None:
                where = _user_read(file, line)
                err = UnsupportedError(
                    f"{g}, a global or closure {type(container).__name__}, is read back into "
                    f"the result (line {where.line}) after {_name(shown)}, called through a "
                    f"variable, put a value with a derivative into it ({g}[{put!r}]): adgen "
                    "does not follow a derivative through a container the function does not "
                    "own (the gradient would miss it)", where,
                    hint="return the value from the callback and use what it returns "
                         "(y = cb(y)), or pass the container to the function as an argument")
                err.__adgen_located__ = True  # type: ignore[attr-defined]  # (at the read)
                raise err
        return out

    return call


def _user_read(file: str, line: int) -> Location:
    """The user's line ``line`` of ``file``, or of the user's file that generated code (jvp
    code that hessian differentiates) was compiled from, by its ``# line N:`` comments."""
    from adgen.transforms.emit import USER_FILES

    user = USER_FILES.get(file)
    found = user_line("".join(linecache.getlines(file)), line) if user else None
    if found is not None:
        file, line = user, found[0]
    text = linecache.getline(file, line)
    return Location(file, line, len(text) - len(text.lstrip()), text)


def _items(container: Any) -> Any:
    """What ``container`` holds, item by item (the objects themselves, compared by
    identity)."""
    return dict(container) if isinstance(container, dict) else list(container)


def _put_since(container: Any, before: Any, fn: Any) -> Any:
    """The key (the position, for a list) of an item of ``container`` that is new or
    another object than in ``before`` and may carry a derivative, else None. A literal of
    ``fn``'s code (``CACHE["k"] = 2.5``: the constant object itself) carries none."""
    now = container.items() if isinstance(container, dict) else enumerate(container)
    literals = None
    for key, value in now:
        old = before.get(key, before) if isinstance(before, dict) else \
            (before[key] if key < len(before) else before)
        if old is not value and _may_carry(value):
            if literals is None:
                literals = _literals(fn)
            if id(value) not in literals:
                return key
    return None


def _literals(fn: Any) -> set[int]:
    """The ids of the constants in the code of ``fn`` (a function, a bound method, a
    partial's function, a callable object's ``__call__``), of its compiled forward, and of
    the functions defined in them: objects Python made when it compiled the code, which no
    argument's value reached (not its defaults, which a nested def may compute from a value
    with a derivative)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    if not isinstance(fn, types.FunctionType):
        fn = getattr(type(fn), "__call__", None)
    codes = [fn.__code__] if isinstance(fn, types.FunctionType) else []
    if codes:
        # run through adgen's call_forward or call_jvp, the callee's compiled forward or jvp
        # code stores its own constants (CACHE['k'] = 2.5 of the generated code): those of
        # every compilation of it the compiler holds (the one that ran is among them)
        from adgen.transforms.compile_cache import CLOSURES, COMPILED, TANGENTS

        compiled = [c for held, c in [*COMPILED.values(), *TANGENTS.values()] if held is fn]
        compiled += [c for key, c in CLOSURES.items() if key[0] is fn.__code__]
        for c in compiled:
            run = getattr(c, "forward", None) or getattr(c, "jvp", None)
            if isinstance(getattr(run, "__code__", None), types.CodeType):
                codes.append(run.__code__)
    out: set[int] = set()
    while codes:
        code = codes.pop()
        for c in code.co_consts:
            if isinstance(c, types.CodeType):
                codes.append(c)
            else:
                out.add(id(c))
    return out


def _may_carry(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` may carry a derivative: a float or complex number or array, or a
    list, tuple or dict holding one."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.issubdtype(value.dtype, np.inexact)
    if isinstance(value, (float, complex)):
        return True
    if depth < 3 and isinstance(value, (list, tuple)):
        return any(_may_carry(v, depth + 1) for v in value)
    if depth < 3 and isinstance(value, dict):
        return any(_may_carry(v, depth + 1) for v in value.values())
    return False


def checked_at(fn: Any, where: Any) -> None:
    """:func:`checked_callable` for a callee the compiler knows (a global ``OP =
    functools.partial(lap, out=BUF)``, called as ``OP(u)``): its refusal located at ``where``,
    the call in the user's source, and raised when the function is compiled."""
    try:
        checked_callable(fn)
    except AdgenError as err:
        if err.location is None:
            err.location = where
        raise


def _check_partial(fn: functools.partial) -> None:
    inner, args, keywords = fn, [], {}
    while isinstance(inner, functools.partial):  # partial(partial(f, a), b): f(a, b)
        args[:0] = inner.args
        keywords = {**inner.keywords, **keywords}
        inner = inner.func
    given = [*args, *keywords.values()]
    if isinstance(inner, types.MethodType):
        given.insert(0, inner.__self__)
        inner = inner.__func__
    if isinstance(inner, types.FunctionType):
        _check_function(fn, inner, tuple(given[:len(given) - len(keywords)]),
                        tuple(keywords), keyword_values=tuple(keywords.values()))
        return
    if isinstance(getattr(inner, "__self__", None), np.ndarray) and \
            getattr(inner, "__name__", "") in _ARRAY_WRITERS:
        _refuse(fn, f"writes the array it is a method of in place ({_name(inner)})")
    arrays = any(isinstance(a, np.ndarray) for a in given)
    name = getattr(inner, "__name__", "")
    if arrays and (name in _ARGUMENT_WRITERS or keywords.get("out") is not None):
        _refuse(fn, f"is a partial of {name} given an array, which it writes in place")


def _check_function(shown: Any, fn: types.FunctionType, bound: tuple[Any, ...],
                    bound_keywords: tuple[str, ...], depth: int = 3, *,
                    keyword_values: tuple[Any, ...] = ()) -> None:
    """Refuses ``fn`` (called as ``shown``, with ``bound`` given before the call's own
    arguments and ``bound_keywords`` by name, their values ``keyword_values``) when it writes
    an array the call cannot see."""
    from adgen.rules import registry

    if registry.lookup(fn) is not None or "_forward.<locals>." in fn.__qualname__ or \
            str(getattr(fn, "__module__", "")).startswith(("numpy", "adgen.")):
        return  # a rule's; a nested def of the function differentiated (checked there)
    generation = registry._GENERATION[0]
    known = _CHECKED.get(fn)
    if known is not None and known[0] == generation:
        compiled = known[1]
    else:
        from adgen.transforms.pipeline import compile_function

        try:
            compiled = compile_function(fn)
        except AdgenError:
            compiled = None
        # what it writes of its free names' arrays, and the functions it names
        _check_code(shown, fn, depth, readable=compiled is not None)
        if compiled is not None and compiled.free_writes:
            w = compiled.free_writes[0]
            _refuse(shown, f"writes a global or closure array in place at {w} "
                           f"({w.source_line.strip()})")
        if len(_CHECKED) > 256:
            _CHECKED.clear()
        # (None: adgen cannot compile it, which is not cached by the compiler: not tried at
        # each call)
        _CHECKED[fn] = (generation, compiled)
    if compiled is not None and compiled.mutates_containers and bound and \
            isinstance(shown, types.MethodType) and _holds_array(bound[0]):
        # run = self.features; run() setting self.h, read after the call: the gradient
        # missed what it set (a silently zero gradient); self.features() is followed
        _refuse(shown, "sets an attribute of its object (or changes a list or dict it holds)",
                f"call the method on its object where it is used ({_owner_call(shown)}), "
                "whose changes of the object adgen follows, or have it return the values")
    if compiled is not None and compiled.mutates_params and (bound or bound_keywords) and \
            not holds_numbers(compiled.number_updates, bound):  # (self.calls += 1 passes)
        code = fn.__code__
        names = code.co_varnames[:code.co_argcount]
        given = set(names[:len(bound)]) | set(bound_keywords)
        written = compiled.written_params
        hit = given if written is True else given & set(written)
        # (an array given by keyword too: partial(scale, into=buf) was a zero gradient)
        if hit and any(_holds_array(v) for v in (*bound, *keyword_values)):
            if isinstance(shown, functools.partial):
                _refuse(shown, f"writes {', '.join(sorted(hit))} in place, an argument the "
                               "partial gives it")
            _refuse(shown, "writes an array of its object in place")


def _check_code(shown: Any, fn: types.FunctionType, depth: int, readable: bool) -> None:
    """Refuses ``fn`` when its bytecode may write an array that one of its global or closure
    names holds, or when a function it names (a global or closure one, ``depth`` calls
    down) is refused. ``readable``: adgen compiled it, and its ``free_writes`` cover stores
    and updates (``WORK[1:] *= 3``), not a method's write (``WORK.fill(2.0)``), ``out=``
    or ``np.copyto(WORK, v)``, which are looked for here; otherwise (adgen cannot compile
    it, or a helper it calls writes a global array: ``def run(): fill()``) any store or
    update counts."""
    ops = list(dis.get_instructions(fn))
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    values = []
    for n in dict.fromkeys(i.argval for i in ops if i.opname in ("LOAD_GLOBAL", "LOAD_DEREF")):
        if n in cells:
            try:
                values.append((n, cells[n].cell_contents))
            except ValueError:
                continue
        else:
            values.append((n, fn.__globals__.get(n)))
    for _, value in values:
        if depth and isinstance(value, types.FunctionType) and value is not fn:
            try:
                _check_function(value, value, (), (), depth - 1)
            except UnsupportedError as err:
                _refuse(shown, f"calls {_name(value)}, which {getattr(err, 'what', '')}")
    if not any(_may_write(i, readable, fn.__code__.co_consts) for i in ops):
        return
    for n, value in values:
        if _holds_array(value):
            _refuse(shown, f"may write {n} in place (adgen reads the function's code, not "
                           "what it does)")


def _may_write(i: dis.Instruction, readable: bool, consts: tuple[Any, ...]) -> bool:
    """Whether instruction ``i`` may write an array in place: a method that writes its array
    (``.fill``), a NumPy function that writes an argument (``np.copyto``, ``np.add.at``),
    an ``out=`` keyword; and unless ``readable``, a store or an update of an item."""
    if i.opname in ("LOAD_ATTR", "LOAD_METHOD"):
        return i.argval in _ARRAY_WRITERS or i.argval in _ARGUMENT_WRITERS
    if i.opname == "KW_NAMES":  # a call's keywords' names (its argval: <unknown> in 3.11)
        return "out" in consts[i.arg]
    if isinstance(i.argval, tuple) and "out" in i.argval:  # (3.13: a constant before CALL_KW)
        return True
    return not readable and (i.opname in ("STORE_SUBSCR", "STORE_SLICE") or
                             (i.opname == "BINARY_OP" and i.argrepr.endswith("=")) or
                             i.opname.startswith("INPLACE_"))


def _holds_array(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return True
    space = getattr(v, "__dict__", None)
    return isinstance(space, dict) and not isinstance(v, (type, types.ModuleType)) and \
        any(isinstance(x, np.ndarray) for x in space.values())


def _name(fn: Any) -> str:
    inner = fn.func if isinstance(fn, functools.partial) else fn
    return getattr(inner, "__qualname__", None) or getattr(inner, "__name__", None) or \
        type(inner).__name__


def _owner_call(fn: types.MethodType) -> str:
    return f"obj.{fn.__name__}(...) with obj your {type(fn.__self__).__name__}"


def _refuse(fn: Any, what: str, hint: str = _HINT) -> None:
    # (located where the forward made the call: forward_errors.annotate)
    err = UnsupportedError(
        f"{_name(fn)}, called through a variable where adgen runs it as it is, {what}: "
        "adgen does not see that write, and the gradient would miss it", hint=hint)
    err.what = what  # type: ignore[attr-defined]  # (for a caller's refusal: calls fn, which ...)
    raise err
