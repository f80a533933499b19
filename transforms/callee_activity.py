"""A callee compiled for what its caller hands it: which of its parameters carry a
derivative at the calls, and which are numbers, lists or dicts.

A helper compiled alone takes every parameter for an array with a derivative that may share
another's memory. ``half_steps(v, a, x, 0.01)`` (``v += 0.5 * dt * a``, then ``a[:] = -x **
3``): the gradient of the first line with respect to ``dt`` reads ``a``, which the second
overwrites, so strict refused the helper, though at the call ``dt`` is the number ``0.01``,
which has no derivative and shares no memory. Where the compilation for any arguments is
refused, ``pipeline`` compiles the callee again for the pattern of this function's calls of
it (:func:`call_pattern`: ``wrt`` = the positions active at some call, ``sig`` = a number where
every call passes one), keyed in the compile cache by that pattern; a refusal of that
compilation is the call's.

Strict also compiles it for the pattern where the compilation for any arguments is not
refused but guards a write (``g.scale(3.0)``: ``self.u *= c``, whose gradient with respect to
``c`` reads the ``self.u`` it overwrites, refused when it ran), or has a pullback reading a
parameter, while some call passes a constant or a value without a derivative
(:func:`for_calls`): an RK4 ``s.step(u, 0.1)`` whose ``u + 0.5 * h * self.k[0]`` read the
stage buffers the next step overwrites only for ``h``'s gradient. Where that compilation is
refused, the one for any arguments stays (its guards raise only where the overwrite happens).

Under both policies, a callee writing by index a list or dict parameter (an optimizer step,
``for k in params: params[k] -= lr * grads[k]``) is refused when it runs if compiled for any
arguments (it cannot tell a dict from an array); where every call passes a list or dict
display the caller builds, or a list or dict parameter of the caller that it never binds
again, it is compiled for that kind (``sig``: ``LIST`` / ``DICT``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import gast
from adgen.transforms.analyses.kinds import CONTAINERS, NUMBER
from adgen.transforms.analyses.made_containers import displays
from adgen.transforms.node_index import nodes_of

from adgen.errors import MutationError

__all__ = ["SPECIALIZING", "call_pattern", "for_calls", "for_refusing_calls"]

# the ids of the functions being compiled for a call pattern (under the compile lock): a
# recursive call of one is not compiled for its pattern again, which would never end
SPECIALIZING: set[int] = set()


def call_pattern(fn: gast.FunctionDef, obj: Any, resolve: Callable[[gast.expr], Any],
                 active: Callable[[str], bool], kinds: dict[str, Any],
                 given: dict[str, str] | None = None,
                 returned: Callable[[Any], str | None] | None = None,
                 active_at: Callable[[gast.Call, str], bool] | None = None
                 ) -> tuple[tuple[int, ...], tuple[Any, ...]] | None:
    """``(wrt, sig)`` for compiling ``obj`` as the calls of it in ``fn`` (SSA form) use it:
    the positions of the arguments active at any call, and ``NUMBER`` where every call
    passes a number (a constant, or a name ``kinds`` calls one), ``LIST`` or ``DICT`` where
    every call passes a name that certainly holds one (``analyses.made_containers``: bound
    only to displays, to a user function's result ``returned`` gives that kind, to a
    gradient of one), or a parameter ``given`` (the argument signature's lists and dicts)
    says is one and ``fn`` never binds, else None. None when a
    call passes keywords, ``*xs``, fewer arguments than ``obj`` has positional parameters,
    or anything but names and constants, or where ``obj`` is called by no plain call.
    ``active_at(call, name)``, where given, says whether ``name`` carries a derivative when
    ``call`` starts (analyses.varied_before), in place of ``active``."""
    code = getattr(obj, "__code__", None)
    if code is None or code.co_flags & 0x0C or code.co_kwonlyargcount:
        return None  # *args, **kwargs, keyword-only parameters
    n = code.co_argcount
    containers = displays(fn, resolve, given or {}, returned)
    actives: set[int] = set()
    passed: list[Any] = [NUMBER] * n  # the kind every call passes there, or None
    calls = 0
    for call in nodes_of(fn, gast.Call):
        if not isinstance(call, gast.Call) or not _calls_of(resolve(call.func), obj):
            continue
        if call.keywords or len(call.args) != n:
            return None
        for k, a in enumerate(call.args):
            if isinstance(a, gast.Constant) and type(a.value) in (int, float):
                kind = NUMBER  # a number without a derivative
            elif isinstance(a, (gast.List, gast.Tuple)) and all(
                    isinstance(e, gast.Constant) for e in a.elts):
                kind = None  # [1.0, 3.0]: a display of constants, without a derivative
            elif not isinstance(a, gast.Name):
                return None
            else:
                if active(a.id) if active_at is None else active_at(call, a.id):
                    actives.add(k)
                kind = kinds.get(a.id)
                kind = kind if kind in (NUMBER, *CONTAINERS) else containers.get(a.id)
            if calls == 0 and kind in CONTAINERS:
                passed[k] = kind
            elif kind != passed[k]:
                passed[k] = None
        calls += 1
    if not calls:
        return None
    return tuple(sorted(actives)), tuple(passed)


def for_calls(obj: Any, general: Any, mutation: str, fn: gast.FunctionDef,
              resolve: Callable[[gast.expr], Any], active: Callable[[str], bool],
              kinds: dict[str, Any], compile_function: Callable[..., Any],
              given: dict[str, str] | None = None,
              returned: Callable[[Any], str | None] | None = None,
              refused: bool = False,
              active_at: Callable[[gast.Call, str], bool] | None = None) -> Any:
    """``obj`` compiled for the calls of it in ``fn`` (:func:`call_pattern`), where
    ``general``, its compilation for any arguments, is None (strict refused it, or
    ``refused``: a parameter reaching a rule's argument without a derivative, refused under
    both policies; the pattern's refusal is raised) or is one the pattern may make less
    cautious
    (:func:`_narrows`: a refusal there is dropped, ``general`` stays). None where there is
    no pattern, ``obj`` is being compiled for one (a recursive call), or nothing to gain.
    ``active_at``: as :func:`call_pattern`'s."""
    if id(obj) in SPECIALIZING or general is None and mutation != "strict" and not refused:
        return None
    pattern = call_pattern(fn, obj, resolve, active, kinds, given, returned, active_at)
    if pattern is None or general is not None and not _narrows(general, obj, pattern,
                                                               mutation):
        return None
    SPECIALIZING.add(id(obj))  # (a recursive call of it: compiled as it is)
    try:
        return compile_function(obj, mutation=mutation, wrt=pattern[0], sig=pattern[1])
    except MutationError:
        if general is None:
            raise
        return None
    finally:
        SPECIALIZING.discard(id(obj))


def _narrows(general: Any, obj: Any, pattern: tuple[tuple[int, ...], tuple[Any, ...]],
             mutation: str) -> bool:
    """Whether compiling ``obj`` for ``pattern`` may lift a refusal or drop a guard or a
    read of ``general``: a list or dict every call passes that ``general`` writes (in
    place by index, refused when it runs where the parameter's kind is not known), or,
    under strict, some parameter passed without a derivative or as a number while
    ``general`` guards a write or has a pullback reading a parameter."""
    wrt, sig = pattern
    names = obj.__code__.co_varnames[:len(sig)]
    written = general.written_params
    if any(kind in CONTAINERS and (written is True or names[k] in written)
           for k, kind in enumerate(sig)):
        return True
    if any(k not in wrt for k in range(len(sig))) and _calls_a_parameter(obj):
        # functools.reduce(lambda a, p: a + norm(x, ord=p), [1.0, 3.0], 0.0): adgen's
        # reference calls the function it is given with the items, which carry no
        # derivative here; compiled for any arguments it said they do, and the lambda's
        # compilation for that refused ord's derivative (a false refusal)
        return True
    if mutation != "strict" or all(k in wrt and sig[k] != NUMBER for k in range(len(sig))):
        return False  # every parameter carries a derivative at some call, none a number
    if any(s.decision in ("guarded-raise", "certain-conflict") for s in general.sites):
        return True
    return bool(general.reads_params)


def _calls_of(called: Any, obj: Any) -> bool:
    """Whether a call of ``called`` runs ``obj``: the same object, or ``obj`` adgen's
    reference of ``called`` (functools.reduce's)."""
    if called is obj:
        return True
    from adgen.rules import registry

    return called is not None and registry.reference_of(called) is obj


def _calls_a_parameter(obj: Any) -> bool:
    """Whether ``obj`` is adgen's reference of a library function that calls one of its
    parameters (``functools.reduce``'s): the values it hands on carry a derivative only
    where its own parameters do."""
    from adgen.rules import registry

    if not any(r.impl is obj for r in registry.all_references()):
        return False
    import inspect

    tree = gast.parse(inspect.cleandoc("\n" + inspect.getsource(obj)))
    params = set(obj.__code__.co_varnames[:obj.__code__.co_argcount])
    return any(isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and
               n.func.id in params for n in gast.walk(tree))


def for_refusing_calls(obj: Any, general: Any, mutation: str, fn: gast.FunctionDef,
                       resolve: Callable[[gast.expr], Any],
                       active: Callable[[gast.Call, str], bool],
                       compile_function: Callable[..., Any]) -> Any:
    """``obj``, whose compilation for any arguments ``general`` kept a refusal (a parameter
    reaching a rule's argument without a derivative: Compiled.nondiff_refusal), where its
    calls in ``fn`` have no :func:`call_pattern` (``h(x, d=s)`` by keyword, ``*xs``): compiled
    for the parameters some call gives a value with a derivative, by name for a keyword
    (which raises the refusal where one reaches it); ``general`` where no call passes one.
    ``active(call, name)``: whether ``name`` carries a derivative when ``call`` starts.

    Raises:
        UnsupportedError: the refusal, where a call passes such a value and the positions
            cannot be told (a keyword into ``**kwargs``, a method's object).
    """
    code = getattr(obj, "__code__", None)
    plain = isinstance(code, types.CodeType) and not isinstance(obj, types.MethodType)
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount] if plain else ()
    star = code.co_argcount if plain and code.co_flags & 0x04 else None
    wrt: set[int] = set()
    unknown = False

    for call in nodes_of(fn, gast.Call):
        if not isinstance(call, gast.Call) or resolve(call.func) is not obj:
            continue

        def carries(e: gast.expr, call: gast.Call = call) -> bool:
            return any(isinstance(n, gast.Name) and active(call, n.id) for n in gast.walk(e))

        for k, a in enumerate(call.args):
            if not carries(a):
                continue
            if isinstance(a, gast.Starred) or not plain or \
                    k >= code.co_argcount and star is None:
                unknown = True
            else:
                wrt.add(k if k < code.co_argcount else star)
        for kw in call.keywords:
            if not carries(kw.value):
                continue
            if kw.arg is None or kw.arg not in names:
                unknown = True
            else:
                wrt.add(names.index(kw.arg))
    if unknown:
        raise general.nondiff_refusal
    if not wrt:
        return general
    c = compile_function(obj, mutation=mutation, wrt=tuple(sorted(wrt)))
    if getattr(c, "nondiff_refusal", None) is not None:
        raise c.nondiff_refusal
    return c
