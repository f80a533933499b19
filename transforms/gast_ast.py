"""``to_gast`` and ``to_ast``: gast's conversions between Python's ``ast`` and gast trees
(``gast.ast_to_gast``, ``gast.gast_to_ast``), node for node the same trees, about twice as
fast; ``parse``: ``gast.parse`` through ``to_gast``.

Every build converts: the user's source and the rule templates it instantiates are parsed
(ast to gast), and the generated forward and pullback are printed (gast to ast, then
``ast.unparse``). gast's converters are ``ast.NodeTransformer``s that dispatch through a
method name per node and build each node from a dict of its fields; the conversions were a
tenth of a long function's build. These dispatch through a table by class and copy the
fields directly, with gast's special cases (a ``Name`` drops or gains ``annotation`` and
``type_comment``, a parameter is a ``Name`` in gast and an ``arg`` in ast, an except
handler's name is a ``Name`` in gast, definitions gain ``type_params``) written out as gast
writes them for Python 3.10 and 3.11. On other Python versions, or a gast whose nodes lack
``type_params``, they are gast's own functions.

Guarantees: ``to_gast(t)`` and ``gast.ast_to_gast(t)`` hold the same fields and locations,
and so do ``to_ast(g)`` and ``gast.gast_to_ast(g)`` (tests/transforms/test_gast_ast.py
compares them on the bench's functions, the generated code and every construct the grammar
has).
"""

from __future__ import annotations

import ast
import sys
from typing import Any

import gast

__all__ = ["parse", "to_ast", "to_gast"]

_copy_location = ast.copy_location  # gast.copy_location (for definitions) copies None too
_MISSING = object()
_AST = ast.AST


def _converter(target_module: Any, special: dict[type, Any],
               shared_leaves: bool = False) -> tuple[Any, Any, Any]:
    """The conversion of a tree into ``target_module``'s node classes: the ``special`` cases
    by source class, gast's ``Translator.generic_visit`` for the others. Returns the
    conversion of a node, the generic conversion of one node (its children converted with
    the special cases) and the conversion of a field's value (a node, a list, a leaf).
    ``shared_leaves``: a node without fields or attributes (``Load``, ``Add``) converts to
    one instance of its class, as ``ast.parse`` shares them (for trees that are printed or
    compiled, never changed)."""
    targets: dict[type, Any] = {}
    leaves: dict[type, Any] = {}

    def convert(node: Any) -> Any:
        how = special.get(node.__class__)
        if how is not None:
            return how(node)
        return generic(node)

    def generic(node: Any) -> Any:
        cls = node.__class__
        if shared_leaves:
            leaf = leaves.get(cls)
            if leaf is not None:
                return leaf
        target = targets.get(cls, _MISSING)
        if target is _MISSING:
            target = targets[cls] = getattr(target_module, cls.__name__, None)
            if shared_leaves and target is not None and not cls._fields and \
                    not cls._attributes:
                leaves[cls] = target()
        if target is None:  # a node the other tree has no class for: dropped, as gast does
            return None
        # what target(**fields) and a setattr per location do, without checking the keywords
        # (half the time), into the new node's dict: the fields, then the locations, each
        # read from the node's dict (getattr where it has none: a class's default)
        new = target.__new__(target)
        nd = new.__dict__
        d = node.__dict__
        for field in node._fields:
            v = d.get(field, _MISSING)
            if v is _MISSING:
                v = getattr(node, field, _MISSING)
                if v is _MISSING:
                    continue
            if isinstance(v, _AST):
                v = convert(v)
            elif isinstance(v, list):
                v = [convert(x) if isinstance(x, _AST) else value(x) for x in v]
            nd[field] = v
        for attr in node._attributes:
            v = d.get(attr, _MISSING)
            if v is _MISSING:
                v = getattr(node, attr, _MISSING)
                if v is _MISSING:
                    continue
            nd[attr] = v
        return new

    def value(v: Any) -> Any:
        if isinstance(v, _AST):
            return convert(v)
        if isinstance(v, list):
            return [value(x) for x in v]
        return v

    return convert, generic, value


def _located_name(new: Any, old: Any) -> Any:
    """``ast.copy_location(new, old)`` for two names (the commonest node; both classes have
    the four position attributes): a start held as None is not copied, an end is."""
    v = getattr(old, "lineno", None)
    if v is not None:
        new.lineno = v
    v = getattr(old, "col_offset", None)
    if v is not None:
        new.col_offset = v
    if hasattr(old, "end_lineno"):
        new.end_lineno = old.end_lineno
    if hasattr(old, "end_col_offset"):
        new.end_col_offset = old.end_col_offset
    return new


# --- ast -> gast (gast.ast3.Ast3ToGAst for Python 3.10 and 3.11) -----------------------------

def _gast_name(node: ast.Name) -> gast.Name:
    return _located_name(gast.Name(node.id, _to_gast_value(node.ctx), None, None), node)


def _gast_arg(node: ast.arg) -> gast.Name:
    return _copy_location(gast.Name(node.arg, gast.Param(), _to_gast_value(node.annotation),
                                    _to_gast_value(node.type_comment)), node)


def _gast_handler(node: ast.ExceptHandler) -> gast.ExceptHandler:
    if not node.name:
        return _generic_gast(node)
    return _copy_location(gast.ExceptHandler(
        _to_gast_value(node.type), gast.Name(node.name, gast.Store(), None, None),
        _to_gast_value(node.body)), node)


