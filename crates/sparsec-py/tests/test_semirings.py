"""Graph algorithms written as statements over semirings (``... over (min, +)``), each
checked against ``scipy.sparse.csgraph`` or NetworkX on shared graphs and generated ones."""

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from scipy.sparse import csgraph

import sparsec
from conftest import shared_data


def shared_graph(name, rng):
    """A shared matrix as a directed graph with weights in [1, 10)."""
    a = sp.csr_array(scipy.io.mmread(shared_data(f"matrices/{name}")))
    a = sp.csr_array((a != 0).astype(np.float64))
    a.data = rng.uniform(1.0, 10.0, a.nnz)
    return a


def generated_graph(rng, n, degree):
    """A directed power-law-ish graph: out-degrees drawn from a Zipf law, capped."""
    out = np.minimum(rng.zipf(2.0, n) * degree // 2, n - 1)
    rows = np.repeat(np.arange(n), out)
    cols = rng.integers(0, n, rows.size)
    a = sp.csr_array((rng.uniform(1.0, 10.0, rows.size), (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    return a


def graphs(rng):
    return [
        ("karate", shared_graph("karate.mtx", rng)),
        ("ca-HepTh", shared_graph("ca-HepTh.mtx", rng)),
        ("generated", generated_graph(rng, 3000, 4)),
        ("one vertex", sp.csr_array((1, 1))),
    ]


def sssp(a, source):
    """Bellman-Ford: relax every edge into the distances until none changes."""
    d = np.full(a.shape[0], np.inf)
    d[source] = 0.0
    for _ in range(a.shape[0]):
        relaxed = sparsec.evaluate("e(j) = d(j) + d(i) * A(i,j) over (min, +)", d=d, A=a,
                                   formats={"A": "csc"})
        if np.array_equal(relaxed, d):
            return d
        d = relaxed
    return d


def test_shortest_paths_by_min_plus_products(rng):
    for name, a in graphs(rng):
        for source in {0, a.shape[0] // 2}:
            want = csgraph.shortest_path(a, method="BF", directed=True, indices=source)
            np.testing.assert_allclose(sssp(a, source), want, rtol=1e-12, err_msg=name)


def test_shortest_paths_with_a_user_defined_reduction(rng):
    """Bellman-Ford again, its `min` written by the user: the same distances."""
    relax = ("let smaller(a, b) = where(a < b, a, b) identity inf; "
             "e(j) = d(j) + d(i) * A(i,j) over (smaller, +)")
    a = graphs(rng)[0][1]
    d = np.full(a.shape[0], np.inf)
    d[0] = 0.0
    for _ in range(a.shape[0]):
        relaxed = sparsec.evaluate(relax, d=d, A=a, formats={"A": "csc"})
        if np.array_equal(relaxed, d):
            break
        d = relaxed
    want = csgraph.shortest_path(a, method="BF", directed=True, indices=0)
    np.testing.assert_allclose(d, want, rtol=1e-12)


def test_user_operators_element_wise_and_refused(rng):
    a = sp.random_array((30, 20), density=0.2, format="csr", rng=rng)
    a.data -= 0.5
    got = sparsec.evaluate("let relu(x) = max(x, 0); B(i,j) = relu(A(i,j))", A=a,
                           formats={"A": "csr", "B": "dense"})
    np.testing.assert_array_equal(got, np.maximum(a.toarray(), 0))
    with pytest.raises(sparsec.NotationError, match="not associative"):
        sparsec.evaluate("let g(a, b) = a + b + a * a * b * b identity 0; "
                         "y(i) = A(i,j) * x(j) over (g, *)", A=a, x=np.ones(20))


def bfs_levels(a, source):
    """Breadth-first search, a frontier at a time: the next frontier is the vertices the
    frontier reaches, masked by the complement of the visited ones, over (any, pair)."""
    n = a.shape[0]
    levels = np.full(n, -1.0)
    levels[source] = 0
    frontier = [source]
    level = 0
    while frontier:
        f = sparsec.Tensor.from_coo((n,), np.array([frontier]), np.ones(len(frontier)),
                                    format="s")
        visited = (levels >= 0).astype(np.float64)
        reached = sparsec.evaluate("g<!v>(j) = f(i) * A(i,j) over (any, pair)", f=f, A=a,
                                   v=visited, formats={"A": "csr"})
        level += 1
        frontier = list(np.flatnonzero(reached))
        levels[frontier] = level
    return levels


def test_breadth_first_levels_by_masked_any_pair_products(rng):
    for name, a in graphs(rng):
        source = int(np.argmax(np.diff(a.indptr))) if a.nnz else 0
        hops = csgraph.shortest_path(a, unweighted=True, directed=True, indices=source)
        want = np.where(np.isinf(hops), -1, hops)
        np.testing.assert_array_equal(bfs_levels(a, source), want, err_msg=name)


def test_connected_components_by_min_label_propagation(rng):
    for name, a in graphs(rng):
        sym = sp.csr_array(((a + a.T) != 0).astype(np.float64))
        labels = np.arange(a.shape[0], dtype=np.float64)
        while True:
            # Each vertex takes the least label among itself and its neighbours.
            spread = sparsec.evaluate("m(i) = l(i) + A(i,j) * l(j) over (min, second)",
                                      l=labels, A=sym, formats={"A": "csr"})
            if np.array_equal(spread, labels):
                break
            labels = spread
        count, want = csgraph.connected_components(sym, directed=False)
        assert len(np.unique(labels)) == count, name
        # The same partition: each component's vertices share one label, distinct ones.
        pairs = set(zip(want.tolist(), labels.tolist()))
        assert len(pairs) == count, name


def test_the_fill_of_a_min_plus_product_is_infinity_and_a_sparse_output_stores_none(rng):
    a = sp.csr_array(([2.0, 3.0], ([0, 2], [1, 1])), shape=(4, 3))
    x = np.array([1.0, 5.0, -1.0])
    y = sparsec.evaluate("y(i) = A(i,j) * x(j) over (min, +)", A=a, x=x)
    np.testing.assert_array_equal(y, [7.0, np.inf, 8.0, np.inf])
    # A sparse result keeps its fill value: a Tensor, since SciPy's missing entries are 0.
    c = sparsec.evaluate("C(i,j) = A(i,k) * B(k,j) over (max, *)", A=a, B=a.T.tocsr(),
                         formats={"A": "csr", "B": "csr", "C": "csr"})
    assert isinstance(c, sparsec.Tensor) and c.fill == -np.inf
    n = -np.inf
    np.testing.assert_array_equal(c.to_numpy(), [
        [4.0, n, 6.0, n],
        [n, n, n, n],
        [6.0, n, 9.0, n],
        [n, n, n, n],
    ])
    coords, values = c.to_coo()
    assert values.size == 4
    with pytest.raises(sparsec.InputError, match="missing entries are -inf"):
        c.to_scipy()
    # A fill value given with the input: the reduction's identity is what absence means.
    t = sparsec.Tensor.from_coo((4, 3), [[0, 2], [1, 1]], [2.0, 3.0], format="csr",
                                fill=np.inf)
    np.testing.assert_array_equal(
        sparsec.evaluate("y(i) = A(i,j) * x(j) over (min, +)", A=t, x=x), y)
    with pytest.raises(Exception, match="cannot have the fill value inf"):
        sparsec.evaluate("y(i) = A(i,j) * x(j) over (max, *)", A=t, x=x)
    with pytest.raises(Exception, match="has no meaning over the semiring"):
        sparsec.evaluate("y(i) = A(i,j) * x(j) - x(i) over (min, +)", A=a, x=x)


def test_pagerank_by_power_iteration_matches_networkx():
    a = sp.csr_array(scipy.io.mmread(shared_data("matrices/karate.mtx")))
    a = sp.csr_array(((a + a.T) != 0).astype(np.float64))
    n = a.shape[0]
    # Column j spreads vertex j's rank evenly over its neighbours.
    p = sp.csr_array(a @ sp.diags_array(1.0 / np.asarray(a.sum(axis=0)).ravel()))
    kernel = sparsec.compile("y(i) = P(i,j) * r(j)", formats={"P": "csr"})
    r = np.full(n, 1.0 / n)
    for _ in range(1000):
        nxt = 0.15 / n + 0.85 * kernel(P=p, r=r)
        if np.abs(nxt - r).sum() < 1e-14:
            break
        r = nxt
    want = nx.pagerank(nx.from_scipy_sparse_array(a), alpha=0.85, tol=1e-15, max_iter=1000)
    np.testing.assert_allclose(r, [want[v] for v in range(n)], rtol=1e-9)


@pytest.mark.parametrize("name,k", [("karate.mtx", 4), ("ca-HepTh.mtx", 6)])
def test_k_truss_by_masked_support_counts_matches_networkx(name, k):
    a = sp.csr_array(scipy.io.mmread(shared_data(f"matrices/{name}")))
    a = sp.csr_array(((a + a.T) != 0).astype(np.float64))
    a.setdiag(0)
    a.eliminate_zeros()
    support = sparsec.compile("S<pattern(A)>(i,j) = A(i,k) * A(k,j) over (+, pair)",
                              formats={"A": "csr", "S": "csr"})
    truss = a
    while True:
        # Each edge's support, the triangles through it; edges with too few go.
        s = support(A=truss)
        kept = sp.csr_array((s >= k - 2).astype(np.float64))
        kept.eliminate_zeros()
        if kept.nnz == truss.nnz:
            break
        truss = kept
    graph = nx.from_scipy_sparse_array(a)
    want = {tuple(sorted(e)) for e in nx.k_truss(graph, k).edges()}
    rows, cols = truss.nonzero()
    got = {(i, j) for i, j in zip(rows.tolist(), cols.tolist()) if i < j}
    assert got == want and len(want) > 0


def test_operators_traced_from_python_functions(rng):
    from sparsec import operators as ops

    a = sp.csr_array(sp.random_array((30, 20), density=0.2, format="csr", random_state=3))
    a.data = a.data * 2 - 1
    b = sp.csr_array(sp.random_array((20, 25), density=0.2, format="csr", random_state=4))

    @ops.operator(identity=0)
    def absmax(x, y):
        return ops.where(abs(x) > abs(y), x, ops.where(abs(y) > abs(x), y, ops.max(x, y)))

    assert absmax.definition.startswith("let absmax(x, y) = where(")
    traced = sparsec.evaluate("C(i,j) = A(i,k) * B(k,j) over (absmax, *)", A=a, B=b,
                              operators=[absmax])
    written = sparsec.evaluate(
        "let absmax(a, b) = where(abs(a) > abs(b), a, where(abs(b) > abs(a), b, max(a, b))) "
        "identity 0; C(i,j) = A(i,k) * B(k,j) over (absmax, *)", A=a, B=b)
    np.testing.assert_array_equal(traced, written)
    dense_a, dense_b = a.toarray(), b.toarray()
    want = np.zeros((30, 25))
    for i in range(30):
        for j in range(25):
            for k in range(20):
                if dense_a[i, k] != 0 and dense_b[k, j] != 0:
                    p = dense_a[i, k] * dense_b[k, j]
                    if abs(p) > abs(want[i, j]) or (abs(p) == abs(want[i, j]) and p > want[i, j]):
                        want[i, j] = p
    np.testing.assert_array_equal(traced, want)

    # Element-wise, with constants on either side and Python's operators.
    relu = ops.operator(lambda x: ops.max(x, 0), name="relu")
    shifted = ops.operator(lambda x: 1 - 2 * x ** 2 / 4, name="shifted")
    got = sparsec.evaluate("R(i,j) = relu(A(i,j)) + shifted(A(i,j))", A=a,
                           operators=[relu, shifted])
    np.testing.assert_allclose(got, np.maximum(dense_a, 0) + 1 - 2 * dense_a ** 2 / 4,
                               rtol=1e-12)

    # Python cannot branch on a traced value, and a reduction must be one.
    def branching(x, y):
        return x if x < y else y

    with pytest.raises(TypeError, match="use sparsec.operators.where"):
        ops.operator(branching, identity=np.inf)
    avg = ops.operator(lambda x, y: (x + y) / 2, name="avg", identity=0)
    with pytest.raises(sparsec.NotationError, match="`avg` cannot reduce"):
        sparsec.evaluate("y(i) = A(i,j) * x(j) over (avg, +)", A=a, x=np.ones(20),
                         operators=[avg])
    with pytest.raises(ValueError, match="give the operator a name"):
        ops.operator(lambda x: x)
    # A non-finite constant is written as the quotient that gives it.
    capped = ops.operator(lambda x: ops.min(x, np.inf) + ops.max(x, -np.inf), name="capped")
    np.testing.assert_array_equal(
        sparsec.evaluate("R(i,j) = capped(A(i,j))", A=a, operators=[capped]), 2 * dense_a)


def test_a_schedule_that_parallelizes_no_loop_keeps_the_default_thread_loop():
    # The benchmark's galloping triangle count: `mergeby` alone, on two threads.
    lower = sp.csr_array(sp.tril(sp.random_array((300, 300), density=0.05, format="csr",
                                                 random_state=9), k=-1))
    lower.data[:] = 1.0
    kernel = sparsec.compile("C<pattern(L)>(i,j) = L(i,k) * L(j,k) over (+, pair)",
                             formats={"L": "csr", "C": "csr"}, threads=2,
                             schedule="mergeby(k,Gallop)", backend="c")
    counts = kernel(L=lower)
    assert "#pragma omp parallel" in kernel.source
    dense = lower.toarray()
    want = (dense @ dense.T) * (dense != 0)
    np.testing.assert_array_equal(counts.toarray(), want)
