"""SpMV with 32-bit and 64-bit index arrays: the same CSR matrix held as a sparsec.Tensor
with int32 and with int64 indices, run by one compiled kernel (the 64-bit input runs the
variant compiled for it), timed alternately (each width first in every other round) in
the same process; medians.

    OMP_NUM_THREADS=1 python bench/index_widths.py --runs 21
"""

import argparse
import os
import statistics
import time

import numpy as np
import scipy.sparse as sp
import sparsec


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--nnz-per-row", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    n, k = args.rows, args.nnz_per_row
    a = sp.random_array((n, n), density=k / n, format="csr", rng=rng)
    x = rng.standard_normal(n)
    wide = a.copy()
    wide.indices = wide.indices.astype(np.int64)
    wide.indptr = wide.indptr.astype(np.int64)
    narrow = a.copy()
    narrow.indices = narrow.indices.astype(np.int32)
    narrow.indptr = narrow.indptr.astype(np.int32)
    held = {
        "int32": sparsec.Tensor.from_any(narrow, "csr"),
        "int64": sparsec.Tensor.from_any(wide, "csr"),
    }
    for name, t in held.items():
        assert t.index_dtype == np.dtype(name), (name, t.index_dtype)
    xt = sparsec.Tensor.from_any(x)
    kernel = sparsec.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, backend="c")
    expected = a @ x
    times = {name: [] for name in held}
    for name, t in held.items():  # warm-up, and the 64-bit variant compiles
        np.testing.assert_allclose(kernel(A=t, x=xt), expected, rtol=1e-12, atol=1e-12)
    order = list(held.items())
    for _ in range(args.runs):
        order.reverse()  # alternate which width runs first
        for name, t in order:
            start = time.perf_counter()
            kernel(A=t, x=xt)
            times[name].append(time.perf_counter() - start)
    threads = os.environ.get("OMP_NUM_THREADS", "all")
    print(f"SpMV {n}x{n}, {a.nnz} nnz, OMP_NUM_THREADS={threads}, median of {args.runs}:")
    for name, ts in times.items():
        print(f"  {name} indices: {statistics.median(ts) * 1e3:8.2f} ms")
    ratio = statistics.median(times["int32"]) / statistics.median(times["int64"])
    print(f"  int32 / int64: {ratio:.3f}")


if __name__ == "__main__":
    main()
