"""What the pipeline produces: :class:`Compiled` (reverse mode: a function's forward and
pullback, their source, the site decisions and the facts callers read) and
:class:`CompiledTangent` (forward mode: a jvp and its source). Plain classes, made by
``pipeline.compile_function`` and ``tangent_pipeline.compile_tangent``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any


class Compiled:
    """A compiled function: its forward and pullback, their source, and the site decisions.

    A plain class, not a dataclass (see reverse_ast.Site), without ``__slots__``: api notes
    ``may_be_complex`` on it. ``replace`` gives a copy with some attributes changed."""

    def __init__(self, name: str, forward: Callable[..., Any], pullback: Callable[..., Any],
                 source: str, sites: list[Any], mutates_params: bool,
                 callees: dict[str, Compiled] | None = None, own_source: str = "",
                 reads_params: Any = True, written_params: Any = True,
                 returns_fresh: bool = False, mutates_containers: bool = False,
                 needs_scope: bool = True, guards: tuple[Any, ...] = (), trees: Any = None,
                 gradient: Callable[..., Any] | None = None, number_updates: Any = None,
                 consumes: frozenset[str] = frozenset(), single_use: bool = False,
                 free_writes: tuple[Any, ...] = (), free_reads: bool = False,
                 calls_parameters: tuple[int, ...] = (),
                 number_writes: tuple[Any, ...] = (),
                 returns_params: frozenset[int] | None = None,
                 returns_free: bool = False, returns_container: str | None = None,
                 counter_stores: tuple[Any, ...] = (),
                 mutation: str = "save", reads_uncaptured: Any = True,
                 reads_result: bool = True, function: Any = None) -> None:
        self.name = name
        # the policy it was compiled under: the calls its forward resolves when they run
        # (dispatch: a method of an object, a constructor, a closure) compile under it too
        self.mutation = mutation
        self.forward = forward
        self.pullback = pullback
        self.source = source
        self.sites = sites
        self.mutates_params = mutates_params
        self.callees = {} if callees is None else callees
        self.own_source = own_source
        self.reads_params = reads_params  # a set of parameter names, or True for all
        # those of them its pullback reads where no capture of its own watches them (the
        # others' captures stay live after it returns: a caller's guarded write checks them,
        # and the caller's capture of the argument need not watch it)
        self.reads_uncaptured = reads_uncaptured
        self.written_params = written_params  # the parameters written in place (True: any)
        # every value it returns is one it made (no view of a parameter, no container): a
        # caller's array result shares no buffer with the arguments (analyses.effects)
        self.returns_fresh = returns_fresh
        # its pullback may read memory a value it returns shares (False: a caller's later
        # in-place write of its result overwrites nothing the pullback reads)
        self.reads_result = reads_result
        # the positions of the parameters whose memory a value it returns may share (None:
        # any; analyses.returned_params): laplace(u, out) returns out's, never u's
        self.returns_params = returns_params
        # a value it returns may be a global or closure array (analyses.returned_params:
        # return ONES): a caller's result of it holds the effects' FREE buffer
        self.returns_free = returns_free
        # LIST or DICT where every value it returns is a list or dict it made
        # (analyses.made_containers): a caller's name bound to its result is one
        self.returns_container = returns_container
        self.mutates_containers = mutates_containers
        # the forward registers captures or guards (its own or a callee's): a call runs it in
        # a fresh GuardScope
        self.needs_scope = needs_scope
        # what the compiled code assumes of the free names it reads (its own and its
        # callees'): checked at each call, which recompiles when one fails (bindings.failed)
        self.guards = guards
        # (forward tree, pullback tree, the user's file): read by other backends
        # (adgen.backends)
        self.trees = trees
        # a backend's forward and pullback in one call, seeded with 1.0 (what grad computes):
        # gradient(*args) -> (out, cotangents), or None where a call must take forward and
        # pullback (adgen.backends); None on the default backend
        self.gradient = gradient
        # its in-place writes of parameters that are ``self.calls += 1`` updates of an
        # attribute (analyses.number_updates): a call through a method or a variable follows
        # them when the attributes hold numbers at the call (dispatch)
        self.number_updates = number_updates
        # saved arrays its pullback may write in place (compiled single-use, for grad: the
        # pullback must not run twice on one forward's saved values)
        self.consumes = consumes
        # compiled single-use: its pullback takes out_bar for a float or a float64 array
        # (grad's seed, pullback_runs.single_use_seed), whatever it consumes
        self.single_use = single_use
        # where it writes a global or closure array in place (transforms/free_writes.py: a
        # call of it is refused), and whether it or a function it calls reads one
        self.free_writes = free_writes
        self.free_reads = free_reads
        # the updates of a global container's item left out of free_writes because it held
        # a number (analyses/number_items.py), its own and its callees': (NAME, key, attr,
        # location); a caller that may put an array there is refused as for free_writes
        self.number_writes = number_writes
        # the items of global containers it (or a function it calls) may put anything but a
        # number into, (NAME, key, attr, location) (key None: any item): a caller that also
        # updates one as a number is refused (analyses/number_items.refuse_counter_stores)
        self.counter_stores = counter_stores
        # the positions of its parameters it calls as it is, where adgen checks the callee
        # when it runs (transforms/unseen_calls.py: a caller checks what it passes there)
        self.calls_parameters = calls_parameters
        # the function compiled (None for a closure compiled with its free variables as
        # parameters, or a rule's): the numba backend compiles a callee again for the kinds
        # of the arguments a call passes it (numba_callees.typed_callee)
        self.function = function

    def replace(self, **changes: Any) -> Compiled:
        """A copy of this compilation with the attributes ``changes`` names set to its
        values (as ``dataclasses.replace``)."""
        new = copy.copy(self)
        for key, value in changes.items():
            if not hasattr(self, key):
                raise TypeError(f"Compiled has no attribute {key!r}")
            setattr(new, key, value)
        return new


class CompiledTangent:
    """A compiled jvp: ``jvp(*args, *tangents) -> (out, out_dot)`` and its source (a plain
    class: see Compiled)."""

    __slots__ = ("name", "jvp", "source", "own_source", "params", "tangent_params", "guards",
                 "object_writes")

    def __init__(self, name: str, jvp: Callable[..., Any], source: str, own_source: str,
                 params: list[str], tangent_params: list[str],
                 guards: tuple[Any, ...] = (), object_writes: tuple[Any, ...] = ()) -> None:
        self.name = name
        self.jvp = jvp
        self.source = source
        self.own_source = own_source
        self.params = params
        self.tangent_params = tangent_params
        self.guards = guards
        # the user's lines (Locations) of the in-place writes into an array of an object
        # built by a call that this jvp (or a callee's) follows, checked when they run
        # (built_object_writes): reverse mode does not differentiate such jvp code again
        self.object_writes = object_writes
