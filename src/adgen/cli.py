"""The ``adgen`` command: ``adgen FILE.py [-f NAME] [--explain | --stage PASS | -o OUT.py]
[--mode forward]``.

Prints (or, with ``-o``, writes as a standalone module) the generated forward and pullback of
a file's functions. Exit status: 0 ok; 1 when adgen reports an error in the user's code (printed
compiler-style: ``file:line:col: error: ...``, the source line, a caret); 2 for usage errors
(bad options, a file that cannot be imported, no such function, nothing to differentiate).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib.util
import inspect
import keyword
import os
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import adgen
from adgen.arguments import POLICIES
from adgen.errors import AdgenError

OK, COMPILE_ERROR, USAGE_ERROR = 0, 1, 2


class UsageError(Exception):
    """A bad command line or input file (exit 2); a ``located`` one starts ``file:line:col:``."""

    def __init__(self, message: str, located: bool = False) -> None:
        super().__init__(message)
        self.located = located


def highlight(text: str, stream: TextIO) -> str:
    """``text`` coloured as Python if ``stream`` is a terminal, pygments is installed and
    ``NO_COLOR`` is unset; otherwise unchanged, so pipes and files get plain text."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("NO_COLOR") or not (isatty and isatty()):
        return text
    try:
        from pygments import highlight as pygments_highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return text
    return pygments_highlight(text, PythonLexer(), TerminalFormatter())


def _argnums(text: str) -> tuple[int, ...]:
    parts = text.replace(",", " ").split()
    if not parts or not all(p.lstrip("-").isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"expected positions like 0 or 0,2, not {text!r}")
    return tuple(int(p) for p in parts)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="adgen", description="Print the forward and pullback adgen "
                                "generates for the functions of a Python file.",
                                epilog="exit status: 0 ok, 1 errors in the code, 2 usage errors")
    p.add_argument("file", metavar="FILE.py", help="imported as a module, its folder on sys.path")
    p.add_argument("-f", "--function", dest="functions", action="append", metavar="NAME",
                   help="a function, decorated or not (repeatable; default: every "
                   "@adgen.differentiable one)")
    p.add_argument("--argnums", type=_argnums, metavar="I[,J]", help="positions to "
                   "differentiate, checked; the pullback returns cotangents for all positional "
                   "arguments")
    p.add_argument("--mutation", choices=POLICIES, help="in-place write policy (default: the "
                   "decorator's, else save)")
    what = p.add_mutually_exclusive_group()
    p.add_argument("--args", dest="example", metavar="EXPR",
                   help="example arguments, a Python expression with np and the file's names "
                   "(e.g. 'np.zeros(5), 0.7'): print the code grad compiles for arguments of "
                   "their kinds (numbers, arrays of each rank), with its single-use pullback "
                   "where grad runs one")
    p.add_argument("--reusable", action="store_true", help="with --args: the reusable "
                   "pullback vjp returns instead of grad's single-use one")
    what.add_argument("--explain", action="store_true", help="print the mutation sites and "
                      "what adgen decided at each")
    what.add_argument("--stage", metavar="PASS", help="print the code after a compiler pass")
    what.add_argument("-o", "--output", metavar="OUT.py", help="write one standalone module "
                      "(imports numpy and FILE, not adgen)")
    p.add_argument("--mode", choices=("reverse", "forward"), default="reverse",
                   help="reverse: the forward and pullback of grad/vjp (default); forward: the "
                        "tangent code of jvp")
    p.add_argument("--version", action="version", version=f"adgen {adgen.__version__}")
    return p


# The prefix of the module name a file gets when its stem names another module (types.py).
PRIVATE_PREFIX = "_adgen_file_"


def module_name(file: Path) -> str:
    """The name ``file`` is imported under: its stem, unless that is not a plain identifier or
    names another module (one of the standard library's, or one already imported, such as
    numpy); then ``PRIVATE_PREFIX + stem``, so the other module is not replaced in
    ``sys.modules`` (adgen itself imports ``types`` and ``inspect``)."""
    stem = file.stem
    taken = sys.modules.get(stem)
    same = taken is not None and getattr(taken, "__file__", None) is not None and \
        os.path.realpath(taken.__file__) == os.path.realpath(file)
    if stem.isidentifier() and not keyword.iskeyword(stem) and (same or (
            taken is None and stem not in sys.stdlib_module_names)):
        return stem
    return PRIVATE_PREFIX + re.sub(r"\W", "_", stem)


