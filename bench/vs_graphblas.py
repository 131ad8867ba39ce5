#!/usr/bin/env python3
"""Graph kernels over semirings: sparsec against SuiteSparse:GraphBLAS (python-graphblas)
on the same graphs, in the same run, at 1 and 2 threads.

    python3 bench/vs_graphblas.py [--runs N] [--quick] [--threads 1 2] [--graphs NAME ...] [--csv FILE]

Needs numpy, scipy, python-graphblas and the sparsec package (built in release:
`pip install ./crates/sparsec-py`). Operations, each computing the same result both ways
(checked before timing):

- `minplus`: one Bellman-Ford relaxation, `y(j) = x(i) * A(i,j) over (min, +)` with a
  dense `x` (GraphBLAS: `x.vxm(A, min_plus)`);
- `triangles`: the masked product `C<pattern(L)>(i,j) = L(i,k) * L(j,k) over (+, pair)`,
  summed (GraphBLAS: `L.mxm(L.T, plus_pair)` under `L`'s structure, reduced);
- `tri-scalar`: the same count as one statement, `t = L(i,j) * L(i,k) * L(j,k) over
  (+, pair)`, against the same GraphBLAS computation;
- `bfs`: breadth-first levels from the vertex of largest degree, a masked `(any, pair)`
  product per level (GraphBLAS: the same push step with a complemented structural mask);
- `pagerank`: 20 power iterations `r = (1-d)/n + d * P r` with `P` the column-normalised
  adjacency (GraphBLAS: `P.mxv(r)`), the teleport term in NumPy for both.

sparsec's kernels are compiled once, before timing, and reused for every call. Each time
is the median of `--runs` runs; the table gives both medians and sparsec/GraphBLAS (below
1: sparsec is faster), and the geometric mean of the ratios per thread count.
"""
import argparse
import csv
import math
import os
import statistics
import sys
import time

import numpy as np
import scipy.io
import scipy.sparse as sp

import graphblas as gb
import sparsec

gb.init("suitesparse")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("SPARSEC_DATA", os.path.join(ROOT, "..", "shared", "data"))
SHARED = ["ca-HepTh", "PGPgiantcompo", "Erdos971", "delaunay_n16", "ct2010"]


def shared_graph(name):
    a = sp.csr_array(scipy.io.mmread(os.path.join(DATA, "matrices", f"{name}.mtx")))
    a = sp.csr_array(((a + a.T) != 0).astype(np.float64))
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return a


