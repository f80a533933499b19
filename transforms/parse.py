"""Parse: a Python function object to a gast FunctionDef with the facts the compiler needs.

Input: a function object. Output: a :class:`Parsed` whose ``tree`` is the function's
``FunctionDef`` with line numbers of the user's file (decorators removed), plus the file, the
function's globals and closure cells. Raises MissingRuleError when the source is unavailable.
"""

from __future__ import annotations

import functools
import inspect
import sys
import textwrap
import types
from typing import Any

import gast
from adgen.transforms import gast_ast
from adgen.transforms.bindings import local_imports
from adgen.transforms.cached_functions import uncached
from adgen.transforms.keyword_shims import keyword_shim_of, parse_keyword_shim
from adgen.transforms.star_wrappers import parse_wrapper, wrapper_of
from adgen.transforms.walk import walk

from adgen.errors import Location, MissingRuleError, UnsupportedError


class Parsed:
    """A parsed user function.

    What ``@dataclass`` gave it, written out (a dataclass compiles its methods from source
    when ``import adgen`` defines it: issue 15's cold start): the fields below, each container
    a new one when not given, equality over the fields, a repr of them.
    """

    _FIELDS = ("fn", "tree", "file", "lines", "namespace", "nested_defs", "closure_free",
               "aliases_in_defs", "renamed_params", "inlined_names", "cells", "imports",
               "kwonly", "free", "bound", "bound_guards", "objects")

    fn: Any
    tree: gast.FunctionDef
    file: str
    lines: list[str]
    namespace: dict[str, Any]  # globals + closure cells
    nested_defs: list[Any]  # set aside by hoist_defs
    closure_free: set[str]  # names nested defs read
    # names of NumPy functions nested defs read as what they name (function_aliases), which
    # forward mode's jvp of a nested def, run from its own code, reads in its closure
    aliases_in_defs: set[str]
    renamed_params: dict[str, str]  # new name -> user's name
    # names inlined_closures gave a written-out nested def's variables (relax_y) -> the
    # user's name there and the def's (("y", "relax"))
    inlined_names: dict[str, tuple[str, str]]
    cells: dict[str, Any]  # closure cells by free variable
    imports: dict[str, Any]  # names the body's imports bind
    kwonly: list[str]  # keyword-only parameters (user's names)
    # the free names the function reads: user's name -> the name generated code reads it by
    free: dict[str, str]
    # names the front end binds to what a method or partial call runs (bound_callees), and
    # the guards of those resolutions
    bound: dict[str, Any]
    bound_guards: list[Any]
    # the names bound_callees took for objects of a known class (a parameter compiled for its
    # class, an object the function builds) and rewrote a method call on: objects, whose
    # arrays keep adjoints of their own (the analyses never take them for arrays)
    objects: set[str]

    def __init__(self, fn: Any, tree: gast.FunctionDef, file: str, lines: list[str],
                 namespace: dict[str, Any] | None = None, nested_defs: list[Any] | None = None,
                 closure_free: set[str] | None = None, aliases_in_defs: set[str] | None = None,
                 renamed_params: dict[str, str] | None = None,
                 inlined_names: dict[str, tuple[str, str]] | None = None,
                 cells: dict[str, Any] | None = None, imports: dict[str, Any] | None = None,
                 kwonly: list[str] | None = None, free: dict[str, str] | None = None,
                 bound: dict[str, Any] | None = None, bound_guards: list[Any] | None = None,
                 objects: set[str] | None = None) -> None:
        self.fn = fn
        self.tree = tree
        self.file = file
        self.lines = lines
        self.namespace = {} if namespace is None else namespace
        self.nested_defs = [] if nested_defs is None else nested_defs
        self.closure_free = set() if closure_free is None else closure_free
        self.aliases_in_defs = set() if aliases_in_defs is None else aliases_in_defs
        self.renamed_params = {} if renamed_params is None else renamed_params
        self.inlined_names = {} if inlined_names is None else inlined_names
        self.cells = {} if cells is None else cells
        self.imports = {} if imports is None else imports
        self.kwonly = [] if kwonly is None else kwonly
        self.free = {} if free is None else free
        self.bound = {} if bound is None else bound
        self.bound_guards = [] if bound_guards is None else bound_guards
        self.objects = set() if objects is None else objects

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable, compared by value: as the dataclass)

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"Parsed({shown})"

    def is_local(self, name: str) -> bool:
        """True when ``name`` is a parameter or is assigned in the function."""
        if not hasattr(self, "_locals"):
            names = {a.id for a in self.tree.args.args}
            for n in walk(self.tree):
                if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Param)):
                    names.add(n.id)
                elif isinstance(n, gast.FunctionDef) and n is not self.tree:
                    names.add(n.name)
            self._locals = names
        return name in self._locals

    def forget_locals(self) -> None:
        """Reads the locals from the tree again at the next :meth:`is_local` (a pass bound new
        names in it: bound_callees)."""
        self.__dict__.pop("_locals", None)

    def location(self, node: gast.AST) -> Location:
        line = getattr(node, "lineno", 0) or 0
        col = getattr(node, "col_offset", 0) or 0
        import linecache

        return Location(self.file, line, col, linecache.getline(self.file, line))