def _stdlib_end() -> int:
    """The position in sys.path just after the standard library's entries (0 if none is)."""
    std = [os.path.realpath(p) for p in {sysconfig.get_path("stdlib"),
                                          sysconfig.get_path("platstdlib")} if p]
    zipped = f"python{sys.version_info[0]}{sys.version_info[1]}.zip"
    end = 0
    for k, entry in enumerate(sys.path):
        real = os.path.realpath(entry or os.curdir)
        if os.path.basename(real) == zipped or any(
                real == s or real.startswith(s + os.sep) for s in std):
            end = k + 1
    return end


def package_path(file: Path) -> tuple[str, Path]:
    """The dotted name of ``file`` when its folder is a package (holds ``__init__.py``), and
    the folder above its outermost package; ``("", folder)`` for a file outside packages."""
    folder = file.resolve().parent
    parts = [] if file.stem == "__init__" else [file.stem]
    while (folder / "__init__.py").is_file() and folder.name.isidentifier() and \
            not keyword.iskeyword(folder.name):
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts or parts == [file.stem] or not all(p.isidentifier() for p in parts):
        return "", file.resolve().parent
    return ".".join(parts), folder


def load_module(path: str) -> ModuleType:
    """Imports ``path`` as a module (named by :func:`module_name`), its folder on sys.path.

    The folder goes just after the standard library's entries of sys.path: the file's siblings
    import as they do when it runs as a script, but none of them (nor the file) shadows a
    standard-library module.

    Raises UsageError when the file is missing or fails to import, AdgenError when an
    ``@adgen.differentiable`` function in it does not compile.
    """
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: no such file")
    if file.suffix != ".py":
        raise UsageError(f"{path}: not a Python file (expected FILE.py)")
    dotted, root = package_path(file)
    folder = str(root if dotted else file.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(_stdlib_end(), folder)
    try:
        if dotted:
            # a module of a package (from .ops import laplacian): imported by its dotted
            # name, its package first, as `python -m pkg.mod` would
            module = importlib.import_module(dotted)
        else:
            name = module_name(file)
            spec = importlib.util.spec_from_file_location(name, file)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            # Registered before it runs, as `import` does: inspect, pickle and dataclasses
            # look it up.
            sys.modules[name] = module
            spec.loader.exec_module(module)
    except AdgenError:
        raise
    except SyntaxError as exc:  # shown like adgen's own errors: location, line, caret
        col = max((exc.offset or 1) - 1, 0)
        text = f"{exc.filename}:{exc.lineno}:{col}: error: SyntaxError: {exc.msg}"
        if exc.text:
            line = exc.text.rstrip("\n")
            indent = len(line) - len(line.lstrip())
            text += f"\n    {line.lstrip()}\n    {' ' * max(col - indent, 0)}^"
        raise UsageError(text, located=True) from exc
    except (Exception, SystemExit) as exc:
        tb = exc.__traceback__  # from the user's file down: importlib's frames are noise
        while tb and os.path.abspath(tb.tb_frame.f_code.co_filename) != os.path.abspath(file):
            tb = tb.tb_next
        lines = traceback.format_exception(type(exc), exc, tb or exc.__traceback__)
        raise UsageError(f"importing {path} failed:\n{''.join(lines).rstrip()}") from exc
    return module


def select(module: ModuleType, names: list[str] | None, path: str) -> list[tuple[str, Any]]:
    """The functions named, or every ``@adgen.differentiable`` one (else UsageError)."""
    own = {n: v for n, v in vars(module).items() if inspect.isroutine(v) and
           getattr(v, "__module__", None) == module.__name__}  # defined here, not imported
    listing = f"(functions: {', '.join(own) or 'none'})"
    if not names:
        found: dict[int, tuple[str, Any]] = {}  # by id: an alias is the same function
        for name, obj in own.items():
            if getattr(obj, "__adgen_differentiable__", False):
                found.setdefault(id(obj), (name, obj))
        for cname, cls in vars(module).items():
            # decorated methods of the file's classes, as Class.method (skipped before)
            if isinstance(cls, type) and getattr(cls, "__module__", None) == module.__name__:
                for mname, member in vars(cls).items():
                    member = getattr(member, "__func__", member)  # static/classmethods
                    if getattr(member, "__adgen_differentiable__", False):
                        found.setdefault(id(member), (f"{cname}.{mname}", member))
        if not found:
            raise UsageError(f"no @adgen.differentiable functions in {path}; mark some, or name "
                             f"one with -f NAME {listing}")
        return list(found.values())
    chosen = []
    for name in names:
        obj: Any = module
        for part in name.split("."):  # Class.method works too
            obj = getattr(obj, part, None)
        if obj is None:
            close = difflib.get_close_matches(name, list(own), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" {listing}"
            raise UsageError(f"{path} has no function named {name!r}{hint}")
        if not (inspect.isroutine(obj) or hasattr(obj, "__adgen_primal__")):
            raise UsageError(f"{name!r} in {path} is not a function (type {type(obj).__name__})")
        chosen.append((name, obj))
    return chosen


def check_argnums(name: str, fn: Callable[..., Any], argnums: tuple[int, ...]) -> None:
    """Raises UsageError when ``argnums`` does not fit ``fn``'s positional parameters."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return  # no signature to check against
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return  # any position may exist
    positional = [p.name for p in params if p.kind <= p.POSITIONAL_OR_KEYWORD]
    for i in argnums:
        if not -len(positional) <= i < len(positional):
            raise UsageError(f"--argnums {i} is out of range for {name}({', '.join(positional)}),"
                             f" which has {len(positional)} positional parameter(s)")


def merge_modules(sources: list[str]) -> str:
    """One module from several standalone ones: shared imports and helpers appear once.

    Raises UsageError when two modules define one name differently.
    """
    if len(sources) == 1:
        return sources[0]
    docs: list[str] = []
    imports: list[str] = []  # hoisted to the top, __future__ first
    body: list[str] = []  # each statement with the comments above it
    seen: set[str] = set()
    names: dict[str, str] = {}  # name -> ast.dump of the statement that defines it
    for src in sources:
        tree = ast.parse(src)
        lines = src.splitlines(keepends=True)
        start = 0
        for i, node in enumerate(tree.body):
            chunk = "".join(lines[start:node.end_lineno]).strip("\n")
            start = node.end_lineno or start
            if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                if node.value.value not in docs:  # the module docstring
                    docs.append(node.value.value)
                continue
            key = ast.dump(node)
            if key in seen:
                continue
            seen.add(key)
            for name in _defined_names(node):
                if names.setdefault(name, key) != key:
                    raise UsageError(f"the functions need different definitions of {name!r}; "
                                     "write them to separate modules")
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                imports.insert(0, chunk)
            else:
                (imports if isinstance(node, (ast.Import, ast.ImportFrom)) else body).append(chunk)
    doc = "\n\n".join(str(d).strip() for d in docs).replace('"""', r'\"\"\"')
    head = f'"""{doc}\n"""\n\n' if docs else ""
    return head + "\n".join(imports) + "\n\n\n" + "\n\n\n".join(body) + "\n"


def _defined_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
            isinstance(n.ctx, ast.Store)]


def _example(text: str | None, fn: Any) -> tuple[Any, ...]:
    """The example arguments of ``--args``, evaluated with ``np`` and the function's globals."""
    if text is None:
        return ()
    import numpy as np

    namespace = dict(getattr(fn, "__globals__", {}))
    namespace.setdefault("np", np)
    try:
        value = eval(text, namespace)  # noqa: S307 - the user's own expression, run locally
    except Exception as exc:  # noqa: BLE001 - reported as a usage error
        raise UsageError(f"--args {text!r} does not evaluate: {type(exc).__name__}: {exc}") \
            from exc
    example = value if isinstance(value, tuple) else (value,)
    try:
        inspect.signature(fn).bind(*example)
    except TypeError as exc:
        raise UsageError(f"--args does not fit {fn.__name__}: {exc}") from exc
    return example


# What a standalone module has in place of ``from MODULE import *`` when the user's module
# has a private name (module_name): it loads the file, found relative to the module itself.
_LOAD_BY_PATH = """

def _load_user_module():
    \"\"\"The user's module, {file}, loaded from its file: its name, {stem!r}, is another
    module's (adgen imported it as {name!r}).\"\"\"
    import importlib.util
    import os
    import sys

    if {name!r} not in sys.modules:
        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location({name!r}, os.path.join(here, {relative!r}))
        sys.modules[{name!r}] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[{name!r}])
    module = sys.modules[{name!r}]
    names = getattr(module, "__all__", [k for k in vars(module) if not k.startswith("_")])
    return {{k: getattr(module, k) for k in names}}


globals().update(_load_user_module())  # as `from MODULE import *` would
"""


def _import_by_path(text: str, fn: Any, output: str) -> str:
    """``text`` (a standalone module) with the import of a privately named user module (see
    :func:`module_name`) replaced by code that loads it from its file: a module named
    ``types`` would import the standard library's ``types``."""
    module = inspect.getmodule(getattr(fn, "__adgen_primal__", fn))
    name = getattr(module, "__name__", "")
    if not name.startswith(PRIVATE_PREFIX):
        return text
    file = Path(module.__file__)  # type: ignore[union-attr, arg-type]
    try:
        relative = os.path.relpath(file.resolve(), Path(output).resolve().parent)
    except ValueError:  # another drive (Windows)
        relative = str(file.resolve())
    loader = _LOAD_BY_PATH.format(file=file.name, stem=file.stem, name=name,
                                  relative=relative.replace(os.sep, "/"))
    text, count = re.subn(rf"^from {re.escape(name)} import \*.*$", lambda _: loader, text,
                          count=1, flags=re.MULTILINE)
    # (the import of private names, standalone_check.private_imports, finds the module the
    # loader put in sys.modules)
    if count != 1 or re.search(rf"^(from|import) {re.escape(name)}\b(?!.*# names import \* "
                               "leaves out$)", text, re.MULTILINE):
        raise UsageError(f"{file.name} is named like another module ({file.stem!r}), and the "
                         "standalone module cannot import it by that name; rename the file")
    return text


def _refuse_own_input(args: argparse.Namespace) -> None:
    """``-o`` must not overwrite the file it reads (nor the same file under another path)."""
    if not args.output:
        return
    out, src = Path(args.output), Path(args.file)
    same = out.resolve() == src.resolve() or (
        out.exists() and src.exists() and os.path.samefile(out, src))
    if same:
        raise UsageError(f"-o {args.output} is the input file {args.file}: adgen will not "
                         "overwrite the code it reads; write the standalone module to another "
                         "file, e.g. -o " + src.with_name(src.stem + "_adjoint.py").name)


def run(args: argparse.Namespace, targets: list[tuple[str, Any]]) -> int:
    """Prints (or writes) what the options ask for; returns the exit status."""
    status = OK
    modules = []
    for k, (name, fn) in enumerate(targets):
        mutation = args.mutation or getattr(fn, "__adgen_mutation__", "save")
        try:
            if args.output:
                modules.append(_import_by_path(adgen.standalone_source(fn, mutation=mutation),
                                               fn, args.output))
                continue
            example = _example(args.example, fn)
            if args.explain:
                text = str(adgen.explain(fn, *example, mutation=mutation, file=None))
            elif args.stage:
                from adgen.transforms.pipeline import stage_source

                text = stage_source(getattr(fn, "__adgen_primal__", fn), args.stage,
                                    mutation=mutation)
            elif args.mode == "forward":
                text = adgen.source(fn, mode="forward")
            else:
                text = adgen.source(fn, *example, mutation=mutation,
                                    single_use=False if args.reusable else None)
        except AdgenError as exc:
            print(exc, file=sys.stderr)
            status = COMPILE_ERROR
            continue
        if len(targets) > 1:  # a comment keeps the output valid Python
            text = "\n" * (k > 0) + f"# ---- {name} (mutation={mutation!r}) ----\n{text}"
        sys.stdout.write(highlight(text.rstrip("\n") + "\n", sys.stdout))
    if args.output and status == OK:
        try:
            Path(args.output).write_text(merge_modules(modules))
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror}") from exc
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status (see the module docstring)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, and argparse's usage errors
        return exc.code if isinstance(exc.code, int) else OK
    try:
        _refuse_own_input(args)
        module = load_module(args.file)
        targets = select(module, args.functions, args.file)
        for name, fn in targets if args.argnums is not None else ():
            check_argnums(name, fn, args.argnums)
        if args.stage is not None:
            from adgen.transforms.pipeline import PASS_NAMES

            if args.stage not in PASS_NAMES:
                raise UsageError(f"--stage {args.stage!r} is not a compiler pass; the passes, "
                                 f"in order: {', '.join(PASS_NAMES)}")
        status = run(args, targets)
        sys.stdout.flush()
        return status
    except UsageError as exc:
        print(exc if exc.located else f"adgen: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except AdgenError as exc:  # raised while importing: an @adgen.differentiable that fails
        print(exc, file=sys.stderr)
        return COMPILE_ERROR
    except BrokenPipeError:  # `adgen model.py | head`: the reader left, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OK
