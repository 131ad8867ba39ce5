#!/usr/bin/env python3
"""MatrixMarket read speed: sparsec vs fast_matrix_market and scipy.io.mmread, in one run.

Builds the release `sparsec` binary, then for every shared matrix (../shared/data/matrices
beside the repository) takes the median of N reads with `sparsec info --repeat N FILE`
(timing only the read, inside the process), the median of N `fast_matrix_market.read_coo`
calls (the C++ parser behind SciPy's reader, with its own threads; skipped with a message
when `pip install fast_matrix_market` has not been run) and the median of N
`scipy.io.mmread` calls (in this process, file cached in memory by the earlier reads).
Also writes one large synthetic matrix to /tmp (never the repository) to measure
throughput in MB/s.

Usage: python3 bench/io_vs_scipy.py [--repeat N] [--large-rows R] [--large-nnz NNZ] [--no-large] [--csv FILE]
"""

import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "matrices"
BIN = ROOT / "target" / "release" / "sparsec"


def sparsec_median(path, repeat):
    out = subprocess.run(
        [str(BIN), "info", "--repeat", str(repeat), str(path)],
        check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        if line.startswith("read_median_seconds:"):
            return float(line.split(":", 1)[1])
    raise RuntimeError(f"no read_median_seconds in output for {path}:\n{out}")


def scipy_median(path, repeat):
    import scipy.io
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        scipy.io.mmread(str(path))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fmm_median(path, repeat):
    try:
        import fast_matrix_market as fmm
    except ImportError:
        return None
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fmm.read_coo(str(path))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def write_large(path, rows, nnz, seed=1):
    """A random real general matrix written with scipy (fast_matrix_market)."""
    import numpy as np
    import scipy.io
    import scipy.sparse
    rng = np.random.default_rng(seed)
    i = rng.integers(0, rows, nnz)
    j = rng.integers(0, rows, nnz)
    v = rng.standard_normal(nnz)
    m = scipy.sparse.coo_matrix((v, (i, j)), shape=(rows, rows))
    scipy.io.mmwrite(str(path), m)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="reads per file and tool (median taken)")
    ap.add_argument("--large-rows", type=int, default=1_000_000)
    ap.add_argument("--large-nnz", type=int, default=10_000_000)
    ap.add_argument("--large-repeat", type=int, default=3)
    ap.add_argument("--no-large", action="store_true", help="skip the large synthetic file")
    ap.add_argument("--csv", default=None, help="also write one row per file here")
    args = ap.parse_args()

    try:
        import scipy
    except ImportError:
        sys.exit("scipy is missing: pip install scipy")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "sparsec-cli"], check=True, cwd=ROOT)
    if not DATA.is_dir():
        sys.exit(f"shared data directory {DATA} is absent")

    print(f"sparsec {BIN}, scipy {scipy.__version__}, {os.cpu_count()} cpus, median of {args.repeat} reads")
    print(f"{'file':34} {'MB':>6} {'sparsec ms':>11} {'fmm ms':>9} {'scipy ms':>10} {'s/fmm':>7} {'s/scipy':>8}")
    vs_scipy, vs_fmm = [], []
    records = []
    files = sorted(DATA.glob("*.mtx"), key=lambda p: p.stat().st_size)
    for path in files:
        mb = path.stat().st_size / 1e6
        ours = sparsec_median(path, args.repeat)
        fast = fmm_median(path, args.repeat)
        theirs = scipy_median(path, args.repeat)
        vs_scipy.append(ours / theirs)
        fast_text = f"{fast*1e3:9.3f}" if fast else f"{'-':>9}"
        ratio_fast = f"{ours/fast:7.3f}" if fast else f"{'-':>7}"
        if fast:
            vs_fmm.append(ours / fast)
        records.append((path.name, mb, ours * 1e3, fast * 1e3 if fast else float("nan"),
                        theirs * 1e3))
        print(f"{path.name:34} {mb:6.2f} {ours*1e3:11.3f} {fast_text} {theirs*1e3:10.3f} {ratio_fast} {ours/theirs:8.3f}")
    print(f"geometric mean of sparsec's time over scipy's, {len(vs_scipy)} files: {geomean(vs_scipy):.3f}")
    if vs_fmm:
        print(f"geometric mean of sparsec's time over fast_matrix_market's: {geomean(vs_fmm):.3f}")
    else:
        print("fast_matrix_market is not installed (pip install fast_matrix_market): not compared")

    if not args.no_large:
        large = Path("/tmp") / f"sparsec_bench_{args.large_rows}x{args.large_nnz}.mtx"
        if not large.exists():
            print(f"writing {large} ...", flush=True)
            write_large(large, args.large_rows, args.large_nnz)
        mb = large.stat().st_size / 1e6
        ours = sparsec_median(large, args.large_repeat)
        fast = fmm_median(large, args.large_repeat)
        theirs = scipy_median(large, args.large_repeat)
        print(f"large: {large.name}: {mb:.0f} MB, {args.large_nnz} entries, median of {args.large_repeat}")
        print(f"  sparsec {ours:.3f} s = {mb/ours:.0f} MB/s = {args.large_nnz/ours/1e6:.1f} M entries/s")
        if fast:
            print(f"  fmm     {fast:.3f} s = {mb/fast:.0f} MB/s = {args.large_nnz/fast/1e6:.1f} M entries/s")
        print(f"  scipy   {theirs:.3f} s = {mb/theirs:.0f} MB/s = {args.large_nnz/theirs/1e6:.1f} M entries/s")
        print(f"  ratio sparsec/scipy {ours/theirs:.3f}" + (f", sparsec/fmm {ours/fast:.3f}" if fast else ""))
        records.append((large.name, mb, ours * 1e3, fast * 1e3 if fast else float("nan"),
                        theirs * 1e3))

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            table = csv.writer(f)
            table.writerow(["file", "mb", "sparsec_ms", "fmm_ms", "scipy_ms"])
            table.writerows(records)
        print(f"wrote {args.csv}")

if __name__ == "__main__":
    main()
