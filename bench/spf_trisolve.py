#!/usr/bin/env python3
"""Benchmark (not a test): the SPF sparse lower triangular solve against SciPy and MKL.

Runs `examples/bench_spf.rs` (serial forward substitution and the level-set kernel on 1 and
2 threads, medians of N runs after a warm-up call; the level-set kernel's inspector runs
on that first call, its level sets kept for the same tensors) and times, on the same lower triangles (strict lower triangle of each square
shared matrix plus a diagonal 1 + sum |row|, CSR), `scipy.sparse.linalg.spsolve_triangular`
and MKL's inspector-executor `mkl_sparse_d_trsv` at 1 and 2 threads (the handle, its
`mkl_sparse_set_sv_hint` and `mkl_sparse_optimize` made once, untimed, as MKL intends; MKL
is loaded as `schedules_vs_mkl.py` loads it, or its columns say why not). Prints the times
and the ratios peer / sparsec (above 1: sparsec is faster); each result is checked against
SciPy's.

    python3 bench/spf_trisolve.py [MATRIX_DIR] [RUNS] [--csv FILE]

The kernels are C compiled by the C backend whatever the Cargo profile; PROFILE=test (say)
reuses a test build instead of building the release one.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from schedules_vs_mkl import MklHandleCall, MklSparseApi, load_mkl, set_mkl_threads  # noqa: E402,E501


class MklTrsv(MklHandleCall):
    """`mkl_sparse_d_trsv` on a lower triangular CSR matrix, through the library and
    handle type that sparse_dot_mkl loaded."""

    NON_TRANSPOSE = 10  # SPARSE_OPERATION_NON_TRANSPOSE
    TRIANGULAR, LOWER, NON_UNIT = 23, 40, 50  # sparse_matrix_type_t, fill mode, diag

    def __init__(self, mkl, lower: sp.csr_matrix, b: np.ndarray, expected_calls: int):
        api = MklSparseApi(mkl)
        c, iface, mkl_int, fn = api, api.iface, api.mkl_int, api.fn
        h_t, d_t, ptr = api.handle_t, api.descr_t, api.ptr

        self.iface, self.lower, self.b = iface, lower, b
        self.out = np.zeros(lower.shape[0])
        self.descr = d_t(self.TRIANGULAR, self.LOWER, self.NON_UNIT)
        self.handle, _, _ = iface._create_mkl_sparse(lower)
        op = c.c_int(self.NON_TRANSPOSE)
        hint = fn("mkl_sparse_set_sv_hint", h_t, c.c_int, d_t, mkl_int)
        hint(self.handle, op, self.descr, mkl_int(expected_calls))
        fn("mkl_sparse_optimize", h_t)(self.handle)
        trsv = fn("mkl_sparse_d_trsv", c.c_int, c.c_double, h_t, d_t, ptr, ptr)
        args = (op, 1.0, self.handle, self.descr, b.ctypes.data, self.out.ctypes.data)
        self.call = lambda: trsv(*args)


def median_ms(f, runs: int) -> float:
    f()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)

def matrix_args(doc: str) -> argparse.Namespace:
    """The arguments of the SPF benchmarks: the matrix folder, the run count, --csv."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("matrix_dir", nargs="?",
                        default=os.path.join(ROOT, "..", "shared", "data", "matrices"))
    parser.add_argument("runs", nargs="?", type=int, default=20)
    parser.add_argument("--csv", default=None, help="also write one row per matrix here")
    return parser.parse_args()


def main() -> None:
    args = matrix_args(__doc__)
    mdir, runs = args.matrix_dir, args.runs
    records = []

    out = subprocess.run(
        ["cargo", "run", "-q", "--profile", os.environ.get("PROFILE", "release"), "-p", "sparsec", "--example", "bench_spf", "--", mdir, str(runs)],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines()

    mkl, mkl_note = load_mkl()
    print(f"MKL: {mkl_note}")
    print(f"{'matrix':<28}{'n':>8}{'nnz':>9}{'serial':>10}{'wf 1t':>10}{'wf 2t':>10}{'scipy':>10}"
          f"{'mkl 1t':>10}{'mkl 2t':>10}{'sc/ser':>8}{'sc/wf2':>8}{'wf1/ser':>8}{'mkl1/ser':>9}"
          f"{'mkl2/best':>10}")
    for line in out[1:]:
        name, n, nnz, s, w1, w2 = line.split()
        n, s, w1, w2 = int(n), float(s), float(w1), float(w2)
        a = sp.coo_matrix(scipy.io.mmread(os.path.join(mdir, name + ".mtx")))
        low = sp.tril(a, k=-1).tocsr()
        low.sum_duplicates()
        diag = 1.0 + np.asarray(abs(low).sum(axis=1)).ravel()
        # Built from triplets, not as `low + diags`: a sum drops the explicit zeros a file
        # stores (zenios has 11,502 in its lower triangle), which sparsec's solve reads.
        low = low.tocoo()
        rows = np.concatenate([low.row, np.arange(n)])
        cols = np.concatenate([low.col, np.arange(n)])
        L = sp.csr_matrix((np.concatenate([low.data, diag]), (rows, cols)), shape=(n, n))
        L.sort_indices()
        if L.nnz != int(nnz):
            raise SystemExit(f"{name}: {L.nnz} entries here, {nnz} in sparsec's triangle")
        b = np.ones(n)
        expected = spsolve_triangular(L, b, lower=True)
        sc = median_ms(lambda: spsolve_triangular(L, b, lower=True), runs)
        mkl_ms = []
        for threads in (1, 2):
            if mkl is None or set_mkl_threads(mkl, threads) is not None:
                mkl_ms.append(float("nan"))
                continue
            solve = MklTrsv(mkl, L, b, runs + 1)
            if not np.allclose(solve(), expected, rtol=1e-8, atol=1e-10):
                raise SystemExit(f"{name}: MKL's solution differs from SciPy's")
            mkl_ms.append(median_ms(solve, runs))
            solve.close()
        m1, m2 = mkl_ms
        print(f"{name:<28}{n:>8}{L.nnz:>9}{s:>10.3f}{w1:>10.3f}{w2:>10.3f}{sc:>10.3f}"
              f"{m1:>10.3f}{m2:>10.3f}{sc / s:>8.2f}{sc / w2:>8.2f}{w1 / s:>8.2f}{m1 / s:>9.2f}"
              f"{m2 / min(s, w2):>10.2f}")
        records.append((name, n, L.nnz, s, w1, w2, sc, m1, m2))

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            table = csv.writer(f)
            table.writerow(["matrix", "n", "nnz", "serial_ms", "levelset_1t_ms", "levelset_2t_ms",
                            "scipy_ms", "mkl_1t_ms", "mkl_2t_ms"])
            table.writerows(records)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