def _gast_def(cls: Any) -> Any:
    def convert(node: Any) -> Any:
        v = _to_gast_value
        return gast.copy_location(cls(v(node.name), v(node.args), v(node.body),
                                      v(node.decorator_list), v(node.returns),
                                      v(node.type_comment), []), node)

    return convert


def _gast_class(node: ast.ClassDef) -> gast.ClassDef:
    v = _to_gast_value
    return gast.copy_location(gast.ClassDef(v(node.name), v(node.bases), v(node.keywords),
                                            v(node.body), v(node.decorator_list), []), node)


_TO_GAST_SPECIAL: dict[type, Any] = {
    ast.Name: _gast_name, ast.arg: _gast_arg, ast.ExceptHandler: _gast_handler,
    ast.FunctionDef: _gast_def(gast.FunctionDef),
    ast.AsyncFunctionDef: _gast_def(gast.AsyncFunctionDef), ast.ClassDef: _gast_class}
_fast_to_gast, _generic_gast, _to_gast_value = _converter(gast, _TO_GAST_SPECIAL)


# --- gast -> ast (gast.ast3.GAstToAst3 for Python 3.10 and 3.11) -----------------------------

_AST_NAME = ast.Name
_CONTEXTS: dict[type, Any] = {}  # gast's context class -> ast's shared instance of it


def _ast_name(node: gast.Name) -> ast.Name:
    # ast.Name(id, ctx) with _located_name's locations, written into the new node's dict
    # (the commonest node, a third of those printed: its constructor, the calls converting
    # its fields and four setattrs took twice as long)
    ident = node.id
    if ident.__class__ is not str:
        ident = _to_ast_value(ident)
    ctx = node.ctx
    leaf = _CONTEXTS.get(ctx.__class__)
    if leaf is None:
        leaf = _to_ast_value(ctx)
        if isinstance(ctx, gast.expr_context):
            _CONTEXTS[ctx.__class__] = leaf
    d = node.__dict__
    new = _AST_NAME.__new__(_AST_NAME)
    nd = new.__dict__
    nd["id"] = ident
    nd["ctx"] = leaf
    v = d.get("lineno")  # (a start held as None is not copied, an end is: _located_name)
    if v is not None:
        nd["lineno"] = v
    v = d.get("col_offset")
    if v is not None:
        nd["col_offset"] = v
    nd["end_lineno"] = getattr(node, "end_lineno", None)
    nd["end_col_offset"] = getattr(node, "end_col_offset", None)
    return new


def _ast_arg(node: gast.Name | None) -> ast.arg | None:
    if node is None:
        return None
    return _copy_location(ast.arg(_to_ast_value(node.id), _to_ast_value(node.annotation),
                                  _to_ast_value(node.type_comment)), node)


def _ast_handler(node: gast.ExceptHandler) -> ast.ExceptHandler:
    if not node.name:
        return _generic_ast(node)
    return _copy_location(ast.ExceptHandler(_to_ast_value(node.type), node.name.id,
                                            _to_ast_value(node.body)), node)


def _ast_def(cls: Any) -> Any:
    def convert(node: Any) -> Any:
        v = _to_ast_value
        return _copy_location(cls(v(node.name), v(node.args), v(node.body),
                                  v(node.decorator_list), v(node.returns),
                                  v(node.type_comment)), node)

    return convert


def _ast_class(node: gast.ClassDef) -> ast.ClassDef:
    v = _to_ast_value
    return _copy_location(ast.ClassDef(v(node.name), v(node.bases), v(node.keywords),
                                       v(node.body), v(node.decorator_list)), node)


def _ast_assign(node: gast.Assign) -> ast.Assign:
    return _copy_location(ast.Assign(_to_ast_value(node.targets), _to_ast_value(node.value)),
                          node)


def _ast_arguments(node: gast.arguments) -> ast.arguments:
    return ast.arguments([_ast_arg(a) for a in node.posonlyargs],
                         [_ast_arg(a) for a in node.args], _ast_arg(node.vararg),
                         [_ast_arg(a) for a in node.kwonlyargs],
                         _to_ast_value(node.kw_defaults), _ast_arg(node.kwarg),
                         _to_ast_value(node.defaults))


_TO_AST_SPECIAL: dict[type, Any] = {
    gast.Name: _ast_name, gast.ExceptHandler: _ast_handler,
    gast.FunctionDef: _ast_def(ast.FunctionDef),
    gast.AsyncFunctionDef: _ast_def(ast.AsyncFunctionDef), gast.ClassDef: _ast_class,
    gast.Assign: _ast_assign, gast.arguments: _ast_arguments}
_fast_to_ast, _generic_ast, _to_ast_value = _converter(ast, _TO_AST_SPECIAL, shared_leaves=True)

# gast writes other special cases for other Python versions (3.12's type parameters, 3.8's
# Index): there, gast's own conversions
_FAST = sys.version_info[:2] in ((3, 10), (3, 11)) and \
    "type_params" in gast.FunctionDef._fields

to_gast = _fast_to_gast if _FAST else gast.ast_to_gast
to_ast = _fast_to_ast if _FAST else gast.gast_to_ast


def parse(source: str, *args: Any, **kwargs: Any) -> Any:
    """``gast.parse``: ``ast.parse`` then ``to_gast``."""
    return to_gast(ast.parse(source, *args, **kwargs))