def parse_function(fn: Any) -> Parsed:
    """Reads and parses ``fn``'s source.

    Raises:
        MissingRuleError: when the source cannot be read and there is no rule.
        UnsupportedError: for async functions and generators, and a source that does not
            match the function's code.
    """
    wrapper = wrapper_of(fn)
    if wrapper is not None:  # def wrapper(*args, **kwargs) given fn's parameters
        parsed = parse_function(wrapper)
        parse_wrapper(parsed, fn)
        return parsed
    shim = keyword_shim_of(fn)
    if shim is not None:  # def f(x, **kw) given the keywords of a call as parameters
        parsed = parse_function(shim[0])
        parse_keyword_shim(parsed, fn)
        return parsed
    # the source of the function's own code: a decorator's wrapper is the wrapper (which
    # calls the function it wraps), not the function its __wrapped__ names
    code = getattr(fn, "__code__", None)
    quick = _quick_def(fn, code)
    if quick is not None:  # the common case, without inspect's tokenizer
        return _parsed(fn, *quick)
    try:
        if code is None:
            raise TypeError("no code object")
        if inspect.isfunction(fn) and getattr(fn, "__wrapped__", None) is None:
            # the same lines, but inspect finds the module by fn.__module__: for a code
            # object it scans every module in sys.modules (8 ms of a 35 ms first gradient)
            lines, first = inspect.getsourcelines(fn)
        else:
            lines, first = inspect.getsourcelines(code)
        file = inspect.getsourcefile(code) or inspect.getfile(code)
    except (OSError, TypeError) as exc:
        found = _def_in_module_file(fn)
        if found is None:
            raise _no_source(fn) from exc
        lines, first, file = found
    matched = False
    if code.co_name == "<lambda>":
        node = _lambda_def(fn, file)
        src = ""
    else:
        try:
            src, node = _parse_block(fn, lines, first)
            matched = isinstance(node, gast.FunctionDef) and _matches(fn, src, file)
        except UnsupportedError:
            src, node = "", None
        if not matched:
            # IPython's %autoreload (deduperreload, IPython >= 9) patches an edited
            # function's __code__ with its def compiled alone: co_firstlineno then counts
            # from that def, not from the top of the file. Find the def by its code.
            moved = _def_in_file(fn, file)
            if moved is not None:
                lines, first = moved
                matched = True
            if moved is not None or node is None:  # node None: re-raise the parse error
                src, node = _parse_block(fn, lines, first)
    if isinstance(node, gast.AsyncFunctionDef):
        raise UnsupportedError("async functions are not differentiable",
                               _loc(file, node), hint="differentiate a plain def")
    if not isinstance(node, gast.FunctionDef):
        raise UnsupportedError(
            f"{getattr(fn, '__qualname__', fn)} is a lambda or not a plain function",
            _loc(file, node), hint="write it as a def, or register an adgen.rrule")
    if src and not matched:
        _check_matches(fn, src, node, file)
    return _parsed(fn, node, file)


