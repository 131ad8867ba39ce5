#!/usr/bin/env python3
"""Run sparsec's kernel benchmark and time the same operations with scipy.sparse / numpy
on the same data, in the same run; print medians, sparsec/scipy ratios and geometric means.

    OMP_NUM_THREADS=1 python3 bench/kernels_vs_scipy.py [--runs N] [--quick] [--skip-rust]

See bench/README.md for what is measured.
"""
import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

try:
    import numpy as np
    import scipy.io
    import scipy.sparse as sp
except ImportError:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", "numpy", "scipy"])
    import numpy as np
    import scipy.io
    import scipy.sparse as sp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dense_value(n):
    p = np.arange(n, dtype=np.int64)
    return ((7 * p) % 11).astype(np.float64) / 11.0 - 0.5


def dense(*dims):
    return dense_value(int(np.prod(dims))).reshape(dims)


_cache = {}


def load(source):
    """COO arrays (coords as an (nnz, order) int64 array, values, dims) of a source."""
    if source in _cache:
        return _cache[source]
    if source.startswith("raw:"):
        prefix = source[4:]
        dims = [int(x) for x in open(prefix + ".dims").read().split()]
        coords = np.fromfile(prefix + ".coords.i64", dtype="<i8").reshape(-1, len(dims))
        vals = np.fromfile(prefix + ".vals.f64", dtype="<f8")
    elif source.endswith(".mtx"):
        m = scipy.io.mmread(source)
        m = sp.coo_matrix(m)
        coords = np.stack([m.row, m.col], axis=1).astype(np.int64)
        vals = m.data.astype(np.float64)
        dims = list(m.shape)
    else:  # .tns, 1-based
        raw = np.loadtxt(source, ndmin=2)
        coords = raw[:, :-1].astype(np.int64) - 1
        vals = raw[:, -1].astype(np.float64)
        dims = list(coords.max(axis=0) + 1)
    _cache.clear()
    _cache[source] = (coords, vals, dims)
    return _cache[source]


def csr(coords, vals, dims):
    a = sp.csr_matrix((vals, (coords[:, 0], coords[:, 1])), shape=tuple(dims))
    a.sum_duplicates()
    return a


def median_time(fn, runs):
    fn()  # warm-up
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), fn()


def scipy_case(op, source, runs):
    coords, vals, dims = load(source)
    if op == "spmv":
        a = csr(coords, vals, dims)
        x = dense(dims[1])
        return median_time(lambda: a @ x, runs)
    if op == "spmm":
        a = csr(coords, vals, dims)
        b = dense(dims[1], 32)
        return median_time(lambda: a @ b, runs)
    if op == "spgemm":
        a = csr(coords, vals, dims)
        return median_time(lambda: a @ a, runs)
    if op == "mttkrp":
        # Per-nonzero Khatri-Rao rows (numpy fancy indexing), reduced into rows of A by a
        # sparse (I x nnz) indicator matrix (scipy CSR times dense).
        i, j, k = coords[:, 0], coords[:, 1], coords[:, 2]
        b = dense(dims[1], 16)
        c = dense(dims[2], 16)
        nnz = len(vals)
        s = sp.csr_matrix((np.ones(nnz), (i, np.arange(nnz))), shape=(dims[0], nnz))
        return median_time(lambda: s @ (vals[:, None] * b[j] * c[k]), runs)
    if op == "ttv":
        # Mode-3 unfolding as an (I*J x K) CSR matrix (built outside the timing) times v.
        u = sp.csr_matrix(
            (vals, (coords[:, 0] * dims[1] + coords[:, 1], coords[:, 2])),
            shape=(dims[0] * dims[1], dims[2]),
        )
        u.sum_duplicates()
        v = dense(dims[2])
        return median_time(lambda: u @ v, runs)
    raise ValueError(op)


def checksum(out):
    if sp.issparse(out):
        return float(out.sum())
    return float(np.sum(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="generated inputs 10x smaller")
    ap.add_argument("--gen-dir", default="/tmp/sparsec-bench")
    ap.add_argument("--skip-rust", action="store_true", help="reuse the existing CSV")
    ap.add_argument("--out", default=None, help="combined CSV (default GEN_DIR/comparison.csv)")
    args = ap.parse_args()
    rust_csv = os.path.join(args.gen_dir, "sparsec_results.csv")
    if not args.skip_rust:
        cmd = ["cargo", "run", "--release", "-q", "-p", "sparsec", "--example", "bench_kernels",
               "--", "--runs", str(args.runs), "--gen-dir", args.gen_dir, "--out", rust_csv]
        if args.quick:
            cmd.append("--quick")
        print("$", " ".join(cmd), flush=True)
        subprocess.check_call(cmd, cwd=ROOT)
    rows = list(csv.DictReader(open(rust_csv)))
    results = []
    for r in rows:
        t_scipy, out = scipy_case(r["op"], r["source"], args.runs)
        sc = checksum(out)
        t_rust = float(r["compute_median_s"]) + float(r["assemble_median_s"])
        rc = float(r["checksum"])
        ok = abs(sc - rc) <= 1e-6 * max(1.0, abs(sc), abs(rc))
        results.append(dict(r, scipy_median_s=t_scipy, sparsec_total_s=t_rust,
                            ratio=t_rust / t_scipy if t_scipy > 0 else float("nan"),
                            checksum_match=ok))
    out_csv = args.out or os.path.join(args.gen_dir, "comparison.csv")
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(results[0].keys()))
        w.writeheader()
        w.writerows(results)

    print(f"\nsingle-threaded, median of {args.runs} runs after one warm-up; times in ms; "
          "ratio = sparsec (compute+assemble) / scipy (lower is better for sparsec)\n")
    hdr = f"| {'op':7} | {'dataset':28} | {'nnz':>9} | {'sparsec compute':>15} | {'assemble':>9} | {'scipy':>10} | {'ratio':>6} | ok |"
    print(hdr)
    print("|" + "|".join("-" * (len(c)) for c in hdr.split("|")[1:-1]) + "|")
    for r in results:
        print(f"| {r['op']:7} | {r['dataset']:28} | {int(r['nnz']):>9} | "
              f"{float(r['compute_median_s'])*1e3:>15.3f} | {float(r['assemble_median_s'])*1e3:>9.3f} | "
              f"{r['scipy_median_s']*1e3:>10.3f} | {r['ratio']:>6.2f} | {'y' if r['checksum_match'] else 'N'}  |")
    print()
    by_op = {}
    for r in results:
        if r["ratio"] > 0 and math.isfinite(r["ratio"]):
            by_op.setdefault(r["op"], []).append(r["ratio"])
    allr = [x for v in by_op.values() for x in v]
    for op, v in by_op.items():
        print(f"geomean ratio {op:7}: {math.exp(sum(map(math.log, v)) / len(v)):.3f}  ({len(v)} cases)")
    print(f"geomean ratio all    : {math.exp(sum(map(math.log, allr)) / len(allr)):.3f}  ({len(allr)} cases)")
    bad = [r for r in results if not r["checksum_match"]]
    if bad:
        print(f"\nWARNING: {len(bad)} results differ between sparsec and scipy: "
              + ", ".join(f"{r['op']}/{r['dataset']}" for r in bad))
    print(f"\nwrote {out_csv}")


if __name__ == "__main__":
    main()
