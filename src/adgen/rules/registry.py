"""The one registry of derivative rules, and the one lookup.

A rule is written once, as a Python function, and serves twice: the compiler inlines the
expressions of its ``return`` into the generated pullback (so the adjoint reads like code a
person wrote), and the tests call it directly for the dot-product check.

    @defvjp(np.tanh, "x", reads="out")
    def tanh(g, out, x):
        return g * (1.0 - out ** 2)

- ``signature`` lists the primal's parameters as the rule binds them, in Python syntax
  (``"x1, x2"``, ``"a, axis=None, keepdims=False"``, ``"subscripts, *operands"``).
- The vjp function takes ``g`` (the cotangent of the output), ``out`` (the output), then the
  parameters by the same names, and returns one cotangent expression per differentiable
  parameter (a tuple when there are several). Its body is a single ``return``; anything longer
  goes into a helper in :mod:`adgen.runtime`, which generated code imports.
- ``reads`` says which parameters (or ``out``) the pullback reads the *values* of. A read that
  only looks at a shape is written ``np.shape(x)`` / ``np.ndim(x)`` / ``len(x)`` (or
  ``shape_tree(x)``, the shapes, lengths and keys of a container) and is not a value read;
  neither is iterating a parameter in a comprehension whose variable is only used that way
  (``[np.shape(a) for a in arrays]``).
  The declaration is checked against the template, because the mutation analysis trusts
  it: a value that no pullback reads may be overwritten for free. A rule from outside adgen
  is checked at registration; adgen's own templates are parsed (and checked) at their first
  use, so that ``import adgen`` parses none, and every one of them by
  tests/rules/test_registry_lazy.py, which iterates the registry (``parse_all``: it also
  checks their signatures against their primals', which a user's rule gets at registration).
- ``linear=True`` says the pullback is linear in ``g`` and reads the values of no
  differentiable input and not the output. It may read non-differentiable parameters
  (``axis``, an index, ``where``'s condition), which ``reads`` still lists: an index array
  overwritten before the pullback runs matters as much as an overwritten input.
- ``view=True`` says the output may share memory with the first parameter (reshape, transpose).
  A rule with a ``copy`` parameter views only where the call does not ask for a copy
  (:meth:`Rule.may_view`: ``np.array(x, copy=False)`` is ``x``, ``np.array(x)`` a copy).
- ``mutates`` names parameters the primal writes in place (for rules of C functions).
"""

from __future__ import annotations

import ast
import inspect
import keyword
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any

import gast

from adgen.errors import RuleError
from adgen.records import FrozenRecord
from adgen.rules.refusals import (  # noqa: F401  (re-exported: why a call has no rule)
    binding_hint,
    check_run_binding,
    defrefusal,
    refusal_of,
    reparameterized_form,
    why_no_rule,
)
from adgen.transforms import gast_ast
from adgen.transforms.walk import walk

# Names a value read may hide behind without reading the value: these look at the shape only.
# ``shape_tree`` (a rule helper) describes a value's structure: shapes, list lengths and dict
# keys, never the numbers.
# what a template may read of an array without reading its values (an in-place write changes
# none of it): its shape, its length, whether its dtype is complex
SHAPE_FUNCS = frozenset({"shape", "ndim", "size", "len", "shape_tree", "iscomplexobj"})


class Param(FrozenRecord):
    """One parameter of a rule's signature."""

    _fields = ("name", "default", "varargs", "kwonly")
    name: str
    default: Any
    varargs: bool
    # Keyword-only (after ``*`` or ``*args`` in the signature): never bound from a position.
    kwonly: bool

    def __init__(self, name: str, default: Any = inspect.Parameter.empty,
                 varargs: bool = False, kwonly: bool = False) -> None:
        self.__dict__.update(name=name, default=default, varargs=varargs, kwonly=kwonly)

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty


class Rule(FrozenRecord):
    """A derivative rule: what the pullback of ``primal`` computes and what it reads."""

    _fields = ("primal", "name", "params", "diff", "reads", "linear", "view", "mutates", "vjp")
    primal: Callable[..., Any]
    name: str
    params: tuple[Param, ...]
    diff: tuple[str, ...]
    reads: frozenset[str]
    linear: bool
    view: bool
    mutates: tuple[str, ...]
    vjp: Callable[..., Any] | None
    # The templates and free names, parsed from the vjp's source when first asked for (not
    # compared, hashed or shown).
    parsed: _Templates
    # A user rule in ChainRules' rrule style: rrule(*args) -> (out, pullback); the compiler
    # calls it at run time instead of inlining a template (not compared, hashed or shown).
    rrule: Callable[..., Any] | None

    def __init__(self, primal: Callable[..., Any], name: str, params: tuple[Param, ...],
                 diff: tuple[str, ...], reads: frozenset[str], linear: bool, view: bool,
                 mutates: tuple[str, ...], vjp: Callable[..., Any] | None,
                 parsed: _Templates | None = None,
                 rrule: Callable[..., Any] | None = None) -> None:
        self.__dict__.update(primal=primal, name=name, params=params, diff=diff, reads=reads,
                             linear=linear, view=view, mutates=mutates, vjp=vjp,
                             parsed=_NO_TEMPLATES if parsed is None else parsed, rrule=rrule)

    @property
    def is_rrule(self) -> bool:
        return self.rrule is not None

    def may_view(self, copy: Any = None) -> bool:
        """Whether a call's result may share memory with its first argument: a ``view=True``
        rule's may, unless the call asks for a copy. ``copy`` is what the call binds to the
        rule's ``copy`` parameter (a gast node, a :class:`Default`, or None when the rule has
        none): a literal True is a copy, and so is a left-out ``copy`` that defaults to True
        (``np.array(x)``, ``x.astype(t)`` copy; with ``copy=False`` NumPy 2 returns ``x``
        itself, with ``copy=None`` where no copy is needed)."""
        if not self.view:
            return False
        if isinstance(copy, Default):
            return copy.value is not True
        if copy is None:
            return not any(p.name == "copy" and p.default is True for p in self.params)
        return not (isinstance(copy, gast.Constant) and copy.value is True)

    @property
    def templates(self) -> tuple[gast.expr, ...]:
        """One expression per differentiable parameter, from the vjp's return statement."""
        return self.parsed.get()[0]

    @property
    def free_names(self) -> frozenset[str]:
        """Names the templates use that are neither g, out nor parameters (np, helpers)."""
        return self.parsed.get()[1]

    def bind(self, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Binds call arguments to the rule's parameters (values may be AST nodes).

        Returns:
            A dict from parameter name to the bound argument; varargs bind to a tuple; a missing
            parameter with a default binds to ``DEFAULT`` wrapped default value.

        Raises:
            TypeError: when the arguments do not fit the signature.
        """
        bound: dict[str, Any] = {}
        args = list(args)
        for alias, own in KEYWORD_ALIASES.get(self.name, ()):
            if alias in kwargs and own not in kwargs:  # x.clip(min=0.0): a_min
                kwargs[own] = kwargs.pop(alias)
        for p in self.params:
            if p.varargs:
                bound[p.name] = tuple(args)
                args = []
            elif args and not p.kwonly:
                bound[p.name] = args.pop(0)
            elif p.name in kwargs:
                bound[p.name] = kwargs.pop(p.name)
            elif p.has_default:
                bound[p.name] = Default(p.default)
            else:
                raise TypeError(f"{self.name}() missing argument {p.name!r}")
        if args:
            n = sum(1 for p in self.params if not p.kwonly)
            raise TypeError(f"{self.name}() takes {n} positional arguments")
        if kwargs:
            raise TypeError(f"{self.name}() got unexpected keyword {sorted(kwargs)[0]!r}")
        return bound


# Keywords NumPy takes under another name than a rule's parameter: np.clip(x, min=0.0) and
# x.clip(min=0.0, max=1.0) (NumPy >= 2.1, and ndarray.clip's own names) for a_min and a_max
KEYWORD_ALIASES: dict[str, tuple[tuple[str, str], ...]] = {
    "numpy.clip": (("min", "a_min"), ("max", "a_max")),
}


class _Templates:
    """A rule's parsed templates, or how to parse them on first use.

    Parsing a template (``inspect.getsource`` and ``gast.parse`` of its vjp) is most of what
    registering a rule costs; adgen's own ~300 rules are parsed when a compilation first looks
    one up, so ``import adgen`` does not parse them. Rules registered from outside adgen (a
    user's, a test's) are parsed at registration, so a bad one is refused there.
    """

    __slots__ = ("_load", "_value")

    def __init__(self, value: Any = None, load: Callable[[], Any] | None = None) -> None:
        self._value = value
        self._load = load

    def get(self) -> Any:
        if self._value is None:
            assert self._load is not None
            self._value = self._load()  # raises RuleError for a bad template, each time
            self._load = None
        return self._value


_NO_TEMPLATES = _Templates(((), frozenset()))


class Default(FrozenRecord):
    """A parameter the call left out, bound to the signature's default value."""

    _fields = ("value",)
    value: Any

    def __init__(self, value: Any) -> None:
        self.__dict__["value"] = value


_RULES: dict[int, Rule] = {}
_BY_NAME: dict[str, Rule] = {}
# Bumped whenever a rule is registered or replaced: compiled code caches key on it.
_GENERATION = [0]


def generation() -> int:
    """A counter that changes whenever the registry changes (for cache invalidation)."""
    return _GENERATION[0]


def lookup(func: Any) -> Rule | None:
    """The rule registered for ``func``, or None."""
    rule = _RULES.get(id(func))
    if rule is None and type(func).__name__ == "builtin_function_or_method":
        func = ufunc_method_of(func)
        rule = _RULES.get(id(func))
    if rule is None and _OPTIONAL and any(m in sys.modules for m in _OPTIONAL):
        load_optional_rules()  # the user's code imported scipy.special: its rules now
        rule = _RULES.get(id(func))
    return rule if rule is not None and rule.primal is func else None


# Rules for functions of optional packages, registered once the user's code has imported the
# package (adgen never imports it): package -> the module of adgen's rules for it
_OPTIONAL: dict[str, str] = {"scipy.special": "adgen.rules.scipy_special",
                             "scipy.linalg": "adgen.rules.scipy_linalg",
                             "scipy.stats": "adgen.rules.scipy_stats"}


def load_optional_rules() -> None:
    """Registers the rules for the optional packages that are imported (tests and docs call
    it to see them all: ``import scipy.special`` first)."""
    import importlib

    for package, module in list(_OPTIONAL.items()):
        if package in sys.modules:
            del _OPTIONAL[package]
            importlib.import_module(module)


# A ufunc's methods (np.maximum.accumulate) are a new bound method at every attribute access:
# a rule for one is registered for a stand-in function, found by (ufunc, method name).
_UFUNC_METHODS: dict[tuple[int, str], tuple[Any, Callable[..., Any]]] = {}


def defufunc_method(ufunc: Any, method: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Makes the decorated function stand for ``ufunc.method`` (``np.maximum``,
    ``"accumulate"``): a rule registered for it is the rule of every ``np.maximum.accumulate``
    a program calls."""

    def register(stand_in: Callable[..., Any]) -> Callable[..., Any]:
        _UFUNC_METHODS[(id(ufunc), method)] = (ufunc, stand_in)
        return stand_in

    return register


def ufunc_method_of(func: Any) -> Any:
    """The stand-in registered for a ufunc's bound method ``func``, or ``func`` itself."""
    owner = getattr(func, "__self__", None)
    got = _UFUNC_METHODS.get((id(owner), getattr(func, "__name__", "")))
    return got[1] if got is not None and got[0] is owner else func


def all_rules() -> list[Rule]:
    """Every registered rule, in registration order."""
    return list(_BY_NAME.values())


def _parse_signature(signature: str) -> tuple[Param, ...]:
    """The parameters of a rule's signature text (the same text gives the same tuple: many
    rules share ``"x"`` or ``"a, b"``, and a parse is most of what registering one costs)."""
    found = _SIGNATURES.get(signature)
    if found is None:
        found = _SIGNATURES[signature] = _parse_signature_text(signature)
    return found


_SIGNATURES: dict[str, tuple[Param, ...]] = {}


def _param_names(fn: Callable[..., Any]) -> list[str]:
    """``list(inspect.signature(fn).parameters)``, read off the code object of a plain
    function with positional parameters only (a template: about 30 times faster)."""
    code = getattr(fn, "__code__", None)
    if type(fn).__name__ == "function" and code is not None and \
            not code.co_flags & 0x0C and not code.co_kwonlyargcount and \
            not hasattr(fn, "__wrapped__") and not hasattr(fn, "__signature__"):
        return list(code.co_varnames[:code.co_argcount])  # no *args, **kwargs (0x04, 0x08)
    return list(inspect.signature(fn).parameters)


# the defaults a signature's plain form may give a parameter, by their text
_PLAIN_DEFAULTS = {"None": None, "True": True, "False": False}


def _plain_signature(signature: str) -> tuple[Param, ...] | None:
    """The parameters of a signature written plainly (names; ``*``, ``*args``; defaults
    ``None``, ``True``, ``False`` or a number), read without ``ast.parse``, which compiles:
    most of adgen's rules are written so, and their ~140 parses were about 3 ms of ``import
    adgen``. None for any other text (a quoted or bracketed default, ``**kw``, anything
    Python would refuse): :func:`_parse_signature_text` parses it."""
    if not signature.isascii() or any(c in signature for c in "'\"([{:#\\/"):
        return None
    params: list[Param] = []
    kwonly = defaulted = bare_star = False
    for piece in signature.split(","):
        text = piece.strip()
        name, eq, default_text = text.partition("=")
        name, default_text = name.strip(), default_text.strip()
        if name.startswith("*"):
            if eq or kwonly or name.startswith("**"):
                return None
            kwonly = True
            bare_star = name == "*"  # Python wants a named parameter after it
            if not bare_star:
                if not name[1:].isidentifier() or keyword.iskeyword(name[1:]):
                    return None
                params.append(Param(name[1:], varargs=True))
            continue
        if not name.isidentifier() or keyword.iskeyword(name):
            return None
        bare_star = False
        if not eq:
            if defaulted and not kwonly:
                return None  # a parameter without a default after one with
            params.append(Param(name, kwonly=kwonly))
            continue
        if default_text in _PLAIN_DEFAULTS:
            default = _PLAIN_DEFAULTS[default_text]
        elif "_" in default_text or default_text.lstrip("+-")[:2] in ("0x", "0o", "0b") or \
                len(default_text.lstrip("+-")) > 1 and default_text.lstrip("+-")[0] == "0" \
                and default_text.lstrip("+-").isdigit():
            return None  # 1_000 (an int in Python, float() reads 1000.0), 0x10, 01
        else:
            try:
                default = int(default_text) if default_text.lstrip("+-").isdigit() \
                    else float(default_text)
            except ValueError:
                return None
            if default_text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
                return None  # float() reads them; Python source does not
        defaulted = defaulted or not kwonly
        params.append(Param(name, default, kwonly=kwonly))
    if bare_star or len({p.name for p in params}) != len(params):
        return None
    return tuple(params)


def _parse_signature_text(signature: str) -> tuple[Param, ...]:
    plain = _plain_signature(signature)
    if plain is not None:
        return plain
    import ast

    tree = ast.parse(f"def _({signature}): pass")  # ast: gast's conversion is not needed
    fn = tree.body[0]
    a = fn.args
    params: list[Param] = []
    n_defaults = len(a.defaults)
    positional = a.args
    for i, arg in enumerate(positional):
        j = i - (len(positional) - n_defaults)
        if j >= 0:
            params.append(Param(arg.arg, _literal(a.defaults[j])))
        else:
            params.append(Param(arg.arg))
    if a.vararg is not None:
        params.append(Param(a.vararg.arg, varargs=True))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append(Param(arg.arg, _literal(default) if default is not None else
                            inspect.Parameter.empty, kwonly=True))
    return tuple(params)


def _literal(node: Any) -> Any:
    import ast

    return ast.literal_eval(node)


def _names_split(text: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if text is None:
        return ()
    if isinstance(text, str):
        return tuple(t for t in text.replace(",", " ").split() if t)
    return tuple(text)


def _source_lines(fn: Callable[..., Any]) -> list[str]:
    """The lines of the file that defines ``fn``, as they are now (linecache's list: kept by a
    lazy template, so that a file edited after the import cannot change its template)."""
    import linecache

    code = getattr(fn, "__code__", None)
    return linecache.getlines(code.co_filename) if code is not None else []


def _source_of(fn: Callable[..., Any], lines: list[str] | None = None, *,
               quick: bool = False) -> str:
    """The source of a template function, read from ``lines`` (its file's) at its code's
    first line (inspect.getsource first maps every loaded module to its file, which a cold
    start pays for on its first template).

    ``quick``: up to the last line the code object has instructions on, without tokenizing
    (inspect.getblock costs more than the parse); may cut a closing bracket alone on its
    line, so the caller falls back to the full block when the text does not parse.
    """
    code = getattr(fn, "__code__", None)
    if lines is None:
        lines = _source_lines(fn)
    if code is None or not lines or code.co_firstlineno > len(lines):
        return inspect.getsource(fn)
    first = code.co_firstlineno - 1
    if quick:
        last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
        if first < last <= len(lines):
            return "".join(lines[first:last])
    return "".join(inspect.getblock(lines[first:]))


def _template_of(vjp: Callable[..., Any], n_diff: int, name: str,
                 lines: list[str] | None = None) -> tuple[gast.expr, ...]:
    code_name = getattr(getattr(vjp, "__code__", None), "co_name", None)
    fn = None
    for quick in (True, False):
        try:
            fn = ast.parse(textwrap.dedent(_source_of(vjp, lines, quick=quick))).body[0]
        except SyntaxError:
            continue
        if isinstance(fn, ast.FunctionDef) and fn.name == code_name:
            break
    if not isinstance(fn, ast.FunctionDef) or fn.name != code_name:
        # the lines do not hold this function (its file changed since it was compiled)
        raise RuleError(f"rule for {name}: the source of its vjp {code_name} is not where "
                        "its code says (was the file edited after it was imported?)")
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and
                                       isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise RuleError(f"rule for {name}: the vjp body must be one `return` statement; "
                        "move longer code into a helper in adgen.runtime")
    # only the returned expression becomes gast: its parameters, decorators and docstring
    # were two fifths of converting the whole definition (the first gradient parses a
    # template per rule it uses)
    value = gast_ast.to_gast(body[0].value)
    if n_diff == 1:
        return (value,)
    if not isinstance(value, gast.Tuple) or len(value.elts) != n_diff:
        raise RuleError(f"rule for {name}: the vjp must return a tuple of {n_diff} expressions, "
                        "one per differentiable parameter")
    return tuple(value.elts)


def value_reads(templates: tuple[gast.expr, ...], candidates: set[str]) -> set[str]:
    """Which of ``candidates`` the templates read as values (not only through shape/ndim).

    Computed once per templates and candidates (the compiler asks at every call of a rule,
    a tenth of a small function's build): the set returned is shared, callers must not
    change it."""
    key = (tuple(map(id, templates)), frozenset(candidates))
    found = _VALUE_READS.get(key)
    # the templates are kept with the answer: their ids name no other tree while it lives
    if found is None or any(a is not b for a, b in zip(found[0], templates)):
        found = _VALUE_READS[key] = (tuple(templates), _value_reads(templates, candidates))
    return found[1]


# (ids of the templates, candidates) -> (the templates, value_reads' answer)
_VALUE_READS: dict[tuple[tuple[int, ...], frozenset[str]],
                   tuple[tuple[gast.expr, ...], set[str]]] = {}


def _value_reads(templates: tuple[gast.expr, ...], candidates: set[str]) -> set[str]:
    reads: set[str] = set()
    shape_only: set[int] = set()
    for tpl in templates:
        # one walk: the comprehensions and the candidates' loads are looked at once every
        # shape-only read of the template is known (the first gradient parses a template per
        # rule it uses, and three walks were a fifth of it)
        comps = []
        loads = []
        for node in walk(tpl):
            if isinstance(node, gast.Call):
                fn = node.func
                fname = fn.attr if isinstance(fn, gast.Attribute) else \
                    fn.id if isinstance(fn, gast.Name) else None
                if fname in SHAPE_FUNCS and node.args and isinstance(node.args[0], gast.Name):
                    shape_only.add(id(node.args[0]))
            elif isinstance(node, gast.Attribute) and node.attr in ("shape", "ndim", "size",
                                                                      "dtype"):
                if isinstance(node.value, gast.Name):
                    shape_only.add(id(node.value))
            elif isinstance(node, (gast.ListComp, gast.SetComp, gast.GeneratorExp,
                                   gast.DictComp)):
                comps.append(node)
            elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and \
                    node.id in candidates:
                loads.append(node)
        # ``[np.shape(a) for a in arrays]`` looks at the shapes of arrays' items only.
        for node in comps:
            _shape_only_iterations(node, candidates, shape_only)
        reads.update(node.id for node in loads if id(node) not in shape_only)
    return reads


def _shape_only_iterations(comp: gast.AST, candidates: set[str], shape_only: set[int]) -> None:
    """Marks ``arrays`` in ``[... for a in arrays]`` shape-only when ``a`` is only used so."""
    for gen in comp.generators:
        if not (isinstance(gen.iter, gast.Name) and gen.iter.id in candidates and
                isinstance(gen.target, gast.Name)):
            continue
        uses = [n for n in walk(comp) if isinstance(n, gast.Name) and
                n.id == gen.target.id and isinstance(n.ctx, gast.Load)]
        if all(id(n) in shape_only for n in uses):
            shape_only.add(id(gen.iter))


def _bound_names(templates: tuple[gast.expr, ...]) -> set[str]:
    """Names the templates bind themselves (comprehension variables): not free names."""
    return {n.id for tpl in templates for n in walk(tpl)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def defvjp(
    primal: Callable[..., Any],
    signature: str,
    *,
    diff: str | tuple[str, ...] | None = None,
    reads: str | tuple[str, ...] = "",
    linear: bool = False,
    view: bool = False,
    mutates: str | tuple[str, ...] = "",
    name: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a derivative rule for ``primal``; see the module docstring for the format.

    Raises:
        RuleError: when the rule's declared reads, arity or shape do not match its vjp.
    """

    def register(vjp: Callable[..., Any]) -> Callable[..., Any]:
        params = _parse_signature(signature)
        pnames = [p.name for p in params]
        qual = name or _qualname(primal)
        diff_names = _names_split(diff) if diff is not None else tuple(
            p.name for p in params if not p.has_default)
        for d in diff_names:
            if d not in pnames:
                raise RuleError(f"rule for {qual}: differentiable parameter {d!r} is not in "
                                f"its signature ({signature})")
        vjp_params = _param_names(vjp)
        if vjp_params != ["g", "out", *pnames]:
            raise RuleError(f"rule for {qual}: the vjp must take (g, out, {', '.join(pnames)}), "
                            f"not ({', '.join(vjp_params)})")
        declared = set(_names_split(reads))

        lines = _source_lines(vjp)  # read now: the template is parsed from these lines

        if not _builtin(vjp):  # adgen's own rules are checked by parse_all (the tests)
            _check_arity(primal, params, qual)

        def parse() -> tuple[tuple[gast.expr, ...], frozenset[str]]:
            templates = _template_of(vjp, len(diff_names), qual, lines)
            found = value_reads(templates, set(pnames) | {"out"})
            # A linear pullback may read non-differentiable parameters (axis, index,
            # condition) but no differentiable input and not the output.
            if linear and found & {*diff_names, "out"}:
                raise RuleError(f"rule for {qual} is declared linear but its pullback reads "
                                f"{sorted(found & {*diff_names, 'out'})}")
            if found != declared:
                raise RuleError(f"rule for {qual} declares reads={sorted(declared)} but its "
                                f"pullback reads {sorted(found)}; the mutation analysis "
                                "depends on this")
            free = set()
            local = {"g", "out", *pnames} | _bound_names(templates)
            for tpl in templates:
                for node in walk(tpl):
                    if isinstance(node, gast.Name) and node.id not in local:
                        free.add(node.id)
            return templates, frozenset(free)

        parsed = _Templates(load=parse)
        if not _builtin(vjp):
            parsed.get()  # a user's rule: a bad template is refused at registration
        rule = Rule(primal=primal, name=qual, params=params, diff=diff_names,
                    reads=frozenset(declared), linear=linear, view=view,
                    mutates=_names_split(mutates), vjp=vjp, parsed=parsed)
        _install(rule)
        return vjp

    return register


def _builtin(fn: Callable[..., Any]) -> bool:
    """True for a template function of adgen's own rules (parsed lazily, checked by
    tests/rules/test_registry_lazy.py, which parses every rule of the registry)."""
    return str(getattr(fn, "__module__", "") or "").startswith("adgen.")


def parse_all() -> None:
    """Parses every template of the registry now (the tests; a warm-up): raises RuleError
    for the first rule whose template is malformed or does not read what it declares, and
    checks adgen's own rules and references against their primals' signatures (registering
    a rule or reference from outside adgen checks it at once; adgen's own ~400 cost a third
    of ``import adgen`` when checked there, ``inspect`` reading NumPy's text signatures)."""
    for rule in all_rules():
        rule.parsed.get()
        if rule.vjp is not None and _builtin(rule.vjp):
            _check_arity(rule.primal, rule.params, rule.name)
    for ref in all_references():
        if _builtin(ref.impl):
            _check_reference_signature(ref.primal, ref.impl, ref.name)
    for primal, jvp in list(_JVPS.values()):
        _jvp_entry(primal, jvp)


def defrrule(
    primal: Callable[..., Any], rrule: Callable[..., Any], *, mutates: tuple[str, ...] = ()
) -> Rule:
    """Registers a user rule in rrule style: ``rrule(*args) -> (out, pullback)``.

    ``pullback(out_bar)`` returns one cotangent per positional argument (a tuple).
    """
    qual = _qualname(primal)
    try:
        params = tuple(Param(n) for n in inspect.signature(rrule).parameters)
    except (TypeError, ValueError):
        params = (Param("args", varargs=True),)
    try:
        primal_sig = inspect.signature(primal)
        rule_sig = inspect.signature(rrule)
    except (TypeError, ValueError):
        primal_sig = rule_sig = None
    if primal_sig is not None and rule_sig is not None:
        def positional(sig: inspect.Signature) -> int:
            return sum(1 for p in sig.parameters.values()
                       if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))

        has_var = any(p.kind == p.VAR_POSITIONAL for sig in (rule_sig, primal_sig)
                      for p in sig.parameters.values())
        if not has_var and positional(rule_sig) != positional(primal_sig):
            raise RuleError(f"the rule for {qual} takes {positional(rule_sig)} positional "
                            f"argument(s), but {qual} takes {positional(primal_sig)}",
                            hint="give the rule the same parameters as the function")
    rule = Rule(primal=primal, name=qual, params=params, diff=tuple(p.name for p in params),
                reads=frozenset(p.name for p in params), linear=False, view=False,
                mutates=tuple(mutates), vjp=None, rrule=rrule)
    _install(rule)
    return rule


# user jvp rules (adgen.custom_jvp / adgen.frule): id(primal) -> (primal, rule), where
# ``rule(primals, tangents) -> (out, out_dot)``
_FRULES: dict[int, tuple[Any, Callable[..., Any]]] = {}


def deffrule(primal: Callable[..., Any], rule: Callable[..., Any]) -> None:
    """Registers a user jvp rule of ``primal`` (forward mode uses it as the primal's jvp:
    adgen.custom_jvp.frule_tangent). Reverse mode keeps using the primal's rule (an rrule,
    which adgen.custom_jvp.frule derives from this one where the user gave none)."""
    _FRULES[id(primal)] = (primal, rule)
    _GENERATION[0] += 1


def frule_of(primal: Any) -> Callable[..., Any] | None:
    """The user jvp rule of ``primal``, or None."""
    got = _FRULES.get(id(primal))
    return got[1] if got is not None and got[0] is primal else None


def _install(rule: Rule) -> None:
    _RULES[id(rule.primal)] = rule
    _BY_NAME[rule.name] = rule
    _GENERATION[0] += 1


def _qualname(func: Any) -> str:
    mod = getattr(func, "__module__", None) or ""
    if isinstance(func, __import__("numpy").ufunc):
        mod = "numpy"
    nm = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if mod.startswith("numpy"):
        mod = "numpy.linalg" if mod.startswith("numpy.linalg") else "numpy"
    return f"{mod}.{nm}" if mod else nm


def _check_arity(primal: Any, params: tuple[Param, ...], qual: str) -> None:
    import numpy as np

    if isinstance(primal, np.ufunc):
        positional = [p for p in params if not p.has_default and not p.varargs]
        if len(positional) != primal.nin:
            raise RuleError(f"rule for {qual}: the ufunc takes {primal.nin} inputs, the rule "
                            f"binds {len(positional)}")
        return
    try:
        sig = inspect.signature(primal)
    except (TypeError, ValueError):
        return  # builtins without a signature: nothing to check against
    fake_args = [object() for p in params
                 if not p.has_default and not p.varargs and not p.kwonly]
    try:
        sig.bind_partial(*fake_args)
    except TypeError as exc:
        raise RuleError(f"rule for {qual}: its signature does not fit {primal!r}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# References: NumPy functions compiled as plain-NumPy Python source


class Reference(FrozenRecord):
    """A NumPy function that adgen differentiates through a reference implementation.

    ``impl`` is ordinary Python + NumPy (in :mod:`adgen.rules.composites`) over functions that
    have rules; the compiler compiles a call of ``primal`` as a call of ``impl``, by its own
    source transform, so the adjoint and the mutation facts come from that source. A rule for
    ``primal`` takes precedence over its reference.
    """

    _fields = ("primal", "name", "impl")
    primal: Callable[..., Any]
    name: str
    impl: Callable[..., Any]

    def __init__(self, primal: Callable[..., Any], name: str, impl: Callable[..., Any]) -> None:
        self.__dict__.update(primal=primal, name=name, impl=impl)


_REFERENCES: dict[int, Reference] = {}
_REFERENCE_IMPLS: dict[int, Reference] = {}
_METHOD_REFERENCES: dict[tuple[int, str], Reference] = {}


def defreference(primal: Callable[..., Any], *, name: str | None = None
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers ``impl`` (the decorated function) as the reference for ``primal``.

    Raises:
        RuleError: when ``impl`` takes a parameter ``primal`` does not have, or leaves out
            one ``primal`` requires.
    """

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        qual = name or _qualname(primal)
        if not _builtin(impl):  # adgen's own are checked by parse_all (the tests)
            _check_reference_signature(primal, impl, qual)
        ref = Reference(primal=primal, name=qual, impl=impl)
        _REFERENCES[id(primal)] = ref
        _REFERENCE_IMPLS[id(impl)] = ref
        if type(primal) is types.MethodType:
            # scipy.stats.norm.cdf: a new bound method at every attribute access, found by
            # its object and name
            _METHOD_REFERENCES[(id(primal.__self__), primal.__name__)] = ref
        _GENERATION[0] += 1
        return impl

    return register


_CLASS_METHOD_REFERENCES: dict[int, Reference] = {}


def defmethod_reference(method: Callable[..., Any], *, name: str | None = None
                        ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers ``impl`` (the decorated function, whose first parameter is the object) as
    the reference for ``method``, a function defined in a library class: a call of the method
    on any object of the class (``PRIOR.logpdf(x)`` of a frozen scipy distribution made
    outside the function) is compiled as ``impl(obj, x)``, the object's attributes getting
    their gradients as a user's object's do (:func:`reference_of` of the bound method)."""

    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        ref = Reference(primal=method, name=name or _qualname(method), impl=impl)
        _CLASS_METHOD_REFERENCES[id(method)] = ref
        _REFERENCE_IMPLS[id(impl)] = ref
        _GENERATION[0] += 1
        return impl

    return register


def defreference_helper(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Registers ``fn``, a function of adgen's that references call, to be compiled as the
    user's functions are (its parameters get their gradients), as a reference is."""
    _REFERENCE_IMPLS[id(fn)] = Reference(primal=fn, name=fn.__qualname__, impl=fn)
    return fn


def defreference_class(cls: type) -> type:
    """Registers ``cls`` (a class of adgen's, whose objects a reference returns: the frozen
    distribution ``scipy.stats.norm(mu, s)``) to be compiled as the user's classes are: its
    construction and methods are differentiated from their source."""
    _REFERENCE_IMPLS[id(cls)] = Reference(primal=cls, name=cls.__qualname__, impl=cls)
    return cls


def reference_of(func: Any) -> Callable[..., Any] | None:
    """The reference implementation adgen compiles for ``func``, or None (none, or a rule)."""
    ref = _REFERENCES.get(id(func))
    if ref is None and _OPTIONAL and any(m in sys.modules for m in _OPTIONAL):
        load_optional_rules()  # (scipy.stats.norm(mu, s): a frozen distribution's reference)
        ref = _REFERENCES.get(id(func))
    if ref is None and type(func) is types.MethodType:
        ref = _METHOD_REFERENCES.get((id(func.__self__), func.__name__))
        if ref is not None and ref.primal == func:  # (the same object's same method)
            return ref.impl
        ref = _CLASS_METHOD_REFERENCES.get(id(func.__func__))
        if ref is not None and ref.primal is func.__func__:  # (defmethod_reference)
            return types.MethodType(ref.impl, func.__self__)
        return None
    if ref is None or ref.primal is not func or lookup(func) is not None:
        return None
    return ref.impl


def has_method_reference(method: Any) -> bool:
    """Whether ``method``, a function found on a library class, has a
    :func:`defmethod_reference` (``multivariate_normal_frozen.logpdf``): a call of it on an
    object of the class is compiled as the reference, never from the method's source."""
    if id(method) not in _CLASS_METHOD_REFERENCES and _OPTIONAL and \
            any(m in sys.modules for m in _OPTIONAL):
        load_optional_rules()
    ref = _CLASS_METHOD_REFERENCES.get(id(method))
    return ref is not None and ref.primal is method


def has_function_reference(func: Any) -> bool:
    """Whether ``func`` has a reference implementation that is a plain function (a bound
    method of a library class with a :func:`defmethod_reference` has its reference bound to
    the object: the compiler calls it through the dispatch with its receiver, as it calls
    ``m.loss(x)`` of a global object)."""
    return isinstance(reference_of(func), types.FunctionType)


def is_reference_impl(func: Any) -> bool:
    """True when ``func`` is a registered reference implementation."""
    ref = _REFERENCE_IMPLS.get(id(func))
    return ref is not None and ref.impl is func


def all_references() -> list[Reference]:
    """Every registered reference, in registration order."""
    return list(_REFERENCES.values())


def _check_reference_signature(primal: Any, impl: Any, qual: str) -> None:
    try:
        psig = inspect.signature(primal)
    except (TypeError, ValueError):
        return
    isig = inspect.signature(impl)
    pnames = list(psig.parameters)
    kinds = {p.kind for p in psig.parameters.values()}
    for k, (pname, p) in enumerate(isig.parameters.items()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if pname not in psig.parameters:
            # a named parameter may stand for one that numpy takes through *args / **kwargs
            if (p.kind == p.POSITIONAL_OR_KEYWORD and inspect.Parameter.VAR_POSITIONAL in kinds
                    and k >= pnames.index(next(n for n, q in psig.parameters.items()
                                               if q.kind == q.VAR_POSITIONAL))) or \
                    (p.kind != p.POSITIONAL_ONLY and inspect.Parameter.VAR_KEYWORD in kinds):
                continue
            raise RuleError(f"the reference for {qual} takes {pname!r}, which {qual} does not")
        if p.kind != p.KEYWORD_ONLY and pnames.index(pname) != k:
            raise RuleError(f"the reference for {qual} takes {pname!r} at position {k}, "
                            f"{qual} at {pnames.index(pname)}")
    for pname, p in psig.parameters.items():
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and \
                pname not in isig.parameters:
            raise RuleError(f"the reference for {qual} leaves out its parameter {pname!r}")


# --------------------------------------------------------------------------------------------
# Index arithmetic: helpers of reference implementations that no gradient flows through


_NONDIFF: dict[int, Rule] = {}


def defnondiff(func: Callable[..., Any]) -> Callable[..., Any]:
    """Registers ``func`` (a helper of :mod:`adgen.rules.composites` that computes indices,
    shapes or slices) as having no derivative: the compiler calls it in the forward pass and
    gives its arguments no cotangent. It is not listed among the rules (it is no NumPy
    function); :func:`all_nondiff` lists these helpers for the tests.

    Returns:
        ``func`` wrapped so that a float in its result raises RuleError: a float would carry a
        gradient the compiler drops here (a helper must compute integers, shapes, slices).
    """
    import functools

    inner = func

    @functools.wraps(inner)
    def checked(*args: Any) -> Any:
        result = inner(*args)
        if _has_float(result):
            raise RuleError(f"internal: {inner.__qualname__} is registered without a derivative "
                            "but returned a float, whose gradient would be dropped")
        return result

    func = checked
    rule = Rule(primal=func, name=_qualname(func), params=(Param("args", varargs=True),),
                diff=(), reads=frozenset(), linear=True, view=False, mutates=(),
                vjp=_no_cotangent)
    _RULES[id(func)] = rule
    _NONDIFF[id(func)] = rule
    # forward mode: its result carries no tangent (a reference's shapes and dtypes)
    _install_jvp(func, Jvp("zero"))
    return func


def _has_float(x: Any) -> bool:
    import numpy as np

    if isinstance(x, (list, tuple)):
        return any(_has_float(v) for v in x)
    if isinstance(x, (float, np.floating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"


def _no_cotangent(g: Any, out: Any, args: Any) -> Any:
    return ()


def all_nondiff() -> list[Rule]:
    """The helpers registered with :func:`defnondiff`."""
    return list(_NONDIFF.values())


# --------------------------------------------------------------------------------------------
# Forward mode: Jacobian-vector products of the same rules


class Jvp(FrozenRecord):
    """How forward mode computes the tangent of a rule's output (one per rule, keyed alike).

    ``kind`` is one of
    - ``"terms"``: ``templates`` holds one expression per differentiable parameter, linear in
      ``d`` (that parameter's tangent), over ``out`` and the parameters; the output's tangent
      is the sum of the terms of the parameters that have a tangent;
    - ``"elementwise"``: as ``"terms"``, for an elementwise op whose operands broadcast: when
      some operand has no tangent, the sum is broadcast to the output's shape;
    - ``"linear"``: the primal is linear in its differentiable parameters jointly (``sum``,
      ``reshape``, ``concatenate``): the tangent is the same call on the tangents (zeros for a
      parameter without one), a view where the primal is a view;
    - ``"multilinear"``: linear in each differentiable parameter separately (``matmul``,
      ``einsum``, ``outer``): one call per parameter with a tangent, that argument replaced;
    - ``"zero"``: piecewise constant (``floor``, ``//``, ``round``): the tangent is zero.
    """

    _fields = ("kind", "templates", "fn")
    kind: str
    templates: tuple[gast.expr, ...]
    fn: Callable[..., Any] | None

    def __init__(self, kind: str, templates: tuple[gast.expr, ...] = (),
                 fn: Callable[..., Any] | None = None) -> None:
        self.__dict__.update(kind=kind, templates=templates, fn=fn)

    @property
    def reads_out(self) -> bool:
        return any(isinstance(n, gast.Name) and n.id == "out"
                   for tpl in self.templates for n in walk(tpl))


_JVPS: dict[int, tuple[Any, Jvp | _LazyJvp]] = {}
JVP_KINDS = frozenset({"terms", "elementwise", "linear", "multilinear", "zero"})


def defjvp(primal: Callable[..., Any], *, elementwise: bool = False
           ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the jvp of ``primal``'s rule: ``jvp(d, out, *params)`` returns one term per
    differentiable parameter (a tuple when there are several), each linear in ``d``, that
    parameter's tangent. Like a vjp, its body is a single ``return``.

    Raises:
        RuleError: when ``primal`` has no rule, or the jvp's parameters do not match it.
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        rule = lookup(primal)
        if rule is None or rule.is_rrule:
            raise RuleError(f"defjvp: {_qualname(primal)} has no derivative rule (defvjp) "
                            "to add a jvp to")
        pnames = [p.name for p in rule.params]
        got = _param_names(fn)
        if got != ["d", "out", *pnames]:
            raise RuleError(f"jvp for {rule.name}: must take (d, out, {', '.join(pnames)}), "
                            f"not ({', '.join(got)})")
        kind = "elementwise" if elementwise else "terms"
        if _builtin(fn):  # parsed by jvp_of when forward mode first asks
            _install_jvp(primal, _LazyJvp(kind, fn, len(rule.diff), rule.name,
                                          _source_lines(fn)))
        else:
            _install_jvp(primal, Jvp(kind, _template_of(fn, len(rule.diff), rule.name), fn))
        return fn

    return register


def defjvp_kind(kind: str, *primals: Callable[..., Any]) -> None:
    """Marks each of ``primals`` as ``"linear"``, ``"multilinear"``, ``"zero"`` (see Jvp) or
    ``"elementwise"`` (its jvp is read off its vjp, as for ufuncs: ``jvp_of``)."""
    if kind not in ("linear", "multilinear", "zero", "elementwise"):
        raise RuleError(f"defjvp_kind: unknown kind {kind!r}")
    if kind == "elementwise":  # read off the vjp by jvp_of
        kind = "elementwise-derived"
    for primal in primals:
        rule = lookup(primal)
        if rule is None or rule.is_rrule:
            raise RuleError(f"defjvp_kind: {_qualname(primal)} has no derivative rule")
        _install_jvp(primal, Jvp(kind))


class _LazyJvp(FrozenRecord):
    """A registered jvp whose template is not parsed yet (see :class:`_Templates`)."""

    _fields = ("kind", "fn", "n_diff", "name")  # not ``lines``
    kind: str
    fn: Callable[..., Any]
    n_diff: int
    name: str
    lines: list[str]

    def __init__(self, kind: str, fn: Callable[..., Any], n_diff: int, name: str,
                 lines: list[str]) -> None:
        self.__dict__.update(kind=kind, fn=fn, n_diff=n_diff, name=name, lines=lines)


def _jvp_entry(primal: Any, jvp: Jvp | _LazyJvp) -> tuple[Any, Jvp]:
    """The registry's entry for ``primal`` with its template parsed."""
    if isinstance(jvp, _LazyJvp):
        jvp = Jvp(jvp.kind, _template_of(jvp.fn, jvp.n_diff, jvp.name, jvp.lines), jvp.fn)
        _JVPS[id(primal)] = (primal, jvp)  # the same jvp, parsed: no new generation
    return primal, jvp


def _install_jvp(primal: Any, jvp: Jvp | _LazyJvp) -> None:
    _JVPS[id(primal)] = (primal, jvp)
    _GENERATION[0] += 1


class _Tangent(gast.NodeTransformer):
    """A vjp template read as a jvp one: ``g`` becomes ``d`` and ``unbroadcast(e, ...)``
    becomes ``e`` (an elementwise op's Jacobian is diagonal: its transpose is itself)."""

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id == "unbroadcast" and node.args:
            return node.args[0]
        return node

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if node.id == "g":
            return gast.Name(id="d", ctx=node.ctx, annotation=None, type_comment=None)
        return node


def _elementwise_primal(rule: Rule) -> bool:
    """A NumPy ufunc with one output and no core dimensions (``matmul`` has them), or a
    ``math`` function of numbers."""
    import math

    import numpy as np

    if isinstance(rule.primal, np.ufunc):
        return rule.primal.nout == 1 and rule.primal.signature is None
    return getattr(math, getattr(rule.primal, "__name__", ""), None) is rule.primal and \
        not any(p.varargs for p in rule.params)


def jvp_of(rule: Rule) -> Jvp | None:
    """The jvp of ``rule``: registered, or read off the vjp of an elementwise primal (a ufunc,
    a ``math`` function, or one marked ``defjvp_kind("elementwise", ...)``); None if none."""
    got = _JVPS.get(id(rule.primal))
    if got is not None and isinstance(got[1], _LazyJvp):
        got = _jvp_entry(*got)
    if got is not None and got[0] is rule.primal and got[1].kind != "elementwise-derived":
        return got[1]
    marked = got is not None and got[0] is rule.primal
    if rule.is_rrule or not rule.templates or not (marked or _elementwise_primal(rule)):
        return None
    import copy

    import numpy as np

    # a binary ufunc broadcasts: its cotangents must each be unbroadcast(...), which the
    # reading strips (math functions take numbers; a marked primal was checked by hand)
    each_unbroadcast = all(isinstance(t, gast.Call) and isinstance(t.func, gast.Name) and
                           t.func.id == "unbroadcast" for t in rule.templates)
    if len(rule.diff) > 1 and isinstance(rule.primal, np.ufunc) and not marked and \
            not each_unbroadcast:
        return None
    return Jvp("elementwise", tuple(_Tangent().visit(copy.deepcopy(t))
                                    for t in rule.templates))