def _parsed(fn: Any, node: gast.FunctionDef, file: str) -> Parsed:
    """The :class:`Parsed` of ``fn``, whose def (read from ``file``) is ``node``."""
    if _class_name(fn):
        _mangle_private(node, _class_name(fn))
    node.decorator_list = []
    kwonly = _flatten_parameters(node)
    namespace = dict(fn.__globals__)
    cells: dict[str, Any] = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            cells[name] = cell
            try:
                namespace[name] = cell.cell_contents
            except ValueError:
                pass
    if "__class__" in cells and node.args.args:
        _explicit_super(node, namespace.get("__class__"), fn.__globals__)
    # imports at the top of the body bind modules, which are read like globals
    try:
        imports = local_imports(node)
    except ImportError as exc:
        raise UnsupportedError(f"an import in {fn.__qualname__} fails: {exc}",
                               _loc(file, node)) from exc
    node.body = [s for s in node.body if not (
        isinstance(s, gast.Import) or (isinstance(s, gast.ImportFrom) and s.level == 0 and
                                       s.module and all(a.name != "*" for a in s.names)))] or \
        [gast.Pass()]
    namespace.update(imports)
    _unwrap_njit(namespace)
    # an lru_cache'd function is read as the function it wraps (cached_functions); as for
    # njit, the guards keep the name's real binding, read from the globals
    for name, value in namespace.items():
        if isinstance(value, functools._lru_cache_wrapper):  # noqa: SLF001
            namespace[name] = uncached(value)
    import linecache

    linecache.checkcache(file)
    all_lines = linecache.getlines(file)
    return Parsed(fn=fn, tree=node, file=file, lines=all_lines, namespace=namespace,
                  cells=cells, imports=imports, kwonly=kwonly)


def _quick_def(fn: Any, code: Any) -> tuple[gast.FunctionDef, str] | None:
    """The def of a plain function of a ``.py`` file and the file, read as
    ``inspect.getsourcelines`` reads it but without its tokenizer (compiling tokenize's
    regular expressions was 2 ms of a first gradient): from the line ``co_firstlineno`` names
    (the first decorator's, or the def's) to the last line indented deeper than it, blank and
    comment lines after it left out. None, and the caller reads the source through inspect,
    when that line does not start a def, or the text is not the code ``fn`` runs
    (:func:`_matches`: an edited file, IPython's %autoreload)."""
    if code is None or code.co_name == "<lambda>" or not inspect.isfunction(fn) or \
            getattr(fn, "__wrapped__", None) is not None:
        return None
    import linecache
    import os

    file = code.co_filename
    if not file.endswith(".py") or not os.path.isfile(file):
        return None
    linecache.checkcache(file)
    lines = linecache.getlines(file)
    first = code.co_firstlineno
    if not 0 < first <= len(lines):
        return None
    head = lines[first - 1]
    if not head.lstrip().startswith(("def ", "@", "async ")):
        return None
    indent = len(head) - len(head.lstrip())
    # at least through the last line the code runs: a def's header and an expression may go
    # on at any indentation inside brackets
    end = max(first, max((line for _, _, line in code.co_lines() if line is not None),
                         default=first))
    while end < len(lines):
        text = lines[end].strip()
        if text and not text.startswith("#") and \
                len(lines[end]) - len(lines[end].lstrip()) <= indent:
            break
        end += 1
    while end > first and (not lines[end - 1].strip() or
                           lines[end - 1].lstrip().startswith("#")):
        end -= 1
    try:
        src, node = _parse_block(fn, lines[first - 1:end], first)
    except UnsupportedError:
        return None
    if not isinstance(node, gast.FunctionDef) or node.name != code.co_name or \
            not _matches(fn, src, file):
        return None
    return node, file


