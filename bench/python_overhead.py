#!/usr/bin/env python3
"""Per-call cost of sparsec's Python package against scipy.sparse, and first-call latency.

    OMP_NUM_THREADS=1 python bench/python_overhead.py [--runs N] [--quick]

Needs the package installed (`pip install ./crates/sparsec-py`). Not a test: it prints
figures. For each operation and size it reports the median time of one call of

  * `scipy`:   the SciPy expression (`A @ x`, `A @ B`);
  * `sparsec`: a compiled, cached kernel called with the SciPy/NumPy objects, which it
               reads in place (checking the structure of each matrix on every call) and
               whose output it hands to NumPy/SciPy without a copy; `copied` lists the
               inputs the call copied instead (none, for these inputs);
  * `tensors`: the same kernel called with inputs already held as `sparsec.Tensor`
               (what remains: the kernel, the output, the Python call);

then the latency of the first call in a fresh process (import excluded) with an empty
kernel cache (the C compiler runs), with the disk cache filled by an earlier process, and
with the tiered backend on an empty cache (Cranelift's code at once).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp

import sparsec


def median_time(f, runs):
    f()  # warm-up (compiles on the first call)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fmt(seconds):
    return f"{seconds * 1e6:10.1f} us" if seconds < 1e-2 else f"{seconds * 1e3:10.2f} ms"


def cases(quick):
    rng = np.random.default_rng(1)
    scale = 10 if quick else 1
    small = sp.random_array((500, 500), density=0.005, format="csr", rng=rng)
    big_n = 200_000 // scale
    big = sp.random_array((big_n, big_n), density=10 / big_n, format="csr", rng=rng)
    gemm_n = 20_000 // scale
    gemm = sp.random_array((gemm_n, gemm_n), density=10 / gemm_n, format="csr", rng=rng)
    for label, a in (("small 500x500, 1.2k nnz", small), (f"large {big_n}x{big_n}, {big.nnz} nnz", big)):
        x = rng.standard_normal(a.shape[1])
        yield "SpMV", label, "y(i) = A(i,j) * x(j)", {"A": "csr"}, {"A": a, "x": x}, lambda a=a, x=x: a @ x
        b = rng.standard_normal((a.shape[1], 32))
        yield "SpMM (32 cols)", label, "C(i,k) = A(i,j) * B(j,k)", {"A": "csr"}, {"A": a, "B": b}, lambda a=a, b=b: a @ b
    for label, a in (("small 500x500, 1.2k nnz", small), (f"large {gemm_n}x{gemm_n}, {gemm.nnz} nnz", gemm)):
        yield (
            "SpGEMM (A*A)",
            label,
            "C(i,j) = A(i,k) * B(k,j)",
            {"A": "csr", "B": "csr", "C": "csr"},
            {"A": a, "B": a},
            lambda a=a: a @ a,
        )


FIRST_CALL = """
import time, numpy as np, scipy.sparse as sp, sparsec
a = sp.random_array((1000, 1000), density=0.01, format="csr", rng=0)
x = np.ones(1000)
start = time.perf_counter()
k = sparsec.compile("y(i) = A(i,j) * x(j) + 0.5 * x(i)", formats={"A": "csr"}, backend="%s")
k(A=a, x=x)
print(time.perf_counter() - start, k.was_compiled)
"""


def first_call(backend, cache_dir):
    env = {**os.environ, "SPARSEC_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", FIRST_CALL % backend], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), out[1] == "True"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="large inputs 10x smaller")
    args = parser.parse_args()
    print(f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, median of {args.runs} runs")
    print(f"{'operation':16} {'size':34} {'scipy':>13} {'sparsec':>13} {'tensors':>13}  copied")
    for op, label, expr, formats, inputs, scipy_op in cases(args.quick):
        kernel = sparsec.compile(expr, formats=formats, backend="c")
        held = {name: sparsec.Tensor.from_any(v, formats.get(name)) for name, v in inputs.items()}
        t_scipy = median_time(scipy_op, args.runs)
        t_ours = median_time(lambda: kernel(**inputs), args.runs)
        copied = ",".join(kernel.copied_inputs) or "-"
        t_held = median_time(lambda: kernel(**held), args.runs)
        print(f"{op:16} {label:34} {fmt(t_scipy):>13} {fmt(t_ours):>13} {fmt(t_held):>13}  {copied}")
    with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as tiered:
        t_cold, compiled = first_call("c", cold)
        assert compiled, "an empty cache must compile"
        t_warm, compiled = first_call("c", cold)
        assert not compiled, "the second process must find the kernel in the disk cache"
        t_tiered, _ = first_call("tiered", tiered)
    print("first call in a new process (import excluded), SpMV-like kernel on 1000x1000:")
    print(f"  C backend, empty cache (C compiler runs): {fmt(t_cold)}")
    print(f"  C backend, kernel in the disk cache:      {fmt(t_warm)}")
    print(f"  tiered backend, empty cache (JIT first):  {fmt(t_tiered)}")


if __name__ == "__main__":
    main()