def power_law(n, degree, seed=1):
    """A symmetric graph with Zipf-distributed degrees (about `degree` on average)."""
    rng = np.random.default_rng(seed)
    out = np.minimum(rng.zipf(2.1, n) * degree // 2, n // 10 + 1)
    rows = np.repeat(np.arange(n), out)
    cols = rng.integers(0, n, rows.size)
    a = sp.coo_array((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    a = sp.csr_array(((a + a.T) != 0).astype(np.float64))
    a.setdiag(0)
    a.eliminate_zeros()
    a.sort_indices()
    return a


def timed(fn, runs):
    fn()  # warm: caches, pages, the kernel's first-run measurements
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def compiled(kernel, **tensors):
    """`kernel`, run once on `tensors` and with its C code in use (a tiered kernel starts on
    the JIT while the C compiler runs)."""
    kernel(**tensors)
    kernel.finish_compiling()
    return kernel


def gb_matrix(a):
    return gb.Matrix.from_csr(a.indptr, a.indices, a.data, nrows=a.shape[0], ncols=a.shape[1])


def operations(a, threads):
    """(name, sparsec call, GraphBLAS call, check) for graph `a`: each call returns its
    result as NumPy (or a number), and `check` compares the two."""
    n = a.shape[0]
    rng = np.random.default_rng(2)
    weights = sp.csr_array((rng.uniform(1, 10, a.nnz), a.indices, a.indptr), shape=a.shape)
    ga, gw = gb_matrix(a), gb_matrix(weights)
    ops = []

    # Bellman-Ford's relaxation from a dense distance vector.
    x = rng.uniform(0, 100, n)
    gx = gb.Vector.from_dense(x)
    weights_csc = weights.tocsc()
    weights_csc.sort_indices()
    # Each library's matrices are built once, outside the timings, in its own storage
    # (`gb_matrix` above): a SciPy argument would be copied into a sparsec tensor per call.
    weights_csc = sparsec.Tensor.from_scipy(weights_csc, format="csc")
    relax = compiled(sparsec.compile("y(j) = x(i) * A(i,j) over (min, +)",
                                     formats={"A": "csc"}, threads=threads),
                     x=x, A=weights_csc)
    ops.append((
        "minplus",
        lambda: relax(x=x, A=weights_csc),
        lambda: gx.vxm(gw, gb.semiring.min_plus).new().to_dense(fill_value=np.inf),
        lambda s, g: np.testing.assert_allclose(s, g, rtol=1e-12),
    ))

    # Triangles: the lower triangle's masked product, summed.
    lower = sp.csr_array(sp.tril(a, k=-1))
    lower.sort_indices()
    gl = gb_matrix(lower)
    lower = sparsec.Tensor.from_scipy(lower, format="csr")
    # Rows of a power-law graph differ in length by orders of magnitude: their
    # intersections gallop through the longer row (GraphBLAS chooses likewise).
    count = compiled(sparsec.compile("C<pattern(L)>(i,j) = L(i,k) * L(j,k) over (+, pair)",
                                     formats={"L": "csr", "C": "csr"}, threads=threads,
                                     schedule="mergeby(k,Gallop)"),
                     L=lower)
    ops.append((
        "triangles",
        lambda: count(L=lower).sum(),
        lambda: gl.mxm(gl.T, gb.semiring.plus_pair).new(mask=gl.S).reduce_scalar().value,
        lambda s, g: np.testing.assert_equal(s, g),
    ))
    # The same count as one statement with a scalar result: no product matrix is built.
    total = compiled(sparsec.compile("t = L(i,j) * L(i,k) * L(j,k) over (+, pair)",
                                     formats={"L": "csr"}, threads=threads,
                                     schedule="parallelize(i,CPUThread,Temporary),"
                                              "mergeby(k,Gallop)"), L=lower)
    ops.append((
        "tri-scalar",
        lambda: float(total(L=lower)),
        lambda: gl.mxm(gl.T, gb.semiring.plus_pair).new(mask=gl.S).reduce_scalar().value,
        lambda s, g: np.testing.assert_equal(s, g),
    ))

    # Breadth-first levels from the vertex of largest degree.
    source = int(np.argmax(np.diff(a.indptr)))
    first = sparsec.Tensor.from_coo((n,), [[source]], [1.0], format="s")
    graph = sparsec.Tensor.from_scipy(a, format="csr")
    step = compiled(sparsec.compile("g<!v>(j) = f(i) * A(i,j) over (any, pair)",
                                    formats={"A": "csr", "f": "s"}, threads=threads),
                    f=first, A=graph, v=np.zeros(n))

    def sparsec_bfs():
        levels = np.full(n, -1.0)
        visited = np.zeros(n)
        levels[source], visited[source] = 0, 1
        frontier = np.array([source])
        level = 0
        while frontier.size:
            f = sparsec.Tensor.from_coo((n,), frontier[None, :], np.ones(frontier.size),
                                        format="s")
            reached = step(f=f, A=graph, v=visited)
            level += 1
            frontier = np.flatnonzero(reached)
            levels[frontier], visited[frontier] = level, 1
        return levels

    def graphblas_bfs():
        levels = gb.Vector(gb.dtypes.INT64, n)
        q = gb.Vector(bool, n)
        q[source] << True
        level = 0
        while q.nvals:
            levels(mask=q.S) << level
            level += 1
            q(~levels.S, replace=True) << q.vxm(ga, gb.semiring.any_pair)
        return levels.to_dense(fill_value=-1).astype(np.float64)

    ops.append(("bfs", sparsec_bfs, graphblas_bfs,
                lambda s, g: np.testing.assert_array_equal(s, g)))

    # PageRank's power iterations on the column-normalised adjacency.
    degree = np.maximum(np.asarray(a.sum(axis=0)).ravel(), 1)
    p = sp.csr_array(a @ sp.diags_array(1.0 / degree))
    p.sort_indices()
    gp = gb_matrix(p)
    p = sparsec.Tensor.from_scipy(p, format="csr")
    multiply = compiled(sparsec.compile("y(i) = P(i,j) * r(j)", formats={"P": "csr"},
                                        threads=threads), P=p, r=np.ones(n))
    damping, iterations = 0.85, 20

    def sparsec_pagerank():
        r = np.full(n, 1.0 / n)
        for _ in range(iterations):
            r = (1 - damping) / n + damping * multiply(P=p, r=r)
        return r

    def graphblas_pagerank():
        r = np.full(n, 1.0 / n)
        for _ in range(iterations):
            r = (1 - damping) / n + damping * gp.mxv(gb.Vector.from_dense(r)).new().to_dense(
                fill_value=0.0)
        return r

    ops.append(("pagerank", sparsec_pagerank, graphblas_pagerank,
                lambda s, g: np.testing.assert_allclose(s, g, rtol=1e-10)))
    return ops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="generated graph of 100k vertices")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--graphs", nargs="+", default=None)
    parser.add_argument("--csv", default=None,
                        help="also write one row per graph, operation and thread count here")
    args = parser.parse_args()
    vertices = 100_000 if args.quick else 1_000_000
    names = args.graphs or SHARED + [f"power-law-{vertices}"]
    graphs = []
    for name in names:
        a = power_law(vertices, 8) if name.startswith("power-law") else shared_graph(name)
        graphs.append((name, a))
        print(f"{name}: {a.shape[0]} vertices, {a.nnz // 2} edges", file=sys.stderr)
    version = ".".join(map(str, gb.ss.about["library_version"]))
    print(f"SuiteSparse:GraphBLAS {version} (python-graphblas {gb.__version__})")
    ratios = {t: [] for t in args.threads}
    records = []
    print(f"{'graph':<22} {'op':<10} {'thr':>3} {'sparsec ms':>11} {'GraphBLAS ms':>13} "
          f"{'ratio':>6}")
    for threads in args.threads:
        gb.ss.config["nthreads"] = threads
        for name, a in graphs:
            for op, ours, theirs, check in operations(a, threads):
                check(ours(), theirs())
                s, g = timed(ours, args.runs), timed(theirs, args.runs)
                ratios[threads].append(s / g)
                records.append((name, a.shape[0], a.nnz, op, threads, s * 1e3, g * 1e3))
                print(f"{name:<22} {op:<10} {threads:>3} {s * 1e3:>11.3f} {g * 1e3:>13.3f} "
                      f"{s / g:>6.2f}", flush=True)
    for threads, rs in ratios.items():
        mean = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"geometric mean sparsec/GraphBLAS at {threads} thread(s): {mean:.2f} "
              f"over {len(rs)} cases")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["graph", "vertices", "stored", "op", "threads", "sparsec_ms",
                          "graphblas_ms"])
            out.writerows(records)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