def _explicit_super(node: gast.FunctionDef, cls: Any, globals_: dict[str, Any]) -> None:
    """``super()`` in a method. ``super().name(args)`` becomes ``Parent.name(self, args)``
    when ``name`` is a plain function of a parent class bound to its own name in the module
    (the call adgen differentiates like any other, writes of ``self`` included) and every
    subclass of the method's class has one base (so the parent is the one Python's MRO
    finds for any ``self``); ``super().__init__()`` of ``object`` does nothing and goes.
    Any other ``super()`` becomes ``super(__class__, self)``: the zero-argument form reads
    the ``__class__`` cell and the first argument of the frame it runs in, which the
    generated code's frame does not have (a raw RuntimeError)."""
    first = node.args.args[0].id
    local = {n.id for n in walk(node) if isinstance(n, gast.Name) and
             isinstance(n.ctx, (gast.Store, gast.Param))}

    def parent_of(name: str) -> Any:
        if not isinstance(cls, type) or not _single_inheritance_below(cls):
            return None
        for base in cls.__mro__[1:]:
            if name in base.__dict__:
                return base
        return None

    for sub in walk(node):
        call = sub.value if isinstance(sub, gast.Expr) else None
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and \
                call.func.attr == "__init__" and _is_super_call(call.func.value) and \
                not call.args and not call.keywords and parent_of("__init__") is object:
            sub.value = gast.Constant(None, None)  # object.__init__(self): nothing to do
    for sub in walk(node):
        if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Attribute) and \
                _is_super_call(sub.func.value):
            owner = parent_of(sub.func.attr)
            found = owner.__dict__[sub.func.attr] if owner is not None else None
            if isinstance(found, types.FunctionType) and owner.__name__ not in local and \
                    globals_.get(owner.__name__) is owner:
                sub.func.value = gast.Name(owner.__name__, gast.Load(), None, None)
                sub.args = [gast.Name(first, gast.Load(), None, None), *sub.args]
    for sub in walk(node):
        if _is_super_call(sub):
            sub.args = [gast.Name("__class__", gast.Load(), None, None),
                        gast.Name(first, gast.Load(), None, None)]


def _is_super_call(node: gast.AST) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
        node.func.id == "super" and not node.args and not node.keywords


def _single_inheritance_below(cls: type) -> bool:
    """Whether every subclass of ``cls`` (at any depth) has one base."""
    todo = list(type.__subclasses__(cls))
    while todo:
        sub = todo.pop()
        if len(sub.__bases__) != 1:
            return False
        todo.extend(type.__subclasses__(sub))
    return True


def _unwrap_njit(namespace: dict[str, Any]) -> None:
    """A ``numba.njit`` function the code calls is read as its Python function
    (``py_func``): a callee adgen differentiates like any other; unless a rule is registered
    for the dispatcher itself (``@adgen.rrule(jitted)``), or its code uses numba's own names
    (``numba.prange``, typed lists, ``objmode``), which only numba runs: that one stays
    opaque, as before (an inactive call runs it, an active one needs a rule). The guards
    keep the dispatcher (the name's real binding, read from the globals), and an inactive
    call runs it."""
    from adgen.rules import registry

    for name, value in namespace.items():
        if not str(type(value).__module__).startswith("numba."):
            continue  # (a user's __getattr__ may raise KeyError for py_func: not asked)
        py_func = getattr(value, "py_func", None)
        if callable(py_func) and registry.lookup(value) is None and not _uses_numba(py_func):
            namespace[name] = py_func


def _uses_numba(fn: Any) -> bool:
    """Whether ``fn``'s code (nested code included) reads a global bound to numba or to
    something of numba's (``prange``, ``numba.typed.List``, ``literal_unroll``)."""
    todo = [getattr(fn, "__code__", None)]
    scope = getattr(fn, "__globals__", {})
    while todo:
        code = todo.pop()
        if code is None:
            continue
        for n in code.co_names:
            v = scope.get(n)
            if callable(getattr(v, "py_func", None)):
                continue  # another njit function: read as its py_func in turn
            mod = v.__name__ if isinstance(v, type(inspect)) else \
                str(getattr(v, "__module__", "") or "")
            if mod == "numba" or mod.startswith("numba."):
                return True
        todo += [c for c in code.co_consts if isinstance(c, type(code))]
    return False


