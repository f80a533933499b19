"""Frozen records written out: what ``@dataclass(frozen=True)`` gives a class (value equality
over its fields, a hash, a repr, no assignment), for the classes ``import adgen`` defines.

``@dataclass`` compiles each method it generates from source when the class is defined (six
for a frozen class): about 0.8 ms a class on a slow machine, 14 ms of ``import adgen`` for the
17 it defined (session 25, issue 15's cold start). A subclass of :class:`FrozenRecord` binds
its fields in its own ``__init__`` (``self.__dict__.update(...)``: assignment is refused) and
names them in ``_fields``; the methods below serve every such class, compiled once.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any, ClassVar

__all__ = ["FrozenRecord", "dataclass_fields"]


class FrozenRecord:
    """Base of a frozen record.

    A subclass sets ``_fields``, the fields compared, hashed and shown, in order (as
    ``@dataclass(frozen=True)`` compares and shows its fields, less those declared
    ``compare=False, repr=False``, which it leaves out of ``_fields``).
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        d = self.__dict__
        return tuple(d[f] for f in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        d = self.__dict__
        shown = ", ".join(f"{f}={d[f]!r}" for f in self._fields)
        return f"{type(self).__qualname__}({shown})"


class dataclass_fields:  # noqa: N801 - a descriptor, read as the attribute it stands for
    """A frozen record's ``__dataclass_fields__``, made at its first read: the fields
    ``@dataclass(frozen=True)`` makes of the class's annotations and ``__init__`` defaults, so
    that ``dataclasses.replace``, ``fields``, ``asdict``, ``astuple`` and ``is_dataclass``
    work on the record (a public record users copied with ``dataclasses.replace``). The
    dataclass is made of a copy of the declaration, once per class, when one of those runs.

    ``replace`` builds the record again with ``type(obj)(**fields)``: the record's
    ``__init__`` takes every field by keyword."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.made: dict[str, Any] | None = None

    def __get__(self, obj: Any, owner: type) -> dict[str, Any]:
        if self.made is None:
            import dataclasses
            import inspect

            defaults = {n: p.default for n, p in
                        inspect.signature(owner.__init__).parameters.items()
                        if p.default is not inspect.Parameter.empty}
            declared = {n: owner.__annotations__[n] for n in owner._fields}
            spec = type(owner.__name__, (), {"__annotations__": declared,
                                             "__module__": owner.__module__,
                                             "__qualname__": owner.__qualname__, **defaults})
            self.made = dataclasses.dataclass(frozen=True)(spec).__dataclass_fields__
        return self.made
