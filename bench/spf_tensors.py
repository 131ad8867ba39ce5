#!/usr/bin/env python3
"""Benchmark (not a test): the SPF COO tensor kernels against sparsec's index-notation
kernels on CSF (issue 13, item 8).

For every order-3 FROSTT tensor in the tensor folder, rank R in (16, 32) and 1 and 2
threads, it times with the release CLI

  (a) `sparsec spf run examples/spf/mttkrp_coo.spf`    MTTKRP, B in COO (one loop over the
                                                        entries, scattered adds to A(i,:))
  (b) `sparsec run "A(i,r) = B(i,j,k) * C(j,r) * D(k,r)" -f B:csf`
  (c) `sparsec spf run examples/spf/ttm_coo.spf`       TTM (mode 3), Y dense
  (d) `sparsec run "Y(i,j,r) = B(i,j,k) * U(k,r)" -f B:csf`, Y dense (the default)

each as the median of RUNS runs after one warm-up, as printed by `--time`, and prints the
times, the ratio SPF / CSF (above 1: the index-notation kernel on CSF is faster) and the
geometric means of the ratios per kernel and thread count. Every timed run also writes its
output (-o), and the SPF and CSF outputs of each case are compared with numpy (relative
tolerance 1e-9); a difference stops the script.

What the two times cover (so that they cover the same work):
  * SPF: the `run` median of `sparsec spf run --time`, one `SpfKernel::run` call: the
    per-call checks of the inputs (and a scan of each coordinate array for its range),
    allocating and zeroing the dense output, and the kernel.
  * CSF: the sum of the `prepare` (allocating the dense output), `compute` and `assembly`
    (0 for dense outputs) medians of `sparsec run --time`; the compute median alone is
    printed beside it.
The dense factors C, D, U are drawn with a fixed seed and written as MatrixMarket arrays
(`.mtx`), which both read; B is read from the `.tns` file by both. Each CLI stores its
inputs in the declared formats once, before timing (COO for SPF, CSF for `sparsec run`).

    SPARSEC=target/release/sparsec python3 bench/spf_tensors.py RUNS [TENSOR_DIR]

SPARSEC defaults to target/release/sparsec (relative to the repository root), TENSOR_DIR
to `../shared/data/tensors` from the repository root. A
missing binary or folder is an error. Tensors of another order are listed as skipped, as
is TTM where the dense output I*J*R would exceed 2e8 doubles.
"""
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import scipy.io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from schedules_vs_mkl import tns_order  # noqa: E402
RANKS = (16, 32)
THREADS = (1, 2)
SEED = 13
RTOL = 1e-9
MAX_TTM_OUTPUT = 2e8  # doubles of the dense TTM output
MTTKRP_SPF = os.path.join(ROOT, "examples", "spf", "mttkrp_coo.spf")
TTM_SPF = os.path.join(ROOT, "examples", "spf", "ttm_coo.spf")
MTTKRP_EXPR = "A(i,r) = B(i,j,k) * C(j,r) * D(k,r)"
TTM_EXPR = "Y(i,j,r) = B(i,j,k) * U(k,r)"


def die(msg: str):
    sys.exit(f"spf_tensors.py: error: {msg}")


def usage():
    die("usage: SPARSEC=PATH python3 bench/spf_tensors.py RUNS [TENSOR_DIR]")


if len(sys.argv) not in (2, 3):
    usage()
try:
    RUNS = int(sys.argv[1])
except ValueError:
    usage()
if RUNS < 1:
    die(f"RUNS must be at least 1, not {RUNS}")
TENSOR_DIR = (sys.argv[2] if len(sys.argv) == 3
              else os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "tensors")))
SPARSEC = os.environ.get("SPARSEC", "target/release/sparsec")
if not os.path.isabs(SPARSEC):
    SPARSEC = os.path.join(ROOT, SPARSEC)
if not (os.path.isfile(SPARSEC) and os.access(SPARSEC, os.X_OK)):
    die(f"no sparsec binary at {SPARSEC} (build it with `cargo build --release -p "
        "sparsec-cli`, or set SPARSEC)")
