"""Every Python snippet of the guide's chapters kept in `docs/` runs as printed.

A snippet continues the chapter's prose, so it uses names the prose introduces (a graph
`A`, matrices `a` and `b`, a source vertex): each chapter gets a namespace that defines
them, and the snippet must run in it without error and leave what the chapter says it
computes. The Python chapter itself is `docs/python_tutorial.py`, which CI runs as a
script.
"""

import os
import pathlib
import re

import numpy as np
import pytest
import scipy.sparse as sp

import sparsec

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"


def snippets(chapter: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / chapter).read_text(), flags=re.S)


def ring_with_chords(n: int) -> sp.csr_array:
    """A connected undirected graph with unit weights: a ring plus a chord per 5 vertices."""
    rows = list(range(n)) + list(range(0, n, 5))
    cols = [(i + 1) % n for i in range(n)] + [(i + n // 2) % n for i in range(0, n, 5)]
    a = sp.coo_array((np.ones(len(rows)), (rows, cols)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float64)
    a.sort_indices()
    return sp.csr_array(a)


def semirings_namespace() -> dict:
    n = 40
    graph = ring_with_chords(n)
    rng = np.random.default_rng(3)
    frontier = sparsec.Tensor.from_coo((n,), np.array([[0, 7]]), np.ones(2), format="s")
    visited = np.zeros(n)
    visited[[0, 7]] = 1
    return {
        "np": np,
        "sparsec": sparsec,
        "A": graph,
        "n": n,
        "source": 0,
        "a": sp.csr_array(rng.normal(size=(20, 30)) * (rng.random((20, 30)) < 0.2)),
        "b": sp.csr_array(rng.normal(size=(30, 10)) * (rng.random((30, 10)) < 0.2)),
        "frontier": frontier,
        "visited": visited,
    }


def affine_namespace() -> dict:
    rng = np.random.default_rng(5)
    a = np.zeros((12, 10))
    a[:4, :3] = rng.uniform(0.5, 1.5, (4, 3))
    b = np.zeros((10, 8))
    b[:3, 2:6] = rng.uniform(0.5, 1.5, (3, 4))
    return {"A": a, "B": b, "C": rng.uniform(size=(12, 8))}


NAMESPACES = {"semirings.md": semirings_namespace, "affine.md": affine_namespace}


@pytest.mark.parametrize(
    "chapter,index",
    [(chapter, k) for chapter in NAMESPACES for k in range(len(snippets(chapter)))],
)
def test_the_docs_python_snippets_run(chapter, index, monkeypatch):
    monkeypatch.chdir(ROOT)  # snippets name files relative to the repository
    namespace = NAMESPACES[chapter]()
    exec(compile(snippets(chapter)[index], f"docs/{chapter} snippet {index}", "exec"),
         namespace)
    if chapter == "semirings.md" and "d" in namespace and "e" in namespace:
        # Bellman-Ford's loop ended at the distances scipy computes.
        from scipy.sparse.csgraph import shortest_path
        expected = shortest_path(namespace["A"], indices=namespace["source"])
        np.testing.assert_array_equal(namespace["d"], expected)
    if chapter == "affine.md":
        ns = affine_namespace()
        expected = 0.5 * ns["C"] + 2.0 * ns["A"] @ ns["B"]
        np.testing.assert_allclose(namespace["out"]["arrays"]["C"], expected, rtol=1e-12)


def test_every_chapter_with_python_snippets_is_covered():
    with_snippets = {path.name for path in DOCS.glob("*.md") if snippets(path.name)}
    assert with_snippets == set(NAMESPACES), with_snippets
    assert os.path.exists(DOCS / "python_tutorial.py")
