"""The adgen exception hierarchy.

Every error about user code carries the file, line and column, the source line with a caret,
names the construct, and says what to do instead. Errors inside the compiler name the pass.
"""

from __future__ import annotations

from adgen.records import FrozenRecord


class Location(FrozenRecord):
    """Where in the user's source a construct stands (1-based line, 0-based column)."""

    _fields = ("file", "line", "col", "source_line")
    file: str
    line: int
    col: int
    source_line: str

    def __init__(self, file: str, line: int, col: int = 0, source_line: str = "") -> None:
        self.__dict__.update(file=file, line=line, col=col, source_line=source_line)

    def __str__(self) -> str:
        from adgen.cells import where  # a notebook cell is named as IPython names it

        return where(self.file, self.line, self.col)


class AdgenError(Exception):
    """Base class of every error adgen raises.

    Attributes:
        message: what went wrong, without the location.
        location: where in the user's code, when known.
        hint: what to do instead, when there is something to do.
    """

    kind = "error"

    def __init__(self, message: str, location: Location | None = None, hint: str = "") -> None:
        self.message = message
        self.inner: list[Location] = []
        self.location = location
        self.hint = hint
        super().__init__(self.format())

    @property
    def location(self) -> Location | None:
        return self.__dict__.get("_location")

    @location.setter
    def location(self, where: Location | None) -> None:
        # a line of generated code (an hvp's jvp code, compiled again) is given as the user's
        # line it came from, where its "# line N:" comment says
        if where is not None and _generated(where):
            where = _user_line(where) or where
        old = self.__dict__.get("_location")
        if old is not None and where is not None and old.file != where.file:
            if _generated(where) and not _generated(old):
                return  # the user's line says more than a generated wrapper's
            if not _generated(old):
                # an error about a callee in another file is located again at the call in
                # the user's code: the callee's line is kept, so the message still says
                # where the construct is (inside scipy.special.logsumexp)
                self.inner.insert(0, old)
        self._location = where

    def at_call(self, where: Location, callee: object = None) -> None:
        """Locates an error met while compiling ``callee`` at the user's call ``where`` (the
        callee's own line stays in the message). When ``callee`` belongs to an installed
        package (scipy, sklearn, ...) and the error is inside it, the message says so first:
        the user called a library function adgen has no rule for, and a hint about that
        library's wrappers or internals is not something the user can act on."""
        inside = self.location is not None and self.location.file != where.file
        self.location = where
        # named once, at the user's own call (not at the library's calls of its internals)
        package = _installed_package(callee) if inside and not installed_file(where.file) else None
        if package is not None and not getattr(self, "_library_named", False):
            self._library_named = True
            name = _public_name(callee)
            self.message = (f"{name} (from the installed package {package}) has no derivative "
                            f"rule, and adgen could not differentiate its Python source: "
                            f"{self.message}")
            self.hint = (f"register its derivative with @adgen.rrule({name}) "
                         "(docs/custom-rules.md), or compute it with NumPy functions adgen "
                         "covers (docs/coverage.md)")
            if name.startswith("scipy.sparse."):
                # a sparse matrix's own method: its products are covered through @ and .dot
                self.hint = ("adgen differentiates a scipy.sparse matrix R as a constant "
                             "operand of a product: R @ v, v @ R, R.dot(v), R.T.dot(v); for "
                             "an elementwise product R.multiply(v), write R.toarray() * v "
                             "(dense), or " + self.hint)
            elif name.startswith("scipy.stats."):
                # a distribution other than norm, a frozen one, or multivariate_normal
                self.hint = ("adgen differentiates scipy.stats.norm's pdf, logpdf, cdf, "
                             "logcdf, sf, logsf, ppf and isf called on norm itself, with loc "
                             "and scale as arguments: for a frozen norm(mu, s).logpdf(x) write "
                             "norm.logpdf(x, mu, s); for another distribution write its "
                             "log-density with NumPy and scipy.special (gammaln, xlogy, "
                             "betaln, log_ndtr), or " + self.hint)
        self.args = (self.format(),)

    def format(self) -> str:
        """The compiler-style diagnostic: ``file:line:col: error: message`` plus caret."""
        name = type(self).__name__
        if self.location is None:
            text = f"{name}: {self.message}"
        else:
            text = f"{self.location}: {self.kind}: {name}: {self.message}"
            if self.location.source_line:
                src = self.location.source_line.rstrip("\n")
                stripped = src.lstrip()
                indent = len(src) - len(stripped)
                caret_col = max(self.location.col - indent, 0)
                text += f"\n    {stripped}\n    {' ' * caret_col}^"
        for where in self.inner:
            text += f"\n  in the function called there, at {where}"
            if where.source_line:
                text += f":\n    {where.source_line.strip()}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


