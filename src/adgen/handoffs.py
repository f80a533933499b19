"""Arrays a forward pass hands a callee inside a list, tuple, dict or object, under "strict".

A caller cannot tell whether a callee it hands ``[W, b]`` (or ``{"u": u}``, or an object)
writes an array in it in place (``for p, g in zip(params, grads): p -= lr * g``) or only
rebinds a slot (``st["u"] = st["u"].copy()``), which writes nothing. Under "save" the caller's
guard copies what the gradient reads of every array inside before the call; under "strict" it
copies nothing behind the user's back (design.md, section 2.3): it notes here which call
handed each watched buffer (:func:`note_handoff`), and the callee's own guards
(``reverse_captures.guard_parameter_writes``) check its writes. A write there that overwrites a
value a gradient reads raises :func:`handoff_error`, which names the three lines: the call
that handed the array, the callee's write, and the line whose gradient reads the value.

Plain top-level functions and a class using only numpy: ``-o`` modules copy their source
(transforms/standalone.py).
"""

from __future__ import annotations

from typing import Any


class Handoff:
    """A call that handed a watched buffer to a callee inside a container or object: where
    it stands in the user's code, and the generated frame that made it (while that frame
    runs the call, a write in a deeper frame is the callee's)."""

    __slots__ = ("file", "line", "col", "construct", "frame", "code")

    def __init__(self, file: str, line: int, col: int, construct: str, frame: Any) -> None:
        self.file = file
        self.line = line
        self.col = col
        self.construct = construct
        self.frame = id(frame)
        self.code = frame.f_code


def handing(handoff: Any, writer: Any) -> bool:
    """Whether ``handoff``'s frame is still running, above the frame ``writer`` that writes
    (a write in the caller's own frame, after the call returned, is not the callee's)."""
    if handoff is None:
        return False
    frame = writer.f_back if writer is not None else None
    while frame is not None:
        if id(frame) == handoff.frame and frame.f_code is handoff.code:
            return True
        frame = frame.f_back
    return False


def note_handoff(handed: dict[int, Any], roots: list[int], frame: Any, file: str, line: int,
                 col: int, construct: str) -> None:
    """Notes in ``handed`` (root id -> :class:`Handoff`) that the call at ``line`` hands the
    buffers ``roots`` to a callee. A call running that handed one first keeps it: the user's
    call in the outer function, not a helper's passing the list on, is where a copy goes."""
    note = None
    for key in roots:
        if not handing(handed.get(key), frame):
            if note is None:
                note = Handoff(file, line, col, construct, frame)
            handed[key] = note


def called_name(construct: str) -> str:
    """The callee a call statement names (``sgd_step`` in ``sgd_step([W, b], g, 0.1)``,
    ``self.step`` in ``self.step(u, 0.1)``)."""
    import ast

    try:
        node = ast.parse(construct.strip()).body[0]
    except (SyntaxError, IndexError):
        return "the function called there"
    value = getattr(node, "value", None)
    if isinstance(value, ast.Call):
        return ast.unparse(value.func)
    return "the function called there"


def code_of(line: str) -> str:
    """A source line without its indentation and comment."""
    import io
    import tokenize

    text = line.strip()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                return text[:tok.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):
        pass
    return text


def read_a_copy(read: str, what: str, handing_line: bool) -> str | None:
    """The line ``read`` (whose gradient reads ``what``) reading a copy of it instead:
    ``loss = np.sum(np.sin(W.copy()))``, or keeping a copy of its result when that is what
    the gradient reads (``u = np.exp(x).copy()``). On the handing call's own line
    (``relax({"u": u}, x * u)``) the array handed in a display stays as it is, else the
    callee would write a copy nobody reads. None: ``what`` is not spelled there as a value
    read (read inside a callee, or through another name)."""
    import ast

    text = code_of(read)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    if len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    left_alone: set[int] = set()
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) else []
    for t in targets:  # what is written, not read (params[0] in params[0][...] = v)
        left_alone |= {id(n) for n in ast.walk(t)}
    for node in ast.walk(stmt):
        if handing_line and isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            left_alone |= {id(v) for v in (node.values if isinstance(node, ast.Dict) else
                                           node.elts)}
    spots = []
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and \
                id(node) not in left_alone and ast.unparse(node) == what:
            spots.append((node.lineno, node.col_offset, node.end_col_offset))
            left_alone |= {id(n) for n in ast.walk(node)}
    if not spots and len(targets) == 1 and isinstance(stmt, ast.Assign) and \
            ast.unparse(targets[0]) == what and stmt.value.end_lineno == 1:
        # the result itself, which the gradient reads (u = np.exp(x)): a copy of it
        start, end = stmt.value.col_offset, stmt.value.end_col_offset
        value = text[start:end]
        if not isinstance(stmt.value, (ast.Call, ast.Name, ast.Attribute, ast.Subscript)):
            value = f"({value})"
        return text[:start] + value + ".copy()" + text[end:]
    if not spots or any(line != 1 for line, _, _ in spots):
        return None
    for _, start, end in sorted(spots, reverse=True):
        text = text[:start] + text[start:end] + ".copy()" + text[end:]
    return text


