#!/usr/bin/env python3
"""Benchmark (not a test): the SPF sparse lower triangular solve against SciPy.

Runs `examples/bench_spf.rs` (serial forward substitution and the level-set kernel on 1 and
2 threads, medians of N runs; the level-set times include its inspector, which runs on
every call) and times `scipy.sparse.linalg.spsolve_triangular` on the same lower triangles
(strict lower triangle of each square shared matrix plus a diagonal 1 + sum |row|, CSR).
Prints the times and the ratios SciPy / sparsec (above 1: sparsec is faster).

    python3 bench/spf_trisolve.py [MATRIX_DIR] [RUNS]

The kernels are C compiled by the C backend whatever the Cargo profile; PROFILE=test (say)
reuses a test build instead of building the release one.
"""
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
mdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data", "matrices")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20

out = subprocess.run(
    ["cargo", "run", "-q", "--profile", os.environ.get("PROFILE", "release"), "-p", "sparsec", "--example", "bench_spf", "--", mdir, str(runs)],
    cwd=ROOT, check=True, capture_output=True, text=True).stdout.splitlines()

print(f"{'matrix':<28}{'n':>8}{'nnz':>9}{'serial':>10}{'wf 1t':>10}{'wf 2t':>10}{'scipy':>10}"
      f"{'sc/ser':>8}{'sc/wf2':>8}{'wf1/ser':>8}")
for line in out[1:]:
    name, n, nnz, s, w1, w2 = line.split()
    n, s, w1, w2 = int(n), float(s), float(w1), float(w2)
    a = sp.coo_matrix(scipy.io.mmread(os.path.join(mdir, name + ".mtx")))
    low = sp.tril(a, k=-1).tocsr()
    low.sum_duplicates()
    diag = 1.0 + np.asarray(abs(low).sum(axis=1)).ravel()
    L = (low + sp.diags(diag)).tocsr()
    b = np.ones(n)
    spsolve_triangular(L, b, lower=True)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        spsolve_triangular(L, b, lower=True)
        times.append((time.perf_counter() - t) * 1e3)
    sc = statistics.median(times)
    print(f"{name:<28}{n:>8}{L.nnz:>9}{s:>10.3f}{w1:>10.3f}{w2:>10.3f}{sc:>10.3f}"
          f"{sc / s:>8.2f}{sc / w2:>8.2f}{w1 / s:>8.2f}")