if not os.path.isdir(TENSOR_DIR):
    die(f"tensor folder {TENSOR_DIR} does not exist")
for prog in (MTTKRP_SPF, TTM_SPF):
    if not os.path.isfile(prog):
        die(f"missing SPF program {prog}")


def sparsec(args, threads: int) -> str:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    p = subprocess.run([SPARSEC] + args, cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        die(f"`sparsec {' '.join(args)}` failed (status {p.returncode}):\n{p.stderr}{p.stdout}")
    return p.stdout


def phase_ms(output: str, phase: str) -> float:
    """The median of a phase line of `--time`, e.g. `  compute   median 0.077 ms, ...`."""
    m = re.search(rf"^\s*{phase}\s+median\s+([0-9.]+)\s*(ms|us|s)\b", output, re.MULTILINE)
    if not m:
        die(f"no `{phase}` median in sparsec's output:\n{output}")
    return float(m.group(1)) * {"ms": 1.0, "us": 1e-3, "s": 1e3}[m.group(2)]


def tns_dims_nnz(path: str):
    """Dimensions as sparsec reads a .tns without explicit sizes (the largest index per
    mode) and the number of entries."""
    raw = np.loadtxt(path, ndmin=2, comments="#")
    coords = raw[:, :-1].astype(np.int64)
    return tuple(int(d) for d in coords.max(axis=0)), len(raw)


def read_dense(path: str, dims) -> np.ndarray:
    """A dense result written by sparsec: a MatrixMarket array, or a .tns file (1-based
    coordinates, value last)."""
    if path.endswith(".mtx"):
        return np.asarray(scipy.io.mmread(path), dtype=np.float64).reshape(dims)
    with open(path) as f:
        toks = np.array(f.read().split(), dtype=np.float64).reshape(-1, len(dims) + 1)
    out = np.zeros(dims)
    idx = tuple(toks[:, m].astype(np.int64) - 1 for m in range(len(dims)))
    np.add.at(out, idx, toks[:, -1])
    return out


def check_same(what: str, spf_file: str, csf_file: str, dims):
    a, b = read_dense(spf_file, dims), read_dense(csf_file, dims)
    scale = np.maximum(np.abs(b), 1.0)
    err = float(np.max(np.abs(a - b) / scale)) if a.size else 0.0
    if not np.isfinite(err) or err > RTOL:
        die(f"{what}: the SPF COO and index-notation CSF outputs differ "
            f"(max |spf - csf| / max(|csf|, 1) = {err:.3e} > {RTOL:g})")
    return err


def factor(path_mtx: str, rows: int, rank: int, rng) -> str:
    """Write a rows x rank factor with uniform values in [-1, 1) as a MatrixMarket array;
    returns its path."""
    scipy.io.mmwrite(path_mtx, rng.uniform(-1.0, 1.0, (rows, rank)))
    return path_mtx


def geomean(xs):
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else float("nan")


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


tensors, skipped = [], []
for name in sorted(f for f in os.listdir(TENSOR_DIR) if f.endswith(".tns")):
    path = os.path.join(TENSOR_DIR, name)
    order = tns_order(path)
    if order != 3:
        skipped.append(f"{name[:-4]} (order {order})")
    else:
        tensors.append((name[:-4], path))
if not tensors:
    die(f"no order-3 .tns tensor in {TENSOR_DIR}")

print(f"sparsec: {SPARSEC}")
print(f"tensors: {TENSOR_DIR}; {RUNS} timed runs after 1 warm-up, medians; seed {SEED}")
if skipped:
    print(f"skipped, not of order 3: {', '.join(skipped)}")
print(f"load average before: {load_average()} ({os.cpu_count()} cores)")

rows = []  # (kernel, tensor, nnz, R, threads, spf_ms, csf_ms, csf_compute_ms, err)
tmp = tempfile.mkdtemp(prefix="spf_tensors_")
try:
    rng = np.random.default_rng(SEED)
    for stem, path in tensors:
        (I, J, K), nnz = tns_dims_nnz(path)
        for R in RANKS:
            base = os.path.join(tmp, f"{stem}_R{R}")
            c = factor(base + "_C.mtx", J, R, rng)
            d = factor(base + "_D.mtx", K, R, rng)
            u = factor(base + "_U.mtx", K, R, rng)
            ttm_ok = I * J * R <= MAX_TTM_OUTPUT
            if not ttm_ok:
                print(f"skipped TTM on {stem}, R={R}: dense output {I}x{J}x{R} = "
                      f"{I * J * R:.3g} doubles > {MAX_TTM_OUTPUT:g}")
            for T in THREADS:
                common = ["--threads", str(T), "--time", str(RUNS)]
                factors = ["-i", f"C:{c}", "-i", f"D:{d}"]
                cases = [("mttkrp", MTTKRP_SPF, factors, MTTKRP_EXPR, factors, "A", (I, R),
                          ".mtx")]
                if ttm_ok:
                    cases.append(("ttm", TTM_SPF, ["-i", f"U:{u}"], TTM_EXPR, ["-i", f"U:{u}"],
                                  "Y", (I, J, R), ".tns"))
                for kernel, prog, spf_in, expr, csf_in, out, dims, ext in cases:
                    spf_out = f"{base}_{kernel}_t{T}_spf{ext}"
                    csf_out = f"{base}_{kernel}_t{T}_csf{ext}"
                    o = sparsec(["spf", "run", prog, "-i", f"B:{path}"] + spf_in + common
                                + ["-o", f"{out}:{spf_out}"], T)
                    spf_ms = phase_ms(o, "run")
                    o = sparsec(["run", expr, "-f", "B:csf", "-i", f"B:{path}"] + csf_in
                                + common + ["-o", f"{out}:{csf_out}"], T)
                    comp = phase_ms(o, "compute")
                    csf_ms = phase_ms(o, "prepare") + comp + phase_ms(o, "assembly")
                    err = check_same(f"{kernel} on {stem}, R={R}, {T} threads",
                                     spf_out, csf_out, dims)
                    os.remove(spf_out)
                    os.remove(csf_out)
                    rows.append((kernel, stem, nnz, R, T, spf_ms, csf_ms, comp, err))
                    print(f"  {kernel:<7} {stem:<22} R={R:<3} {T}t  spf {spf_ms:8.3f} ms  "
                          f"csf {csf_ms:8.3f} ms  ok (max rel diff {err:.1e})", flush=True)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"load average after: {load_average()}")
