"""cuSPARSE's SpMV and SpMM (32 columns) on the shared matrices through CuPy, timed as
`bench_gpu` times sparsec's OpenCL kernels: the median of RUNS calls after a warm-up,
each call's result brought back to the host. Prints `matrix kernel rows nnz cusparse_ms`.
Says so, and exits 1, where CuPy or a CUDA device is missing.

    python3 bench/gpu_cusparse.py ../shared/data/matrices 50
"""

import pathlib
import statistics
import sys
import time

import numpy as np
import scipy.io
import scipy.sparse

try:
    import cupy
    import cupyx.scipy.sparse as cusparse
except ImportError as e:
    print(f"cuSPARSE: NOT MEASURED: CuPy is not installed ({e})")
    sys.exit(1)


def median_ms(f, runs):
    f()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    directory = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/matrices")
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    print("matrix kernel rows nnz cusparse_ms")
    for path in sorted(directory.glob("*.mtx")):
        a = scipy.sparse.csr_matrix(scipy.io.mmread(path), dtype=np.float64)
        x = np.linspace(-1.0, 1.0, a.shape[1])
        b = np.linspace(-1.0, 1.0, a.shape[1] * 32).reshape(a.shape[1], 32)
        da = cusparse.csr_matrix(a)
        dx, db = cupy.asarray(x), cupy.asarray(b)
        for name, f in [
            ("spmv", lambda: cupy.asnumpy(da @ dx)),
            ("spmm32", lambda: cupy.asnumpy(da @ db)),
        ]:
            print(f"{path.stem} {name} {a.shape[0]} {a.nnz} {median_ms(f, runs):.4f}")


if __name__ == "__main__":
    main()
