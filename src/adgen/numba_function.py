"""numba_function: one function on the numba backend (``backend="numba"`` / ``"auto"``).

:class:`NumbaFunction` holds a function's nopython code per argument types
(``adgen.transforms.numba_module.to_nopython``, kept on disk by :mod:`adgen.numba_cache`),
compiles it with numba (the module's gradient function, with the forward and the pullback
inlined into it where numba can), and runs it: ``forward``/``pullback`` (``vjp``),
``gradient`` (``grad``'s one compiled call) and ``fast_call`` (``grad``'s call decided once per
argument signature, :mod:`adgen.numba_fast_call`). A call numba cannot run (two arguments
sharing memory, keyword arguments) runs the default backend under ``"auto"`` with a
:class:`NumbaFallbackWarning`, and is refused under ``"numba"``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import threading
import warnings
from typing import Any

import numpy as np

from adgen.errors import AdgenError, CompilerError, UnsupportedError
from adgen.numba_arguments import arg_types, data_type, sig_types
from adgen.numba_cache import (
    cache_dir,
    code_key,
    read_code,
    runtime_hash,
    source_files,
    write_code,
)
from adgen.numba_callees import callee_names, callee_trees, names_in, read_at
from adgen.numba_column_checks import check_columns, check_inlined_columns
from adgen.numba_errors import (
    dispatch_refused,
    located,
    overwrite_error,
    saved_view_error,
)

__all__ = ["NumbaFallbackWarning", "NumbaFunction", "Run", "inlined_functions", "primal"]


class NumbaFallbackWarning(UserWarning):
    """``backend="auto"`` ran the default backend: the message says where and why."""


def primal(fun: Any) -> Any:
    """The Python function of a ``numba.njit`` dispatcher (its ``py_func``); else ``fun``."""
    if type(fun).__module__.startswith("numba.") and hasattr(fun, "py_func"):
        return fun.py_func
    return fun


_F64 = np.dtype(np.float64)


_EMPTY = np.empty




def _canonical(cts: tuple[Any, ...]) -> tuple[Any, ...]:
    """The cotangents numba returned, each float64 array as a view with NumPy's own float64
    dtype: numba boxes arrays with a dtype object of its own (equal, not the same), which
    sends every array through the slow path of the checks ``adgen.grad`` makes with ``is``
    (``as_gradient``)."""
    return tuple([c.view(_F64) if type(c) is np.ndarray and c.dtype is not _F64 and
                  c.dtype == _F64 else c for c in cts])


def inlined_functions(code: Any) -> set[str]:
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


class Run:
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


class NumbaFunction:
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
            if g.mode == "same" and getattr(g.expected, "__name__", "") in (
                    "adgen", "stop_gradient") and \
                    str(getattr(g.expected, "__module__", g.expected.__name__)) in (
                        "adgen", "adgen.stop"):
                raise UnsupportedError(
                    f"{getattr(fn, '__qualname__', fn)} calls adgen's own functions "
                    "(adgen.stop_gradient), which the numba backend does not compile",
                    read_at(base, g.key), hint="use backend='default' / 'auto'")
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
        self.runs: dict[tuple[Any, ...], Run] = {}
        # where the kind signature fixes the numba types of the arguments (float64 arrays of
        # each rank, floats: kinds.signature tells them apart, and the compiled function is
        # per signature), the one run, found without a key at each call
        self.exact = sig is not None and all(type(s) is int or s == "float" for s in sig)
        self.only: Run | None = None
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
            files = source_files(self.base.trees, self.callees)
            code = read_code(key, files)
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
            write_code(key, code, files)
            self.codes[types_] = code
        return code

    def compiled(self) -> Any:
        """A ``Compiled`` whose forward and pullback run the nopython code."""
        return self.base.replace(forward=self.forward, pullback=self.pullback,
                                 gradient=self.gradient, needs_scope=False)

    # -- compilation ---------------------------------------------------------------------------

    def _load(self, code: Any) -> tuple[Any, Any, Any, str, dict[str, Any]]:
        """The module's forward, pullback and (where it has one) gradient as numba
        dispatchers, its file name and namespace."""
        import linecache

        import numba

        from adgen.transforms.numba_divisions import ERROR_MODEL

        # (numba's cache index does not key on the compile options: the error model, and
        # NUMBA_BOUNDSCHECK, which makes numba check every index, are in the module's name)
        options = f"{ERROR_MODEL} boundscheck={numba.config.BOUNDSCHECK}"
        digest = hashlib.sha256((code.source + runtime_hash() + options).encode()) \
            .hexdigest()[:20]
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
        inlined = inlined_functions(code)
        for name in (code.forward, code.pullback, code.pullback_into):
            if name:
                ns[name] = numba.njit(cache=cache, error_model=ERROR_MODEL,
                                      inline="always" if name in inlined
                                      else "never")(ns[name])
        grad = numba.njit(cache=cache, error_model=ERROR_MODEL)(ns[code.gradient]) \
            if code.gradient else None
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
            numba_args = tuple(numba.typeof(a) for a in args)
            # the gradient function also takes the arrays grad allocates for the gradients
            # of float64 array parameters (C-contiguous, np.empty)
            grads = tuple(numba.types.Array(numba.float64, args[k].ndim, "C")
                          for k in code.gradient_outs) if grad is not None else ()
            with warnings.catch_warnings():
                # numba's performance hints (np.dot of a non-contiguous view) are about
                # adgen's generated code, which the user did not write
                warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                (grad or fwd).compile(numba_args + grads)
            if numba_args in fwd.overloads:  # not when the gradient came from numba's cache
                check_columns(fwd.overloads[numba_args], code.columns, self.base.name)
            elif grad is not None and code.forward in inlined_functions(code):
                cres = grad.overloads.get(numba_args + grads)
                if cres is not None:  # else: from numba's cache, checked when compiled
                    check_inlined_columns(cres, fwd, numba_args, code, self.base.name)
            for name, columns in code.callee_columns.items():
                for cres in ns[name].overloads.values():  # compiled with the caller
                    check_columns(cres, columns, self.base.name)
            returns = fwd.overloads[numba_args].signature.return_type if grad is None else None
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

    def _typed_pullback(self, run: Run) -> None:
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
            raise saved_view_error(hit, source_files(self.base.trees, self.callees)) from None
        return out, _canonical(cts)

    def _call_gradient(self, run: Run, args: tuple[Any, ...]) -> Any:
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
        """``adgen.grad``'s call for arguments of the types of ``args``, decided once
        (:func:`adgen.numba_fast_call.fast_call`), or None where the generic path takes it."""
        from adgen.numba_fast_call import fast_call

        return fast_call(self, args, nums, single, with_value, guards, generation, compiled_at,
                         code, slow)

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

    def _run_of(self, args: tuple[Any, ...]) -> Run:
        """The run for arguments of these types (compiled at the first call of each)."""
        # the per-call key: cheap (an array's dtype object and rank, a number's type); the
        # argument types are validated once per key, in _run_for
        key = tuple([(a.dtype, a.ndim) if type(a) is np.ndarray else type(a) for a in args])
        run = self.runs.get(key)
        return self._run_for(key, args) if run is None else run

    def _run_for(self, key: tuple[Any, ...], args: tuple[Any, ...]) -> Run:
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
                run = Run(None, None, (), None, None, (), str(err))
            else:
                code = self.codes[types_]
                # the arrays checked for shared memory at each call, where the code needs
                # them apart (NumbaCode.distinct)
                arrays = tuple(k for k, a in enumerate(args) if type(a) is np.ndarray) \
                    if code.distinct else ()
                run = Run(fwd, pb, arrays if len(arrays) > 1 else (), grad, code,
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
            raise saved_view_error(hit, source_files(self.base.trees, self.callees)) from None
        except numba.core.errors.NumbaError as err:
            code = next(iter(self.codes.values()))
            raise located(err, code, "", self.base.trees[2]) from None
