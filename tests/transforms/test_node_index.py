"""node_index: ``nodes_of`` gives exactly what a walk gives, frozen or not; a frozen block that
changes its tree is caught; the pipeline's frozen blocks leave their trees alone on the
benchmark workloads and the snapshot subjects (the check that makes the index sound)."""

import inspect

import gast
import numpy as np
import pytest
from adgen.transforms import node_index, pipeline
from adgen.transforms.analyses.kinds import signature
from adgen.transforms.node_index import frozen, nodes_of
from adgen.transforms.walk import walk
from gradcheck import assert_grad_close, numerical_grads

import adgen
from adgen.errors import CompilerError
from bench.workloads import load
from transforms import snapshot_subjects as subjects

SOURCE = '''
def f(x, ys):
    t = x * 2.0
    for i in range(3):
        if i > 1:
            ys[i] = t[i] + (lambda z: z * i)(t[0])
        else:
            t = t + ys[i]
    return {"a": t, "b": [y for y in ys if y is not None]}
'''

TYPES = [(), (gast.Name,), (gast.Assign, gast.AugAssign), (gast.stmt,), (gast.expr,),
         (gast.For, gast.Call, gast.Constant)]


def _tree() -> gast.FunctionDef:
    return gast.parse(SOURCE).body[0]


def _expected(node: gast.AST, types: tuple[type, ...]) -> list[gast.AST]:
    return [n for n in walk(node) if not types or isinstance(n, types)]


@pytest.mark.parametrize("types", TYPES, ids=lambda t: ",".join(c.__name__ for c in t) or "all")
def test_same_nodes_in_the_same_order_frozen_or_not(types):
    tree = _tree()
    subtrees = [tree, tree.body[1], tree.body[1].body[0], tree.body[-1].value]
    plain = [nodes_of(s, *types) for s in subtrees]
    with frozen(tree):
        for _ in range(2):  # the second time from the index's lists
            inside = [nodes_of(s, *types) for s in subtrees]
            for s, got in zip(subtrees, inside):
                want = _expected(s, types)
                assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
    for s, got in zip(subtrees, plain):
        assert list(got) == _expected(s, types)


def test_a_tree_not_frozen_is_walked_again():
    tree = _tree()
    with frozen(tree):
        pass
    tree.body.append(gast.Pass())  # after the block: nodes_of sees the change
    assert any(isinstance(n, gast.Pass) for n in nodes_of(tree, gast.stmt))
    other = _tree()
    with frozen(tree):
        other.body.append(gast.Pass())  # another tree is not frozen
        assert isinstance(nodes_of(other, gast.Pass)[0], gast.Pass)


def test_a_frozen_block_that_changes_its_tree_is_caught(monkeypatch):
    monkeypatch.setenv("ADGEN_CHECK_FROZEN", "1")
    tree = _tree()
    with pytest.raises(CompilerError, match="the test block changed the tree of f"):
        with frozen(tree, "the test block"):
            tree.body.insert(0, gast.Pass())


def test_a_renamed_name_inside_a_frozen_block_is_caught(monkeypatch):
    """A memo (kinds.definitions) holds names: a changed field counts as a change too."""
    monkeypatch.setenv("ADGEN_CHECK_FROZEN", "1")
    tree = _tree()
    with pytest.raises(CompilerError, match="changed the tree of f"):
        with frozen(tree):
            next(n for n in nodes_of(tree, gast.Name) if n.id == "t").id = "u"


def test_a_memo_is_computed_once_per_frozen_block():
    tree = _tree()
    calls = []

    def compute():
        calls.append(1)
        return len(calls)

    assert node_index.memo(tree, "k", compute) == 1  # not frozen: each time
    assert node_index.memo(tree, "k", compute) == 2
    with frozen(tree):
        assert node_index.memo(tree, "k", compute) == 3
        assert node_index.memo(tree, "k", compute) == 3
        assert node_index.memo(tree, "other", compute) == 4
    with frozen(tree):  # a new block forgets
        assert node_index.memo(tree, "k", compute) == 5


def test_thaw_ends_the_block_early(monkeypatch):
    """After thaw (the reverse pass's forward emitter), the tree may change: nodes_of walks
    again, a memo is computed again, and leaving the block checks nothing more."""
    monkeypatch.setenv("ADGEN_CHECK_FROZEN", "1")
    tree = _tree()
    with frozen(tree, "outer"):
        with frozen(tree, "inner"):  # shares the outer block
            assert node_index.memo(tree, "k", lambda: 1) == 1
        assert node_index.memo(tree, "k", lambda: 2) == 1
        node_index.thaw(tree)
        tree.body.insert(0, gast.Pass())
        assert isinstance(nodes_of(tree, gast.stmt)[1], gast.Pass)
        assert node_index.memo(tree, "k", lambda: 3) == 3
    assert not node_index._FROZEN and not node_index._OWNER


def test_an_error_inside_leaves_nothing_frozen():
    tree = _tree()
    with pytest.raises(KeyError):
        with frozen(tree):
            raise KeyError("x")
    assert not node_index._FROZEN and not node_index._OWNER


def _subjects() -> list:
    return [f for name, f in vars(subjects).items()
            if inspect.isfunction(f) and f.__module__ == subjects.__name__ and
            not name.startswith("_")]


@pytest.mark.parametrize("mutation", ["save", "strict"])
def test_the_pipeline_leaves_frozen_trees_alone(monkeypatch, mutation):
    """Every build of the benchmark workloads and the snapshot subjects, with the check on:
    the analyses and the reverse pass's plan, captures and pullback emitter change no node
    of the trees they froze."""
    monkeypatch.setenv("ADGEN_CHECK_FROZEN", "1")
    built = 0
    for w in load():
        args = w.make_args(np.random.default_rng(0))
        pipeline.clear_cache()
        pipeline.compile_function(w.primal, mutation=mutation, wrt=w.argnums,
                                  sig=signature(args))
        built += 1
    for f in _subjects():
        pipeline.clear_cache()
        try:
            pipeline.compile_function(f, mutation=mutation)
        except adgen.AdgenError as err:
            assert not isinstance(err, CompilerError), err
            continue
        built += 1
    # every workload and subject (strict refuses fill_after_use at compile time)
    assert built >= 28 + (4 if mutation == "save" else 3)


def test_gradients_with_the_index_match_central_differences():
    """The index changes how facts are found, not what is computed: a loop workload's
    gradient (ADI, five loops) against central differences."""
    w = next(w for w in load(["polybench_stencils"]) if w.name == "pb-adi")
    args = w.make_args(np.random.default_rng(1))
    pipeline.clear_cache()
    got = adgen.grad(w.primal, argnums=w.argnums)(*[np.copy(a) for a in args])
    assert_grad_close(got, numerical_grads(w.primal, args, w.argnums))
