"""Backends: what runs the generated forward and pullback.

- ``"default"``: the Python functions the pipeline compiles (NumPy, adgen.runtime).
- ``"numba"``: the same code rewritten into numba's nopython subset
  (``adgen.transforms.numba_emit``) and compiled with ``numba.njit(cache=True)``. What that
  subset cannot take raises an adgen error naming the user's line, when the gradient is
  compiled (before the user's code runs).
- ``"auto"``: numba where it can; where it cannot, the default backend, with a
  :class:`NumbaFallbackWarning` that says why (the same message the numba backend raises).

The numba backend compiles once per argument types (numbers: float, int or bool; arrays:
dtype and rank), as numba does. Its gradients live in static buffers, one per array, which
is right only when the arrays passed in do not share memory: every call checks that
(``np.may_share_memory`` of each pair), and raises (``"numba"``) or runs the default backend
(``"auto"``) when they may.

Caching (:mod:`adgen.numba_cache`): each nopython module is written to a cache directory and
imported from there, so numba keeps its machine code; a later process generating the same code
loads the compiled functions, and the rewrite's result, instead of compiling again.

``grad`` runs one compiled call (the module's gradient function: the forward, then the
pullback seeded with 1.0) through ``Compiled.gradient``; ``vjp`` runs the forward and the
pullback.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import re
import sys
import threading
import types
import warnings
from typing import Any

import numpy as np

from adgen.errors import AdgenError, CompilerError, UnsupportedError
from adgen.numba_arguments import arg_types, data_type, sig_types
from adgen.numba_cache import cache_dir, code_key, read_code, runtime_hash, write_code
from adgen.numba_callees import callee_names, callee_trees, names_in, read_at
from adgen.numba_errors import (
    dispatch_refused,
    located,
    overwrite_error,
    saved_view_error,
)

BACKENDS = ("default", "numba", "auto")


class NumbaFallbackWarning(UserWarning):
    """``backend="auto"`` ran the default backend: the message says where and why."""


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")


def primal(fun: Any) -> Any:
    """The Python function of a ``numba.njit`` dispatcher (its ``py_func``); else ``fun``."""
    if type(fun).__module__.startswith("numba.") and hasattr(fun, "py_func"):
        return fun.py_func
    return fun


def compile_for(fn: Any, mutation: str, wrt: tuple[int, ...] | None,
                sig: tuple[Any, ...] | None, backend: str) -> Any:
    """The compiled function of ``fn`` for ``backend`` (a ``pipeline.Compiled``).

    Raises:
        AdgenError: what the default pipeline refuses, and under ``"numba"`` what nopython
            mode cannot take, naming the user's file and line.
    """
    from adgen.transforms.pipeline import compile_function

    check_backend(backend)
    base = compile_function(fn, mutation=mutation, wrt=wrt, sig=sig)
    if backend == "default":
        return base
    with _LOCK:
        hit = _NUMBA.get((id(base), backend))
        if hit is not None and hit[0] is base:
            return hit[1]
    try:
        compiled = _NumbaFunction(fn, base, sig, backend).compiled()
    except AdgenError as err:
        if backend == "numba":
            raise
        _fall_back(err)
        compiled = base
    with _LOCK:
        _NUMBA[(id(base), backend)] = (base, compiled)
        while len(_NUMBA) > _NUMBA_SIZE:  # as pipeline._CACHE: the oldest go first
            _NUMBA.pop(next(iter(_NUMBA)))
    return compiled


def numba_source(fn: Any, mutation: str, args: tuple[Any, ...], backend: str = "numba") -> str:
    """The nopython module the numba backend compiles for arguments like ``args`` (under
    ``"auto"``, the default backend's code where numba is refused, with the warning)."""
    from adgen.transforms.analyses.kinds import signature

    if not args:
        raise UnsupportedError(
            "the numba backend compiles per argument types: show its code with example "
            "arguments", hint="adgen.source(f, x, y, backend='numba')")
    base = compile_function_default(fn, mutation, signature(args))
    try:
        nf = _NumbaFunction(fn, base, signature(args), "numba")
        return nf.code_for(arg_types(args, fn)).source
    except AdgenError as err:
        if backend == "numba":
            raise
        _fall_back(err)
        return "import numpy as np\nfrom adgen.runtime import *\n\n\n" + base.source


def compile_function_default(fn: Any, mutation: str, sig: Any) -> Any:
    from adgen.transforms.pipeline import compile_function

    return compile_function(fn, mutation=mutation, sig=sig)


_LOCK = threading.RLock()
# numba-backend functions per default compilation (held with it, so its id stays its own)
_NUMBA: dict[tuple[int, str], tuple[Any, Any]] = {}
_NUMBA_SIZE = 256


_F64 = np.dtype(np.float64)
_EMPTY = np.empty
_NO_ARGUMENT = object()  # a parameter of fast_call's direct form the call did not give


def _canonical(cts: tuple[Any, ...]) -> tuple[Any, ...]:
    """The cotangents numba returned, each float64 array as a view with NumPy's own float64
    dtype: numba boxes arrays with a dtype object of its own (equal, not the same), which
    sends every array through the slow path of the checks ``adgen.grad`` makes with ``is``
    (``as_gradient``)."""
    return tuple([c.view(_F64) if type(c) is np.ndarray and c.dtype is not _F64 and
                  c.dtype == _F64 else c for c in cts])


def _inlined(code: Any) -> set[str]:
    """The functions numba inlines into the module's gradient function: the forward and the
    pullback it calls, where each is called there only (a recursive forward calls itself,
    and numba cannot inline that)."""
    if not code.gradient:
        return set()
    out = set()
    for name in (code.forward, code.pullback_into or code.pullback):
        # its def and the gradient function's call: no other call of it in the module
        if len(re.findall(rf"\b{re.escape(name)}\(", code.source)) == 2:
            out.add(name)
    return out


def _fall_back(err: AdgenError) -> None:
    warnings.warn(f"backend='auto' runs the default backend here: {err}",
                  NumbaFallbackWarning, stacklevel=4)


class _Run:
    """The compiled functions of one function for one set of argument types."""

    __slots__ = ("forward", "pullback", "apart", "gradient", "code", "outs", "why", "typed")

    def __init__(self, forward: Any, pullback: Any, apart: tuple[int, ...], gradient: Any,
                 code: Any, outs: tuple[int, ...], why: str | None) -> None:
        self.forward = forward  # None: the default backend runs these arguments (why)
        self.pullback = pullback
        self.apart = apart  # the array arguments that must not share memory (two or more)
        self.gradient = gradient  # grad's one compiled call, or None
        self.code = code  # the NumbaCode
        self.outs = outs  # the parameters whose gradients it writes into arrays given to it
        self.why = why
        # how many of the forward's compilations the pullback was compiled for (their types
        # of the saved values, and kept to them: _typed_pullback); the forward compiles
        # again for arguments of the same dtype and rank with another layout (a strided
        # view, then a contiguous array)
        self.typed = 0


class _NumbaFunction:
    """One function on the numba backend: its nopython code per argument types."""

    def __init__(self, fn: Any, base: Any, sig: tuple[Any, ...] | None, backend: str) -> None:
        try:
            import numba  # noqa: F401
        except ImportError:
            raise UnsupportedError(
                "backend='numba' needs numba, which is not installed",
                hint='pip install "adgen[numba]", or use backend="default"') from None
        from adgen.numba_guards import SavedViewRefused, StrictOverwrite

        self.fn = fn
        self.base = base
        self.backend = backend
        # what the nopython guards of mutation="strict" raise (then made a MutationError)
        self.overwrite = StrictOverwrite
        # what the pullback raises where a callee's saved view cannot be redirected
        self.saved_view = SavedViewRefused
        if base.trees is None:
            raise UnsupportedError(
                f"{base.name} is differentiated by a registered rule; the numba backend "
                "compiles generated code only", hint="use backend='default'")
        # the functions it calls, differentiated by the default pipeline: rewritten into the
        # same nopython module (adgen.transforms.numba_emit), for the types they are called with
        self.callees = callee_trees(base, {})
        known_callees = callee_names(base.callees)
        # the nopython module defines np and math only: another free name (a global float
        # or array, a helper, another module) would be missing there, or frozen into the
        # machine code by numba (a later change unseen, even through numba's cache)
        import builtins
        import math

        # an int or bool global is folded into the module: its guard recompiles the function
        # when the value changes, and the value is part of the module's source and hash
        self.constants: dict[str, Any] = {}
        self.globals: dict[str, tuple[Any, Any]] = {}
        callee_reads = names_in(self.callees)
        for g in base.guards:
            if g.mode == "attr":
                continue  # the function's defaults: calls must pass every argument (forward)
            if g.mode == "value" and type(g.expected) in (int, bool):
                self.constants[g.key] = g.expected
                continue
            if g.mode == "same" and (g.expected is np or g.expected is math or
                                     getattr(builtins, g.name, None) is g.expected or
                                     getattr(primal(g.expected), "__name__", None) in
                                     known_callees):
                continue
            data = data_type(g)
            if data is not None and g.key not in callee_reads:
                # a float or float array global: an extra argument of the forward, given its
                # value at each call (the guard refreshes g.ns), and saved for the pullback
                self.globals[g.key] = (g, data)
                continue
            if g.mode == "same" and callable(getattr(g.expected, "py_func", None)):
                raise UnsupportedError(
                    f"{getattr(fn, '__qualname__', fn)} calls {g.name}, a numba.njit function "
                    "that uses numba's own constructs (prange, typed containers, objmode), "
                    "which adgen leaves to numba and the numba backend's module does not "
                    "call", read_at(base, g.key), hint="use backend='default' / 'auto' "
                    "(which run it as numba compiled it), or compute its result outside and "
                    "pass it as an argument")
            raise UnsupportedError(
                f"{getattr(fn, '__qualname__', fn)} reads the global {g.name}: the numba "
                "backend compiles it in a module of its own, and numba would freeze a global "
                "value into the machine code", read_at(base, g.key),
                hint=f"pass {g.name} as an argument (or inline a helper function), or use "
                "backend='default' / 'auto'")
        self.nparams = len(base.trees[0].args.args)
        if sig is not None and len(sig) != self.nparams:
            raise UnsupportedError(
                f"the numba backend compiles {base.name} for its positional arguments, and "
                f"this call leaves {self.nparams - len(sig)} to their defaults (or passes them "
                "by keyword)", hint="pass every argument positionally, or use "
                "backend='default' / 'auto'")
        self.codes: dict[tuple[Any, ...], Any] = {}
        self.runs: dict[tuple[Any, ...], _Run] = {}
        # where the kind signature fixes the numba types of the arguments (float64 arrays of
        # each rank, floats: kinds.signature tells them apart, and the compiled function is
        # per signature), the one run, found without a key at each call
        self.exact = sig is not None and all(type(s) is int or s == "float" for s in sig)
        self.only: _Run | None = None
        self.lock = threading.RLock()
        types_ = sig_types(sig, fn)
        if types_ is not None:
            self.code_for(types_)  # what nopython mode cannot take: refused now

    def code_for(self, types_: tuple[Any, ...]) -> Any:
        from adgen import runtime
        from adgen.transforms.numba_module import to_nopython

        code = self.codes.get(types_)
        if code is None:
            forward, pullback, file = self.base.trees
            params = {a.id: t for a, t in zip(forward.args.args, types_)}
            params.update({k: t for k, (_, t) in self.globals.items()})
            key = code_key(self.base.trees, self.callees, params, self.constants,
                            tuple(self.globals), set(runtime.__all__))
            code = read_code(key)
            if code is not None:
                self.codes[types_] = code
                return code
            try:
                code = to_nopython(forward, pullback, file, params, set(runtime.__all__),
                                   self.constants, self.callees, tuple(self.globals))
            except AdgenError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug of the rewrite: name the pass
                raise CompilerError(
                    f"internal error in pass 'numba_emit' (the numba backend's rewrite of "
                    f"{self.base.name}): {type(exc).__name__}: {exc}",
                    hint="use backend='default', and report this case") from exc
            write_code(key, code)
            self.codes[types_] = code
        return code

    def compiled(self) -> Any:
        """A ``Compiled`` whose forward and pullback run the nopython code."""
        return dataclasses.replace(self.base, forward=self.forward, pullback=self.pullback,
                                   gradient=self.gradient, needs_scope=False)

    # -- compilation ---------------------------------------------------------------------------

    def _load(self, code: Any) -> tuple[Any, Any, Any, str, dict[str, Any]]:
        """The module's forward, pullback and (where it has one) gradient as numba
        dispatchers, its file name and namespace."""
        import linecache

        import numba

        digest = hashlib.sha256((code.source + runtime_hash()).encode()).hexdigest()[:20]
        modname = f"adgen_numba_{self.base.name}_{digest}"
        root = cache_dir()
        if root is not None:
            path = os.path.join(root, modname + ".py")
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as fh:
                    fh.write(code.source)
                os.replace(tmp, path)
            spec = importlib.util.spec_from_file_location(modname, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[modname] = module
            spec.loader.exec_module(module)  # type: ignore[union-attr]
            ns = vars(module)
            cache = True
        else:  # no writable cache: from memory, through linecache, without numba's cache
            path = f"<adgen {self.base.name} numba {digest}>"
            linecache.cache[path] = (len(code.source), None, code.source.splitlines(True),
                                     path)
            ns = {}
            exec(compile(code.source, path, "exec"), ns)  # noqa: S102 - adgen's own code
            cache = False
        # module globals: the gradient function calls the forward and the pullback as these
        # dispatchers (compiled, and cached, with it). Those two are inlined into it by
        # numba (inline="always": typed and lowered once, in the gradient function) instead
        # of being compiled apart and linked in: numba turns every function it compiles into
        # machine code, each with everything it calls linked in and optimised again, so a
        # gradient calling a compiled forward and pullback had their code optimised and
        # compiled twice (the Kalman filter's cold compile 21 -> 16 s). Called from Python
        # (vjp), they compile as any njit function.
        inlined = _inlined(code)
        for name in (code.forward, code.pullback, code.pullback_into):
            if name:
                ns[name] = numba.njit(cache=cache, inline="always" if name in inlined
                                      else "never")(ns[name])
        grad = numba.njit(cache=cache)(ns[code.gradient]) if code.gradient else None
        return ns[code.forward], ns[code.pullback], grad, path, ns

    def _build(self, types_: tuple[Any, ...], args: tuple[Any, ...]) -> tuple[Any, Any, Any]:
        """The forward, pullback and gradient dispatchers for these arguments, compiled: the
        gradient function where the module has one (its forward and pullback are compiled
        with it, one entry in numba's cache to load), else the forward and the pullback."""
        import numba

        code = self.code_for(types_)
        fwd, pb, grad, path, ns = self._load(code)
        args = args + tuple(g.ns[key] for key, (g, _) in self.globals.items())
        try:
            arg_types = tuple(numba.typeof(a) for a in args)
            # the gradient function also takes the arrays grad allocates for the gradients
            # of float64 array parameters (C-contiguous, np.empty)
            grads = tuple(numba.types.Array(numba.float64, args[k].ndim, "C")
                          for k in code.gradient_outs) if grad is not None else ()
            with warnings.catch_warnings():
                # numba's performance hints (np.dot of a non-contiguous view) are about
                # adgen's generated code, which the user did not write
                warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                (grad or fwd).compile(arg_types + grads)
            if arg_types in fwd.overloads:  # not when the gradient came from numba's cache
                self._check_columns(fwd.overloads[arg_types], code.columns)
            elif grad is not None and code.forward in _inlined(code):
                cres = grad.overloads.get(arg_types + grads)
                if cres is not None:  # else: from numba's cache, checked when compiled
                    self._check_inlined_columns(cres, fwd, arg_types, code)
            for name, columns in code.callee_columns.items():
                for cres in ns[name].overloads.values():  # compiled with the caller
                    self._check_columns(cres, columns)
            returns = fwd.overloads[arg_types].signature.return_type if grad is None else None
            if returns is not None and not isinstance(returns[0], numba.types.BaseTuple):
                # a tuple output's cotangent (has_aux's (1.0, None), vjp's) has a type of its
                # own: numba compiles the pullback for it at its first call
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                    pb.compile((numba.types.unliteral(returns[1]), numba.float64))
        except AdgenError:
            raise
        except Exception as err:  # noqa: BLE001 - numba's errors, and its lowering's
            # NotImplementedError (x[...] of an array): the code cannot be compiled
            raise located(err, code, path, self.base.trees[2]) from None
        return fwd, pb, grad

    def _check_inlined_columns(self, cres: Any, fwd: Any, arg_types: tuple[Any, ...],
                               code: Any) -> None:
        """:meth:`_check_columns` of the forward inlined into the gradient function
        ``cres``: its variables there are named ``<forward>_v<k>_<name>`` (numba's inliner,
        ``.`` of an SSA version made ``_``). Where none is found (another numba naming
        them otherwise), the forward is compiled apart for the check, as before inlining."""
        import numba

        typemap = getattr(cres.type_annotation, "typemap", None)
        if typemap is None:
            return
        local = set(fwd.py_func.__code__.co_varnames)
        prefix = re.compile(rf"{re.escape(code.forward)}_v\d+_(.+?)(?:\.\d+)?$")
        found: dict[str, list[Any]] = {}
        for var, ty in typemap.items():
            m = prefix.match(var)
            if m is None:
                continue
            name = m.group(1)
            if name not in local:  # an SSA version (t4.1 made t4_1), else numba's own
                version = re.match(r"(.+)_\d+$", name)
                if version is None or version.group(1) not in local:
                    continue
                name = version.group(1)
            found.setdefault(name, []).append(ty)
        if not found:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                fwd.compile(arg_types)
            self._check_columns(fwd.overloads[arg_types], code.columns)
            return
        self._check_types({f"{k}.{j}": t for k, ts in found.items()
                           for j, t in enumerate(ts)}, code.columns)

    def _check_columns(self, cres: Any, columns: dict[str, str]) -> None:
        """Every value recorded in a typed column has the type numba inferred for it (the
        column's dtype came from numba_emit.scalar_types): a mismatch is refused, since numba
        would cast the value into the column silently."""
        typemap = getattr(cres.type_annotation, "typemap", None)
        if typemap is None:
            # loaded from numba's cache: the code (named by its hash) was checked when it was
            # compiled, and numba's inference of the same code is the same
            return
        self._check_types(typemap, columns)

    def _check_types(self, typemap: dict[str, Any], columns: dict[str, str]) -> None:
        from numba.core import types as nt

        kinds = {"f8": nt.Float, "i8": nt.Integer, "b1": nt.Boolean}
        for var, ty in typemap.items():
            name = var.split(".")[0]
            kind = columns.get(name)
            if kind is None or isinstance(ty, (nt.Omitted, nt.NoneType)):
                continue
            if isinstance(ty, nt.Optional):
                ty = ty.type
            if not isinstance(ty, kinds[kind]) or (kind == "i8" and isinstance(ty, nt.Boolean)):
                raise UnsupportedError(
                    f"the numba backend recorded {name} of {self.base.name} in a {kind} column, "
                    f"but numba computes it as {ty}", hint="use backend='default', and report "
                    "this case (adgen's type analysis of the numba backend missed it)")

    # -- calls --------------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        if kwargs or len(args) != self.nparams:
            return self._default("keyword arguments, or parameters left to their defaults",
                                 args, kwargs)
        # the per-call key: cheap (an array's dtype object and rank, a number's type); the
        # argument types are validated once per key, in _run_for
        run = self.only or self._run_of(args)
        if run.forward is None:
            return self._default(run.why, args, kwargs)
        if run.apart:
            why = self._shared(args, run.apart)
            if why is not None:
                return self._default(why, args, kwargs)
        if self.globals:  # their values now (the api's guard check refreshed g.ns)
            args = args + tuple(g.ns[key] for key, (g, _) in self.globals.items())
        try:
            out, saved = run.forward(*args)
        except self.overwrite as hit:
            raise overwrite_error(run.code, hit) from None
        if run.typed != len(run.forward.overloads):
            self._typed_pullback(run)
        return out, (run.pullback, saved)

    def _typed_pullback(self, run: _Run) -> None:
        """Compiles the pullback for the saved values' type of each of the forward's
        compilations, and for a float cotangent, and keeps it to those: the saved values come
        back boxed, and a value typed optional there (a name bound in one arm of an if, None
        on the other path) would make numba compile a pullback for None, which it may not be
        able to type (``t4 - 1``)."""
        import numba

        with self.lock:
            compiled = list(run.forward.overloads.values())
            if run.typed == len(compiled):
                return
            run.typed = len(compiled)
            try:
                if any(not isinstance(c.signature.return_type[0], numba.types.Float)
                       for c in compiled):
                    run.pullback.disable_compile(False)
                    return  # an array or tuple output: compiled for its cotangent's type
                run.pullback.disable_compile(False)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                    for cres in compiled:
                        # unliteral: a constant the forward saved (row_energy(M, 1) saves r
                        # as Literal[int](1)) comes back boxed as an int64
                        saved = numba.types.unliteral(cres.signature.return_type[1])
                        run.pullback.compile((saved, numba.float64))
                run.pullback.disable_compile()
            except Exception as err:  # noqa: BLE001 - numba's errors: at the user's line
                raise located(err, run.code, "", self.base.trees[2]) from None

    def gradient(self, *args: Any) -> tuple[Any, Any] | None:
        """``(out, cotangents)`` of one compiled call running the forward and the pullback
        seeded with 1.0 (``grad``'s common case); None where this call must take
        :meth:`forward` and :meth:`pullback` (an output that is not a float, a fallback)."""
        run = self.only
        if run is None:
            if len(args) != self.nparams:
                return None
            run = self._run_of(args)
        if run.gradient is None or (run.apart and self._shared(args, run.apart) is not None):
            return None
        if self.globals:
            args = args + tuple(g.ns[key] for key, (g, _) in self.globals.items())
        try:
            if run.outs:
                # the gradients of float64 array parameters, made here and filled in
                # nopython code: numba hands them back as these objects, unboxed
                grads = [_EMPTY(args[k].shape) for k in run.outs]
                if not run.code.gradient_value_only:
                    return self._call_gradient(run, (*args, *grads))
                out = self._call_gradient(run, (*args, *grads))  # every cotangent in grads
                cts = [None] * self.nparams
                for k, g in zip(run.outs, grads):
                    cts[k] = g
                return out, tuple(cts)
            out, cts = self._call_gradient(run, args)
        except self.overwrite as hit:
            raise overwrite_error(run.code, hit) from None
        except self.saved_view as hit:
            raise saved_view_error(hit) from None
        return out, _canonical(cts)

    def _call_gradient(self, run: _Run, args: tuple[Any, ...]) -> Any:
        """``run.gradient(*args)``, compiled first for these arguments' numba types where it
        has no version for them: its compilation is disabled once built (:meth:`_run_for`),
        so that numba's dispatcher, which checks the exact types of the arguments at each
        call anyway, refuses a dtype or rank the code was not rewritten for instead of
        compiling it (the fast call relies on that); a layout of the same dtypes and ranks (a
        strided view after a contiguous array) is compiled here, as numba would have."""
        import numba
        from numba.core.compiler_lock import global_compiler_lock

        try:
            return run.gradient(*args)
        except TypeError as err:
            if not dispatch_refused(err):
                raise
        sig = tuple(run.gradient.typeof_pyval(a) for a in args)
        # under numba's compiler lock: no other thread's call compiles while it is enabled
        with global_compiler_lock, warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
            run.gradient.disable_compile(False)
            try:
                run.gradient.compile(sig)
            except Exception as err:  # noqa: BLE001 - numba's errors: at the user's line
                raise located(err, run.code, "", self.base.trees[2]) from None
            finally:
                run.gradient.disable_compile()
        return run.gradient(*args)

    def fast_call(self, args: tuple[Any, ...], nums: tuple[int, ...], single: bool,
                  with_value: bool, guards: tuple[Any, ...], generation: list[int],
                  compiled_at: int, code: tuple[Any, Any] | None, slow: Any = None) -> Any:
        """``adgen.grad``'s call for arguments of the types of ``args``, decided once (after
        a call of :meth:`gradient` ran them): a function of the arguments' tuple that checks
        only what the contract needs at each call (the arguments' exact types; their dtypes,
        ranks and layouts by numba's dispatcher, which runs nothing for types it was not
        compiled for; the rule registry's generation; that the function's code was not replaced;
        the guards of its free names, those of builtins and globals bound to functions
        inline) and runs the one compiled call, returning the gradient (``(value,
        gradient)`` with ``with_value``), or None where the generic path must take the call.
        None where these arguments need more than that: an array's gradient not written into
        an array allocated here, arguments that must not share memory.
        """
        if len(args) != self.nparams:
            return None
        # the run of these types: the checks below admit only arguments of the same key
        # (_run_of: an array's dtype and rank, a number's type)
        run = self.only or self.runs.get(tuple(
            [(a.dtype, a.ndim) if type(a) is np.ndarray else type(a) for a in args]))
        if run is None or run.gradient is None or run.apart or any(
                n not in run.outs and type(args[n]) is np.ndarray for n in nums):
            return None
        from adgen.adjoints import as_gradient
        from adgen.transforms.bindings import failed

        ns: dict[str, Any] = {"ND": np.ndarray, "EMPTY": _EMPTY, "GEN": generation,
                              "G0": compiled_at, "failed": failed, "RUN": run,
                              "GRADIENT": run.gradient, "AS_GRADIENT": as_gradient,
                              "OVERWRITE": self.overwrite, "SAVED_VIEW": self.saved_view,
                              "overwrite_error": overwrite_error,
                              "saved_view_error": saved_view_error,
                              "REFUSED": dispatch_refused, "TYPE": type, "LEN": len,
                              "TYPE_ERROR": TypeError, "VALUE_ERROR": ValueError,
                              # a global or builtin the checks look up that is gone: the
                              # generic path gives the primal's NameError
                              "MISSING": (KeyError, NameError)}
        names = [f"a{k}" for k in range(len(args))]
        checks = []
        for k, a in enumerate(args):
            if type(a) is np.ndarray:
                # its dtype and rank are checked by numba's dispatcher, which refuses the
                # types it has no version for (its compilation is disabled: _call_gradient)
                # and converts no array to another dtype or rank
                checks.append(f"TYPE(a{k}) is ND")
            elif type(a) in (float, int, bool) or isinstance(a, (np.floating, np.integer,
                                                                  np.bool_)):
                ns[f"T{k}"] = type(a)  # the run's key holds a number's type
                checks.append(f"TYPE(a{k}) is T{k}")
            else:
                return None
        checks.append("GEN[0] == G0")
        if code is not None:
            ns["CODE"], ns["C0"] = code
            checks.append("CODE.__code__ is C0")
        # The functions below are closures whose globals are the differentiated function's
        # (every name of adgen's is a parameter of the factory that makes them, a cell): a
        # builtin or global function it reads is checked by reading it as the function
        # does, ``len is E0``, which Python's specialised global lookup answers in a few
        # nanoseconds (25-30 ns a name in a dictionary look-up of ours).
        home = getattr(primal(self.fn), "__globals__", None)
        if not isinstance(home, dict):
            home = {"__builtins__": __builtins__}
        # a name of its own shadows a global of that name there: those globals are looked
        # up in their dictionaries (as are those of another module: a callee's)
        ours = set(ns) | {"out", "cts", "hit", "err", "more", "kwargs", "args", "a", "SLOW",
                          "NO", "REST", "fast_gradient", "fast_direct", "make"}
        rest = []
        for j, g in enumerate(guards):
            # a builtin or a global bound to a function: looked up as Python does, by 'is'
            if g.mode != "same" or g.cell is not None or not isinstance(g.scope, dict) or \
                    not g.name.isidentifier():
                rest.append(g)
                continue
            ns[f"E{j}"] = g.expected
            if g.scope is home and g.name not in ours and \
                    not re.fullmatch(r"(?:a|g|E|S|B|T|NS)[0-9]+", g.name):
                checks.append(f"{g.name} is E{j}")
                continue
            b = g.scope.get("__builtins__", __builtins__)
            ns[f"S{j}"], ns[f"B{j}"] = g.scope, b if isinstance(b, dict) else vars(b)
            if g.name in g.scope:  # a global of that name: it must stay bound to it
                checks.append(f"S{j}.get({g.name!r}) is E{j}")
            else:  # a builtin: no global shadows it, and the builtins keep it
                checks.append(f"{g.name!r} not in S{j} and B{j}[{g.name!r}] is E{j}")
        if rest:
            ns["REST"] = tuple(rest)
            checks.append("failed(REST) is None")  # refreshes the globals passed as data
        data = ""
        for j, (key, (g, _)) in enumerate(self.globals.items()):
            if g not in rest:
                return None
            ns[f"NS{j}"] = g.ns
            data += f", NS{j}[{key!r}]"  # their values now, as gradient() passes them
        # a vector's length is cheaper to pass than its shape tuple (about 25 ns)
        grads = "".join(f"        g{k} = EMPTY(LEN(a{k}))\n" if args[k].ndim == 1 else
                        f"        g{k} = EMPTY(a{k}.shape)\n" for k in run.outs)
        if run.code.gradient_value_only:  # the gradient function returns the value alone
            call = f"out = GRADIENT({', '.join(names)}{data}" \
                   f"{''.join(f', g{k}' for k in run.outs)})"
            got = f"g{nums[0]}" if single else "(" + "".join(f"g{n}, " for n in nums) + ")"
        else:
            call = f"out, cts = GRADIENT({', '.join(names)}{data}" \
                   f"{''.join(f', g{k}' for k in run.outs)})"
            # a number's cotangent as adgen.grad's generic path gives it
            each = [f"cts[{n}]" if n in run.outs else f"AS_GRADIENT(cts[{n}], a{n})"
                    for n in nums]
            got = each[0] if single else "(" + "".join(f"{e}, " for e in each) + ")"
        given = ", ".join(names)
        ns["SLOW"], ns["NO"] = slow, _NO_ARGUMENT

        def text_of(head: str, extra: str, fail: str) -> str:
            # the direct form's missing arguments (NO) fail the type checks: no test of its own
            return (f"{head}"
                    f"        try:\n"
                    f"            if not ({extra}{' and '.join(checks)}):\n"
                    f"                {fail}\n"
                    f"        except MISSING:\n"
                    f"            {fail}\n"
                    f"{grads}"
                    f"        try:\n"
                    f"            {call}\n"
                    f"        except OVERWRITE as hit:\n"
                    f"            raise overwrite_error(RUN.code, hit) from None\n"
                    f"        except SAVED_VIEW as hit:\n"
                    f"            raise saved_view_error(hit) from None\n"
                    f"        except TYPE_ERROR as err:\n"
                    f"            if REFUSED(err):  # another dtype, rank or layout: nothing ran\n"
                    f"                {fail}\n"
                    f"            raise\n"
                    f"        return {'(out, ' + got + ')' if with_value else got}\n")

        text = (f"def make({', '.join(ns)}):\n" +
                text_of(f"    def fast_gradient(args):\n"
                        f"        try:\n"
                        f"            {given}, = args\n"
                        f"        except VALUE_ERROR:  # another number of arguments\n"
                        f"            return None\n", "", "return None") +
                # the same call taking the arguments as its own parameters, for adgen.grad's
                # partial to call without the closure's frame: anything else goes to SLOW
                # (that closure), as do arguments whose checks fail
                text_of(f"    def fast_direct({', '.join(n + '=NO' for n in names)}, *more, "
                        "**kwargs):\n", "not more and not kwargs and ",
                        f"return SLOW(*[a for a in ({given},) if a is not NO], *more, "
                        "**kwargs)") +
                "    return fast_gradient, fast_direct\n")
        scratch: dict[str, Any] = {}
        exec(compile(text, f"<adgen fast gradient of {self.base.name}>", "exec"), scratch)
        make = types.FunctionType(scratch["make"].__code__, home)
        fast, direct = make(**ns)
        if slow is not None:
            fast.direct = direct
        return fast

    def _shared(self, args: tuple[Any, ...], arrays: tuple[int, ...]) -> str | None:
        """Why these array arguments cannot run on the numba backend (two share memory), or
        None."""
        # two distinct arrays that each own their memory cannot share it (120 ns an array,
        # where np.may_share_memory costs 400 a pair): that test is for views
        for i in range(len(arrays)):
            a = args[arrays[i]]
            owns = a.base is None and a.flags.owndata
            for j in range(i + 1, len(arrays)):
                b = args[arrays[j]]
                if (a is b or not (owns and b.base is None and b.flags.owndata)) and \
                        np.may_share_memory(a, b):
                    return (f"arguments {arrays[i]} and {arrays[j]} of {self.base.name} share "
                            "memory, and the numba backend keeps one gradient buffer per "
                            "argument (pass copies: x.copy())")
        return None

    def _run_of(self, args: tuple[Any, ...]) -> _Run:
        """The run for arguments of these types (compiled at the first call of each)."""
        # the per-call key: cheap (an array's dtype object and rank, a number's type); the
        # argument types are validated once per key, in _run_for
        key = tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a) for a in args])
        run = self.runs.get(key)
        return self._run_for(key, args) if run is None else run

    def _run_for(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> _Run:
        """The compiled functions for arguments of these types, compiled now; or a run
        without them (``why``) where the default backend runs them."""
        with self.lock:
            run = self.runs.get(key)
            if run is not None:
                return run
            try:
                types_ = arg_types(args, self.fn)
                fwd, pb, grad = self._build(types_, args)
            except AdgenError as err:
                if self.backend == "numba":
                    raise
                run = _Run(None, None, (), None, None, (), str(err))
            else:
                code = self.codes[types_]
                # the arrays checked for shared memory at each call, where the code needs
                # them apart (NumbaCode.distinct)
                arrays = tuple(k for k, a in enumerate(args) if type(a) is np.ndarray) \
                    if code.distinct else ()
                run = _Run(fwd, pb, arrays if len(arrays) > 1 else (), grad, code,
                           tuple(code.gradient_outs) if grad is not None else (), None)
                if grad is not None:
                    # other layouts are compiled by _call_gradient; numba refuses the rest
                    grad.disable_compile()
            self.runs[key] = run
            if self.exact:  # the kind signature fixes the types: no key at later calls
                self.only = run
            return run

    def _default(self, why: str | None, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> tuple[Any, Any]:
        from adgen.api import run_forward

        if why is not None and self.backend == "numba":
            raise UnsupportedError(f"the numba backend cannot run this call: {why}",
                                   hint="use backend='default' or 'auto'")
        if why is not None:
            warnings.warn(f"backend='auto' runs the default backend for this call: {why}",
                          NumbaFallbackWarning, stacklevel=4)
        out, saved = run_forward(self.base, args, kwargs)
        return out, (None, saved)

    def pullback(self, saved: Any, out_bar: Any, sh: Any = None) -> tuple[Any, ...]:
        import numba

        pb, inner = saved
        if pb is None:
            return self.base.pullback(inner, out_bar)
        try:
            return _canonical(pb(inner, out_bar))
        except self.saved_view as hit:
            raise saved_view_error(hit) from None
        except numba.core.errors.NumbaError as err:
            code = next(iter(self.codes.values()))
            raise located(err, code, "", self.base.trees[2]) from None