def _class_name(fn: Any) -> str:
    """The class a method was defined in (its ``__qualname__`` says), or ''."""
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>" and parts[-2].isidentifier():
        return parts[-2]
    return ""


def _mangle_private(node: gast.FunctionDef, owner: str) -> None:
    """``self.__x`` in a method of class ``Owner`` is ``self._Owner__x``, as Python compiles
    it; the generated code is compiled outside the class, so the tree says it."""
    prefix = "_" + owner.lstrip("_")
    if prefix == "_":
        return
    for sub in walk(node):
        if isinstance(sub, gast.Attribute) and sub.attr.startswith("__") and \
                not sub.attr.endswith("__"):
            sub.attr = prefix + sub.attr


def _no_source(fn: Any) -> MissingRuleError:
    """The error for a function whose source Python did not keep."""
    name = getattr(fn, "__qualname__", repr(fn))
    code = getattr(fn, "__code__", None)
    where = getattr(code, "co_filename", "")
    if where == "<dynamic-code>":  # cloudpickle's mark: sent by value, without its source
        return MissingRuleError(
            f"adgen cannot read the source of {name}: it was sent to this process by value "
            "(cloudpickle: Dask, Ray, joblib send the functions of a script's __main__ or a "
            "notebook that way), and its source stayed behind",
            hint=f"define {name} in a module the workers can import (from mymodel import "
                 f"{getattr(fn, '__name__', name)}), so it is sent by reference")
    magic = {"<timed exec>": "%time or %%time", "<timed eval>": "%time",
             "<magic-timeit>": "%timeit or %%timeit"}.get(where)
    if magic is not None:  # IPython compiles the code of these magics itself, keeping no text
        return MissingRuleError(
            f"adgen cannot read the source of {name}: it was defined in notebook code run by "
            f"{magic} ({where}), and IPython keeps no source for code its timing magics run",
            hint=f"define it in a plain cell, without {magic}, then time only the call: "
                 "%time g = adgen.grad(f)(x)")
    if where in ("<stdin>", "<string>") or where.startswith("<"):
        return MissingRuleError(
            f"adgen cannot read the source of {name}: it was defined at the interactive "
            f"prompt, by python -c or by exec ({where}), and Python keeps no source for it",
            hint="define it in a .py file (and import it) or in a Jupyter/IPython cell; an "
                 "adgen.rrule is for functions whose derivative you write yourself")
    return MissingRuleError(
        f"adgen cannot read the source of {name} and it has no derivative rule",
        hint="register one with @adgen.rrule(" + getattr(fn, "__name__", "f") + ")")


def _lambda_def(fn: Any, file: str) -> gast.FunctionDef:
    """A lambda as the def it stands for (``def lambda_12(w): return loss(w, X, y)``): the
    lambda on its line whose code is the lambda's own (a line may hold several, and a lambda
    inside a call spans what the call spans)."""
    import ast
    import linecache

    code = fn.__code__
    text = "".join(linecache.getlines(file))
    try:
        module = ast.parse(text)
    except SyntaxError:
        raise _no_source(fn) from None
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            segment = ast.get_source_segment(text, node)
            try:
                candidate = compile("(" + segment + ")", file, "eval", dont_inherit=True)
            except SyntaxError:
                continue
            inner = [c for c in candidate.co_consts if hasattr(c, "co_code")]
            if inner and _shape(inner[0]) == _shape(code):
                found.append(node)
    if not found:
        raise UnsupportedError(
            f"adgen cannot find the source of the lambda of line {code.co_firstlineno} "
            "(the file was edited after it was defined?)",
            _loc(file, gast.Constant(None, None, lineno=code.co_firstlineno, col_offset=0)),
            hint="write it as a def")
    lam = gast.ast_to_gast(found[0])
    ret = gast.Return(value=lam.body)
    gast.copy_location(ret, lam.body)
    fdef = gast.FunctionDef(name=f"lambda_{code.co_firstlineno}", args=lam.args, body=[ret],
                            decorator_list=[], returns=None, type_comment=None,
                            type_params=[])
    gast.copy_location(fdef, lam)
    return fdef