def handoff_error(handoff: Any, hits: list[Any], file: str, line: int, col: int,
                  construct: str) -> Exception:
    """The MutationError of a callee's write at ``file``:``line`` (``construct``) that
    overwrites the captures ``hits`` of an array ``handoff``'s call handed it."""
    from adgen.errors import Location, MutationError, users_line
    from adgen.guards import source_line

    call_file, call_line = users_line(handoff.file, handoff.line)
    write_file, write_line = users_line(file, line)

    def at(f: str, n: int) -> str:  # a line of the call's file by its number
        return f"line {n}" if f == call_file else f"{f}:{n}"

    reads: dict[tuple[str, int], str] = {}  # each line whose gradient reads it, first first
    for cap in hits:
        reads.setdefault(users_line(cap.file, cap.line), cap.what)
    (read_file, read_line), what = next(iter(reads.items()))
    # the array as the call names it (M.lap for step(M, u, 0.1)), and as the write does
    # (m.lap in laplace(u, out=m.lap))
    handed = next((c.what for c in hits if _spelled_in(c.what, handoff.construct)), what)
    written = next((c.what for c in hits if _spelled_in(c.what, construct)), handed)
    callee = called_name(handoff.construct)
    write_text = code_of(source_line(write_file, write_line)) or construct
    also = "".join(f"; the gradient of {at(f, n)} ({code_of(source_line(f, n))}) reads it too"
                   for f, n in list(reads)[1:])
    message = (f"{handoff.construct} hands {handed} to {callee}, which overwrites it in place "
               f"at {at(write_file, write_line)} ({write_text}); the gradient of "
               f"{at(read_file, read_line)} ({code_of(source_line(read_file, read_line))}) "
               f"reads {handed} as it was before the call{also}")
    save = 'use mutation="save" (adgen keeps a copy)'
    if "." in written and "[" not in written:
        # an array an object holds (self.lap written by laplace(u, out=self.lap)): a new
        # array in the attribute keeps what the object holds, and the old one as it was
        hint = (f"{save}, or have {callee} give {written} a new array at "
                f"{at(write_file, write_line)} instead of writing the one it holds in place "
                f"({written} = ..., not {written}[...] = ..., {written} += ... nor "
                f"out={written})")
    else:
        # each line whose gradient reads the array reads a copy of it instead: the program
        # computes what it did, and the callee writes an array no gradient reads
        fixes = []
        for (f, n), name in reads.items():
            rewritten = read_a_copy(source_line(f, n), name, (f, n) == (call_file, call_line))
            fixes.append(f"{at(f, n)}: {rewritten}" if rewritten is not None else
                         f"{at(f, n)}: {name}.copy() where its gradient reads {name}")
        hint = (f"{save}, or let the gradient read a copy of {handed}, so that {callee} writes "
                f"an array no gradient reads: " + "; ".join(fixes))
    err = MutationError(
        message, Location(call_file, call_line, handoff.col, source_line(call_file, call_line)),
        hint=hint,
        captured_at=Location(read_file, read_line, 0, source_line(read_file, read_line)))
    err.__adgen_located__ = True  # at the user's call already (forward_errors)
    inner = getattr(err, "inner", None)
    if isinstance(inner, list):  # adgen's own error (not a -o module's): the write too
        inner.insert(0, Location(write_file, write_line, col, source_line(write_file,
                                                                          write_line)))
        err.args = (err.format(),)
    return err


def _spelled_in(what: str, construct: str) -> bool:
    """Whether the name ``what`` starts with (``M`` of ``M.lap``) stands in ``construct``."""
    import re

    head = re.match(r"[A-Za-z_]\w*", what)
    return head is not None and re.search(rf"(?<![\w.]){head.group(0)}\b", construct) is not None
