#!/usr/bin/env python3
"""Benchmark (not a test): the SPF Gauss-Seidel sweep and ILU(0) against SciPy and MKL.

Runs `examples/bench_spf.rs --smoothers` (one thread, medians of N runs after a warm-up) on
each square shared matrix made strictly diagonally dominant (its entries off the diagonal,
and a diagonal of 1 + the row's absolute sum), and times on the same matrices, one thread:

- a forward Gauss-Seidel sweep from x0 = 1 with b = 1, that is the solve
  (D + L) x = b - U x0: SciPy as `spsolve_triangular(D + L, b - U @ x0)`, and MKL as
  `mkl_sparse_d_mv` (y = b - U x0) then `mkl_sparse_d_trsv` on D + L (both handles,
  the solve's hint and `mkl_sparse_optimize` made once, untimed). Neither library has a
  Gauss-Seidel sweep of its own (MKL's `mkl_sparse_d_symgs` sweeps forward and back);
- ILU(0): MKL's `dcsrilu0` (the same factorization, in A's pattern). SciPy has no ILU(0)
  (`spilu` is SuperLU's threshold ILU, another factorization) and is not timed.

Each sparsec result is checked: the sweep against SciPy's, the factors against MKL's.
Prints the times and the ratios peer / sparsec (above 1: sparsec is faster) and their
geometric means.

    python3 bench/spf_smoothers.py [MATRIX_DIR] [RUNS] [--csv FILE]

PROFILE=test (say) reuses a test build instead of building the release one.
"""
import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from schedules_vs_mkl import MklSparseApi, load_mkl, set_mkl_threads  # noqa: E402
from spf_trisolve import MklTrsv, matrix_args, median_ms  # noqa: E402


def dominant(path: str) -> sp.csr_matrix:
    """As `generate::dominant`: the file's entries off the diagonal (duplicates summed,
    explicit zeros kept) and a diagonal of 1 + the row's absolute sum."""
    a = sp.coo_matrix(scipy.io.mmread(path))
    off = a.row != a.col
    row, col, val = a.row[off], a.col[off], a.data[off].astype(float)
    n = a.shape[0]
    diag = 1.0 + np.bincount(row, weights=np.abs(val), minlength=n)
    m = sp.csr_matrix((np.concatenate([val, diag]),
                       (np.concatenate([row, np.arange(n)]), np.concatenate([col, np.arange(n)]))),
                      shape=(n, n))
    m.sum_duplicates()
    m.sort_indices()
    return m


class MklSweep:
    """y = b - U x0 by `mkl_sparse_d_mv`, then (D + L) x = y by `mkl_sparse_d_trsv`."""

    GENERAL = 20  # SPARSE_MATRIX_TYPE_GENERAL

    def __init__(self, mkl, a: sp.csr_matrix, b: np.ndarray, x0: np.ndarray, calls: int):
        api = MklSparseApi(mkl)
        self.iface = api.iface
        lower = sp.tril(a).tocsr()
        self.upper = sp.triu(a, k=1).tocsr()
        self.b, self.x0, self.y = b, x0, np.empty_like(b)
        self.solve = MklTrsv(mkl, lower, self.y, calls)
        self.handle, _, _ = self.iface._create_mkl_sparse(self.upper)
        descr = api.descr_t(self.GENERAL, 0, 0)
        mv = api.fn("mkl_sparse_d_mv", api.c_int, api.c_double, api.handle_t, api.descr_t,
                    api.ptr, api.c_double, api.ptr)
        args = (api.c_int(MklTrsv.NON_TRANSPOSE), -1.0, self.handle, descr,
                x0.ctypes.data, 1.0, self.y.ctypes.data)
        self.mv = lambda: mv(*args)

    def __call__(self) -> np.ndarray:
        np.copyto(self.y, self.b)
        if self.mv() != 0:
            raise RuntimeError("mkl_sparse_d_mv failed")
        return self.solve()

    def close(self) -> None:
        self.solve.close()
        self.iface._destroy_mkl_handle(self.handle)