def _parse_block(fn: Any, lines: list[str], first: int) -> tuple[str, gast.AST]:
    """The dedented text of a def's lines (``first``: the file line of ``lines[0]``) and its
    first statement, with the file's line numbers and columns."""
    src = textwrap.dedent("".join(lines))
    shift = first - 1
    indent = len(lines[0]) - len(lines[0].lstrip())
    try:
        # parsed at the file's lines (``shift`` empty lines above the def): no walk of the
        # tree moves every node's lines (half a percent of ADI's build)
        module = gast_ast.parse("\n" * shift + src if shift > 0 else src)
    except SyntaxError as exc:
        raise UnsupportedError(
            f"cannot parse the source of {fn.__qualname__}: {exc.msg}") from exc
    node = module.body[0]
    if shift <= 0:
        for sub in walk(module):  # gast.increment_lineno(module, shift) in the same walk
            if "lineno" in sub._attributes:
                sub.lineno = (getattr(sub, "lineno", 0) or 0) + shift
            if "end_lineno" in sub._attributes:
                sub.end_lineno = (getattr(sub, "end_lineno", 0) or 0) + shift
            if hasattr(sub, "col_offset") and sub.col_offset is not None:
                sub.col_offset += indent
    elif indent or "except" in src:
        # the columns of an indented def (a method), and the line, ``shift``, that
        # gast.increment_lineno gives a node gast makes without one (an except clause's
        # name): what the walk above does once the lines are the file's
        for sub in walk(module):
            if "lineno" in sub._attributes and not getattr(sub, "lineno", 0):
                sub.lineno = shift
            if "end_lineno" in sub._attributes and not getattr(sub, "end_lineno", 0):
                sub.end_lineno = shift
            if hasattr(sub, "col_offset") and sub.col_offset is not None:
                sub.col_offset += indent
    return src, node


def _def_in_file(fn: Any, file: str) -> tuple[list[str], int] | None:
    """The lines of the def in ``file`` whose code is the one ``fn`` runs, and the line it
    starts at (its first decorator's, as inspect counts), found by name and code rather than
    by ``co_firstlineno``; None when no def of the file compiles to it."""
    import ast
    import linecache

    linecache.checkcache(file)
    all_lines = linecache.getlines(file)
    try:
        module = ast.parse("".join(all_lines))
    except SyntaxError:
        return None
    for node in ast.walk(module):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name == fn.__code__.co_name and node.end_lineno is not None:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            lines = all_lines[start - 1:node.end_lineno]
            if _matches(fn, textwrap.dedent("".join(lines)), file):
                return lines, start
    return None


def _def_in_module_file(fn: Any) -> tuple[list[str], int, str] | None:
    """For a function compiled from text as ``"<string>"`` (IPython's %autoreload adds a def
    new to an edited module that way), its def in the file of the module it belongs to, when
    that def compiles to its code: (lines, first line, file); else None."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename != "<string>":
        return None
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return None
    found = _def_in_file(fn, file)
    return None if found is None else (found[0], found[1], file)


def _matches(fn: Any, src: str, file: str) -> bool:
    """True when ``src`` (one def) compiles to the code ``fn`` runs, up to line numbers and
    to how variables are reached (or does not compile: the caller reports that)."""
    owner = _class_name(fn)
    src = _enclosed(fn, src, owner)
    if owner:  # compiled in a class of its name, so private names are mangled alike
        src = f"class {owner}:\n" + textwrap.indent(src, "    ")
    if _compiles_to_its_code(fn, src, file):
        return True  # (without disassembling both: 3.5 ms of Polybench ADI's build)
    try:
        compiled = compile(src, file, "exec", dont_inherit=True)
    except SyntaxError:
        return True  # parse errors are reported by the caller
    mine = _codes_named(compiled, fn.__code__.co_name)
    return bool(mine) and _shape(mine[0]) == _shape(fn.__code__)


def _enclosed(fn: Any, src: str, owner: str) -> str:
    """``src`` inside a function binding the variables ``fn``'s code reads from an enclosing
    function (its free variables), so that compiled alone it reaches them as Python does: a
    nested def that reads ``scale`` of the function around ``fn`` is a closure over it in
    ``fn``'s code, and a function reading a global when the def is compiled alone."""
    free = [n for n in getattr(fn.__code__, "co_freevars", ()) if
            not (owner and n == "__class__")]
    if not free:
        return src
    return ("def _adgen_enclosing():\n    " + " = ".join(free) + " = None\n" +
            textwrap.indent(src, "    "))