def _installed_package(fn: object) -> str | None:
    """The top-level package of ``fn``'s module when it is installed (site-packages or the
    standard library), not the user's own code; else None."""
    import sys

    module = sys.modules.get(str(getattr(fn, "__module__", "") or ""))
    file = getattr(module, "__file__", None)
    if not file or not installed_file(file):
        return None
    return module.__name__.split(".")[0]  # type: ignore[union-attr]


def _public_name(fn: object) -> str:
    """``fn`` as its package exports it (``scipy.linalg.expm``, not the module that defines
    it, ``scipy.linalg._matfuncs.expm``), when a parent module binds it; else its full name."""
    import sys

    module = str(getattr(fn, "__module__", "") or "")
    name = str(getattr(fn, "__name__", "") or "")
    parts = module.split(".")
    for k in range(1, len(parts) + 1):
        parent = ".".join(parts[:k])
        if name and getattr(sys.modules.get(parent), name, None) is fn:
            return f"{parent}.{name}"
    return f"{module}.{getattr(fn, '__qualname__', name)}"


def installed_file(file: str) -> bool:
    """Whether ``file`` is part of an installed package (site-packages) or the standard
    library, rather than the user's own code."""
    import os
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[k]) for k in ("purelib", "platlib", "stdlib")
             if k in paths}
    file = os.path.realpath(file)
    return any(file.startswith(r + os.sep) for r in roots)


def _generated(where: Location) -> bool:
    return where.file.startswith("<adgen ")


def _user_line(where: Location) -> Location | None:
    """The user's line a line of generated code came from: the ``# line N:`` comment above
    it, in the user's file the code was compiled for (None: not known)."""
    import linecache
    import re

    from adgen.transforms.emit import USER_FILES

    file = USER_FILES.get(where.file)
    if file is None:
        return None
    lines = linecache.getlines(where.file)
    for k in range(min(where.line, len(lines)) - 1, -1, -1):
        found = re.match(r"\s*# line (\d+):", lines[k])
        if found:
            n = int(found.group(1))
            text = linecache.getline(file, n)
            return Location(file, n, len(text) - len(text.lstrip()), text)
    return None


def users_line(file: str, line: int) -> tuple[str, int]:
    """``(file, line)`` as the user wrote it: for code adgen generated and compiles again
    (the jvp code hessian differentiates, ``<adgen f jvp>``), the user's file and the line of
    the ``# line N:`` comment above ``line``; else as given (a guard's message names them)."""
    where = _user_line(Location(file, line, 0, "")) if _generated(Location(file, line, 0, "")) \
        else None
    return (where.file, where.line) if where is not None else (file, line)


class UnsupportedError(AdgenError):
    """A construct adgen does not differentiate (generators, async, global writes, ...)."""


class MissingRuleError(AdgenError):
    """A call to a function with no readable source and no derivative rule."""


class NonDifferentiableError(AdgenError):
    """A differentiated argument or output that has no gradient (int, str, non-scalar grad)."""


class MutationError(AdgenError):
    """An in-place write overwrote a value that the backward pass needs (mutation="strict")."""

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        hint: str = "",
        captured_at: Location | None = None,
    ) -> None:
        self.captured_at = captured_at
        super().__init__(message, location, hint)


class RuleError(AdgenError):
    """A derivative rule is malformed, or returned cotangents of the wrong number or shape."""


class CompilerError(AdgenError):
    """A bug inside adgen: names the compiler pass where an invariant broke."""


class CotangentError(AdgenError, ValueError):
    """A cotangent given to a pullback does not fit the output: its structure, shape or
    dtype."""


class ArgnumsError(AdgenError, ValueError):
    """`argnums` does not fit the function's arguments."""