class MklIlu0:
    """MKL's `dcsrilu0` (one-based CSR): the factors in A's pattern."""

    def __init__(self, mkl, a: sp.csr_matrix):
        import ctypes as c
        api = MklSparseApi(mkl)
        it = np.int64 if c.sizeof(api.mkl_int) == 8 else np.int32
        self.n = api.mkl_int(a.shape[0])
        self.ia, self.ja = (a.indptr + 1).astype(it), (a.indices + 1).astype(it)
        self.a, self.out = a.data.copy(), np.empty_like(a.data)
        self.ipar, self.dpar = np.zeros(128, dtype=it), np.zeros(128)
        self.err = api.mkl_int(0)
        f = api.lib.dcsrilu0
        f.restype = None
        p = c.c_void_p
        f.argtypes = [c.POINTER(api.mkl_int), p, p, p, p, p, p, c.POINTER(api.mkl_int)]
        self.call = lambda: f(c.byref(self.n), self.a.ctypes.data, self.ia.ctypes.data,
                              self.ja.ctypes.data, self.out.ctypes.data, self.ipar.ctypes.data,
                              self.dpar.ctypes.data, c.byref(self.err))

    def __call__(self) -> np.ndarray:
        self.call()
        if self.err.value != 0:
            raise RuntimeError(f"dcsrilu0 error {self.err.value}")
        return self.out


def read_values(path: str) -> np.ndarray:
    with open(path) as f:
        return np.array([float(line) for line in f if line.strip()])


def geomean(xs) -> float:
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main() -> None:
    args = matrix_args(__doc__)
    mdir, runs = args.matrix_dir, args.runs
    results = tempfile.mkdtemp(prefix="sparsec-smoothers-")
    out = subprocess.run(
        ["cargo", "run", "-q", "--profile", os.environ.get("PROFILE", "release"), "-p",
         "sparsec", "--example", "bench_spf", "--", mdir, str(runs), "--smoothers", results],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines()
    mkl, mkl_note = load_mkl()
    print(f"MKL: {mkl_note}")
    if mkl is not None and set_mkl_threads(mkl, 1) is not None:
        mkl = None
    print(f"{'matrix':<16}{'n':>8}{'nnz':>9}{'gs':>9}{'scipy':>9}{'mkl':>9}{'ilu0':>9}"
          f"{'mkl':>9}{'sc/gs':>8}{'mkl/gs':>8}{'mkl/ilu':>8}")
    records = []
    for line in out[1:]:
        name, n, nnz, gs, ilu = line.split()
        n, gs, ilu = int(n), float(gs), float(ilu)
        a = dominant(os.path.join(mdir, name + ".mtx"))
        if a.nnz != int(nnz):
            raise SystemExit(f"{name}: {a.nnz} entries here, {nnz} in sparsec's matrix")
        b, x0 = np.ones(n), np.ones(n)
        lower, upper = sp.tril(a).tocsr(), sp.triu(a, k=1).tocsr()
        expected = spsolve_triangular(lower, b - upper @ x0, lower=True)
        got = read_values(os.path.join(results, name + ".gs"))
        if not np.allclose(got, expected, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"{name}: sparsec's sweep differs from SciPy's")
        scipy_ms = median_ms(lambda: spsolve_triangular(lower, b - upper @ x0, lower=True), runs)
        mkl_gs = mkl_ilu = float("nan")
        if mkl is not None:
            sweep = MklSweep(mkl, a, b, x0, runs + 1)
            if not np.allclose(sweep(), expected, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"{name}: MKL's sweep differs from SciPy's")
            mkl_gs = median_ms(sweep, runs)
            sweep.close()
            factor = MklIlu0(mkl, a)
            factors = read_values(os.path.join(results, name + ".ilu"))
            if not np.allclose(factor(), factors, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"{name}: sparsec's ILU(0) differs from MKL's")
            mkl_ilu = median_ms(factor, runs)
        print(f"{name:<16}{n:>8}{a.nnz:>9}{gs:>9.3f}{scipy_ms:>9.3f}{mkl_gs:>9.3f}{ilu:>9.3f}"
              f"{mkl_ilu:>9.3f}{scipy_ms / gs:>8.2f}{mkl_gs / gs:>8.2f}{mkl_ilu / ilu:>8.2f}")
        records.append((name, n, a.nnz, gs, scipy_ms, mkl_gs, ilu, mkl_ilu))
    print(f"geometric means, peer / sparsec: SciPy sweep "
          f"{geomean(r[4] / r[3] for r in records):.2f}, MKL sweep "
          f"{geomean(r[5] / r[3] for r in records):.2f}, MKL ILU(0) "
          f"{geomean(r[7] / r[6] for r in records):.2f}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            table = csv.writer(f)
            table.writerow(["matrix", "n", "nnz", "gs_ms", "scipy_gs_ms", "mkl_gs_ms",
                            "ilu0_ms", "mkl_ilu0_ms"])
            table.writerows(records)
        print(f"wrote {args.csv}")


if __name__ == "__main__":
    main()