def code_names(code: Any) -> set[str]:
    """The global and attribute names ``code`` and the code nested in it read
    (``co_names``): a name no code reads is not called there (``reversed``)."""
    names: set[str] = set()
    todo = [code]
    for c in todo:
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    return names


def _codes_named(code: types.CodeType, name: str) -> list[types.CodeType]:
    """The code objects named ``name`` nested in ``code`` (at any depth), outermost first."""
    found: list[types.CodeType] = []
    todo = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    for c in todo:
        if c.co_name == name:
            found.append(c)
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return found


def _compiles_to_its_code(fn: Any, src: str, file: str) -> bool:
    """A quick sufficient test for :func:`_matches`: ``src`` compiled after imports binding
    the module names the function reads gives exactly the function's code (its bytecode,
    names and constants, nested code alike), so the instructions :func:`_shape` compares are
    the same. The imports (never run: ``import sys as np``) make the compiler reach those
    modules' attributes as it does in the function's own module, where ``np.sum(x)`` is not
    a method call. False sends :func:`_matches` to the comparison of the instructions."""
    code = fn.__code__
    module_names = sorted(n for n in _names_read(code)
                          if isinstance(fn.__globals__.get(n), types.ModuleType))
    head = "import " + ", ".join(f"sys as {n}" for n in module_names) + "\n" \
        if module_names else ""
    try:
        compiled = compile(head + src, file, "exec", dont_inherit=True)
    except SyntaxError:
        return False
    return any(_same_code(c, code) for c in _codes_named(compiled, code.co_name))


def _names_read(code: types.CodeType) -> set[str]:
    """The names ``code`` and the code nested in it read as globals or attributes."""
    out = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out |= _names_read(c)
    return out


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """The same bytecode, names and constants (nested code compared the same way)."""
    if a.co_code != b.co_code or a.co_names != b.co_names or \
            a.co_varnames != b.co_varnames or a.co_cellvars != b.co_cellvars or \
            a.co_freevars != b.co_freevars or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True


def _check_matches(fn: Any, src: str, node: gast.AST, file: str) -> None:
    """Refuses a source text that is not the one ``fn`` was compiled from: the file was edited,
    or the notebook cell re-run with another body, after ``fn`` was defined. Python runs the
    code object; adgen would differentiate the text."""
    if _matches(fn, src, file):
        return
    raise UnsupportedError(
        f"the source of {fn.__qualname__} in {file} is not the code Python runs for it: the "
        "file was edited, or the cell re-run with another body, after it was defined",
        _loc(file, node),
        hint=f"define {fn.__qualname__} again (re-run its cell, or importlib.reload its "
             "module) and pass the new function")


# Instructions that differ between a closure and the same text compiled alone.
_PROLOGUE = {"RESUME", "NOP", "CACHE", "MAKE_CELL", "COPY_FREE_VARS", "EXTENDED_ARG",
             "PUSH_NULL"}
_LOADS = {"LOAD_GLOBAL": "load", "LOAD_DEREF": "load", "LOAD_NAME": "load",
          "LOAD_FAST": "load", "LOAD_CLOSURE": "load", "LOAD_CLASSDEREF": "load",
          "STORE_DEREF": "store", "STORE_FAST": "store", "STORE_NAME": "store",
          "STORE_GLOBAL": "store", "DELETE_FAST": "delete", "DELETE_DEREF": "delete",
          "LOAD_FAST_CHECK": "load", "LOAD_FAST_AND_CLEAR": "load",
          "LOAD_FROM_DICT_OR_DEREF": "load", "LOAD_FROM_DICT_OR_GLOBALS": "load",
          "LOAD_FAST_LOAD_FAST": "load", "STORE_FAST_STORE_FAST": "store",
          "STORE_FAST_LOAD_FAST": "store"}