print()
print("SPF COO ms: `spf run` median (checks, output allocation, kernel); CSF ms: prepare +")
print("compute + assembly medians of `sparsec run`; ratio = SPF / CSF (above 1: CSF faster).")
print("Every output pair agreed to 1e-9 (relative).")
print()
hdr = ("| kernel | tensor | nnz | R | threads | SPF COO ms | index-notation CSF ms "
       "| CSF compute ms | SPF/CSF |")
print(hdr)
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for kernel, stem, nnz, R, T, s, c, comp, _ in sorted(rows, key=lambda r: r[0]):
    ratio = s / c if c > 0 else float("nan")
    print(f"| {kernel} | {stem} | {nnz} | {R} | {T} | {s:.3f} | {c:.3f} | {comp:.3f} "
          f"| {ratio:.2f} |")
print()
print("| kernel | threads | geomean SPF/CSF | min | max | cases |")
print("|---|---:|---:|---:|---:|---:|")
for kernel in ("mttkrp", "ttm"):
    for T in THREADS:
        ratios = [s / c for k, _, _, _, t, s, c, _, _ in rows
                  if k == kernel and t == T and c > 0 and s > 0]
        if not ratios:
            print(f"| {kernel} | {T} | NOT MEASURED | | | 0 |")
            continue
        print(f"| {kernel} | {T} | {geomean(ratios):.2f} | {min(ratios):.2f} "
              f"| {max(ratios):.2f} | {len(ratios)} |")
zero = [r for r in rows if r[5] <= 0 or r[6] <= 0]
if zero:
    print("\nleft out of the geometric means (a median printed as 0.000 ms): "
          + ", ".join(f"{k} {s} R={R} {T}t" for k, s, _, R, T, *_ in zero))