def _shape(code: Any) -> list[Any]:
    """A code object's instructions with how each variable is reached left out (a free
    variable is a global when the text is compiled alone), nested code compared the same."""
    import dis

    out: list[Any] = []
    closure = False
    for ins in dis.get_instructions(code):
        op = "LOAD_ATTR" if ins.opname == "LOAD_METHOD" else ins.opname  # (as quickened)
        if op in _PROLOGUE:
            continue
        # a nested function's closure tuple holds the cells of the variables it reads: a
        # variable of the enclosing function is a global when the text is compiled alone, and
        # no cell (lambda z: f(*[z if i == k else a ...]) with k a parameter of the function
        # around the lambda was not found: its comprehension's closure held k too)
        if op == "LOAD_CLOSURE":
            closure = True
            continue
        if closure and op == "BUILD_TUPLE":
            closure = False
            continue
        closure = False
        if op == "SET_FUNCTION_ATTRIBUTE" and ins.arg == 8:
            continue
        if op == "MAKE_FUNCTION":
            out.append((op, (ins.arg or 0) & ~8))
            continue
        if op in _LOADS:
            out.append((_LOADS[op], str(ins.argval)))
        elif hasattr(ins.argval, "co_code"):
            out.append((op, tuple(_shape(ins.argval))))
        elif op.startswith(("JUMP", "POP_JUMP", "FOR_ITER", "SEND")) or "JUMP" in op:
            out.append((op,))  # offsets move with the prologue
        elif op in ("KW_NAMES", "LOAD_CONST", "RETURN_CONST"):
            out.append((op, repr(ins.argval)))
        else:
            out.append((op, repr(ins.argval) if ins.argval is not None else None))
    return out


def _flatten_parameters(node: gast.FunctionDef) -> list[str]:
    """Puts positional-only and keyword-only parameters with the others, in the order of
    ``inspect.signature`` (the order cotangents come back in), and drops the defaults' source
    text: the forward gets the function's own ``__defaults__`` and ``__kwdefaults__``
    (the forward emitter restores the keyword-only ones). A ``*xs`` parameter becomes a
    parameter ``xs`` holding the tuple (its callers pack the extra arguments: ``varargs_of``).
    Returns the keyword-only names."""
    a = node.args
    kwonly = [p.id for p in a.kwonlyargs]
    packed = [a.vararg] if a.vararg is not None and a.kwarg is None else []
    if packed:
        a.vararg = None
    a.args = list(a.posonlyargs) + list(a.args) + packed + list(a.kwonlyargs)
    a.posonlyargs, a.kwonlyargs, a.kw_defaults, a.defaults = [], [], [], []
    return kwonly


def positional_params(fn: Any, nargs: int) -> list[str]:
    """The parameter each of ``nargs`` positional arguments of a call of ``fn`` lands in
    (``*xs`` takes every one past the named ones)."""
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = [p.name for p in inspect.signature(fn).parameters.values()
            if p.kind == p.VAR_POSITIONAL]
    if star:
        names += star * max(nargs - len(names), 0)
    return names[:nargs]


def varargs_of(fn: Any) -> int | None:
    """For a Python function with ``*args`` (and no ``**kwargs``): how many positional
    parameters come before it (a call packs its arguments from there into one tuple, the
    compiled function's parameter); None for any other function."""
    import inspect

    code = getattr(fn, "__code__", None)
    if code is None or not code.co_flags & inspect.CO_VARARGS or \
            code.co_flags & inspect.CO_VARKEYWORDS:
        return None
    return code.co_argcount


def _loc(file: str, node: gast.AST) -> Location:
    import linecache

    line = getattr(node, "lineno", 0)
    return Location(file, line, getattr(node, "col_offset", 0), linecache.getline(file, line))
