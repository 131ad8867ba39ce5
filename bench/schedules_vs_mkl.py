#!/usr/bin/env python3
"""Benchmark sparsec's kernels against Intel MKL, TACO and SciPy, side by side.

In one run, at 1 and 2 threads: SpMV, SpMM, SpGEMM (A*A), MTTKRP, TTV and SDDMM, with
sparsec's default schedule and the CPU schedules of the scheduling paper
(/work/shared/spec/scheduling.md section 6), driven through the `sparsec run` CLI; MKL's
inspector-executor sparse BLAS through `sparse_dot_mkl`; TACO's generated kernels through
its command line tool (default C flags and `-march=native`; built from its public source
outside the repository, or skipped with a message); and scipy/numpy (single-threaded,
reported once per kernel and input), on identical data. Prints a table of medians,
sparsec/MKL, sparsec/TACO, sparsec/SciPy and sparsec/best-peer ratios with geometric
means, the 1-to-2-thread speed-ups, SpMV bandwidth next to STREAM-style copy and triad
bandwidths measured in the same run, and writes a CSV.

    python3 bench/schedules_vs_mkl.py --taco /path/to/taco/build/bin/taco   # full run
    python3 bench/schedules_vs_mkl.py --quick --runs 3 \\
        --matrices bcsstk13,cage10 --generated none           # a quick check

See bench/README.md ("Kernels vs MKL, TACO and SciPy") for what is measured.
"""
import argparse
import csv
import dataclasses
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Tuple

# numpy's own BLAS stays single-threaded (SciPy is the single-threaded reference); MKL's
# thread count is set per measurement with mkl_set_num_threads, sparsec's per process.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# MKL's OpenMP threads (libiomp5, in this process) spin this long (ms) after each MKL
# call; the script waits it out before starting sparsec, whose threads would otherwise
# share the cores with them.
os.environ.setdefault("KMP_BLOCKTIME", "200")
MKL_SPIN_S = (int(os.environ["KMP_BLOCKTIME"]) / 1e3 if os.environ["KMP_BLOCKTIME"].isdigit()
              else 1.0) + 0.05

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "/work/shared/data"
REEXEC_MARK = "SPARSEC_BENCH_MKL_REEXEC"
RANK = 32  # dense columns: SpMM's k, SDDMM's k, MTTKRP's j


def pip_install(packages: List[str]) -> None:
    """Install packages into the user site (into the environment inside a virtualenv);
    failures are reported, not fatal."""
    in_venv = sys.prefix != sys.base_prefix
    cmd = [sys.executable, "-m", "pip", "install", "-q", *([] if in_venv else ["--user"]),
           *packages]
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    if subprocess.call(cmd) != 0:
        print(f"warning: pip install {' '.join(packages)} failed", file=sys.stderr)
    import site
    import importlib

    user_site = site.getusersitepackages()
    if user_site not in sys.path:
        sys.path.append(user_site)
    importlib.invalidate_caches()


def have_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def have_distribution(name: str) -> bool:
    from importlib import metadata

    try:
        metadata.distribution(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def ensure_packages() -> None:
    missing = [pkg for mod, pkg in (("numpy", "numpy"), ("scipy", "scipy"),
                                    ("sparse_dot_mkl", "sparse-dot-mkl"))
               if not have_module(mod)]
    if not have_distribution("mkl"):  # the MKL runtime: shared libraries, no module
        missing.append("mkl")
    if missing:
        pip_install(missing)


ensure_packages()
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402
import scipy.sparse as sp  # noqa: E402


# --------------------------------------------------------------------------------------
# MKL set-up


def find_mkl_rt() -> Optional[str]:
    """Path of libmkl_rt.so.N shipped by the pip `mkl` package (it installs the libraries
    into PREFIX/lib, e.g. ~/.local/lib for a user install, which is on no loader path)."""
    from importlib import metadata

    try:
        files = metadata.distribution("mkl").files or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if re.fullmatch(r"libmkl_rt\.so(\.\d+)*", os.path.basename(str(f))):
            path = os.path.realpath(str(f.locate()))
            if os.path.exists(path):
                return path
    return None


def load_mkl():
    """Import sparse_dot_mkl with MKL's runtime found. Returns (module, how it was found)
    or (None, why not).

    sparse_dot_mkl loads libmkl_rt with ctypes by name, which the pip `mkl` package's
    location does not satisfy; it honours $MKL_RT (a full path), which is set here. If
    libmkl_rt then still cannot resolve its own dependencies, the script re-executes itself
    with the library folder on LD_LIBRARY_PATH (read by the loader only at start-up)."""
    lib = find_mkl_rt()
    if lib and not os.environ.get("MKL_RT"):
        os.environ["MKL_RT"] = lib
    try:
        import sparse_dot_mkl
    except (ImportError, OSError) as e:
        if lib and not os.environ.get(REEXEC_MARK):
            libdir = os.path.dirname(lib)
            old = os.environ.get("LD_LIBRARY_PATH", "")
            env = dict(os.environ, **{REEXEC_MARK: "1",
                                      "LD_LIBRARY_PATH": libdir + (":" + old if old else "")})
            print(f"MKL: import failed ({first_line(str(e))}); re-running with "
                  f"LD_LIBRARY_PATH={libdir}", file=sys.stderr, flush=True)
            os.execve(sys.executable, [sys.executable, *sys.argv], env)
        return None, f"NOT MEASURED: sparse_dot_mkl cannot load MKL: {first_line(str(e))}"
    # Smoke test: one small product against scipy, and the thread control.
    try:
        a = sp.random(200, 150, density=0.05, format="csr", random_state=1, dtype=np.float64)
        x = np.linspace(-1.0, 1.0, 150)
        if not np.allclose(sparse_dot_mkl.dot_product_mkl(a, x), a @ x):
            return None, "NOT MEASURED: sparse_dot_mkl smoke test: wrong SpMV result"
        sparse_dot_mkl.mkl_set_num_threads(1)
        version = sparse_dot_mkl.mkl_get_version_string()
    except Exception as e:  # noqa: BLE001 - any failure disables the peer, with the reason
        return None, f"NOT MEASURED: sparse_dot_mkl smoke test failed: {first_line(str(e))}"
    how = (f"LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH')} (re-executed)"
           if os.environ.get(REEXEC_MARK) else f"MKL_RT={os.environ.get('MKL_RT')}")
    return sparse_dot_mkl, f"{first_line(version)}, loaded with {how}"


class MklSparseApi:
    """ctypes access to MKL's sparse BLAS on the library and handle type that sparse_dot_mkl
    loaded: `fn(name, *argtypes)` is the function `name` returning a status. Own
    prototypes (CFUNCTYPE on the same library) leave sparse_dot_mkl's function objects
    untouched."""

    def __init__(self, mkl):
        import ctypes as c

        self.iface = mkl._mkl_interface
        self.lib, self.mkl_int = self.iface._cfunctions._libmkl, self.iface.MKL.MKL_INT
        self.handle_t, self.descr_t = self.iface.sparse_matrix_t, self.iface.matrix_descr
        self.ptr, self.c_int, self.c_double = c.c_void_p, c.c_int, c.c_double
        self._cfunctype = c.CFUNCTYPE

    def fn(self, name, *argtypes):
        return self._cfunctype(self.c_int, *argtypes)((name, self.lib))


class MklHandleCall:
    """A timed MKL call on a handle made once: `self.call()` returns MKL's status and
    writes `self.out`; `close` destroys `self.handle`."""

    def __call__(self) -> np.ndarray:
        status = self.call()
        if status != 0:
            raise RuntimeError(f"MKL sparse status {status}")
        return self.out

    def close(self) -> None:
        if self.handle is not None:
            self.iface._destroy_mkl_handle(self.handle)
            self.handle = None


class MklExecutor(MklHandleCall):
    """MKL's inspector-executor API used as designed, on the handle type and library that
    sparse_dot_mkl loaded: the handle is created once, with a hint of the expected number
    of calls and mkl_sparse_optimize (the inspector, untimed), and the output is
    preallocated, so a timed call is mkl_sparse_d_mv / mkl_sparse_d_mm alone (the
    executor). dot_product_mkl instead checks its arguments, creates and destroys a handle
    and allocates the output on every call (about 0.1 ms; see the overhead line)."""

    NON_TRANSPOSE = 10  # SPARSE_OPERATION_NON_TRANSPOSE
    ROW_MAJOR = 101  # SPARSE_LAYOUT_ROW_MAJOR

    def __init__(self, mkl, a: sp.csr_matrix, dense_in: np.ndarray, expected_calls: int):
        api = MklSparseApi(mkl)
        c, iface, mkl_int, fn = api, api.iface, api.mkl_int, api.fn
        h_t, d_t, ptr = api.handle_t, api.descr_t, api.ptr

        self.iface, self.a, self.b = iface, a, line_aligned(dense_in)
        self.descr = d_t()  # general matrix
        self.handle, _, _ = iface._create_mkl_sparse(a)
        n = c.c_int(self.NON_TRANSPOSE)
        if self.b.ndim == 1:
            self.out = line_aligned(np.zeros(a.shape[0]))
            hint = fn("mkl_sparse_set_mv_hint", h_t, c.c_int, d_t, mkl_int)
            status = hint(self.handle, n, self.descr, mkl_int(expected_calls))
            mv = fn("mkl_sparse_d_mv", c.c_int, c.c_double, h_t, d_t, ptr, c.c_double, ptr)
            args = (n, 1.0, self.handle, self.descr, self.b.ctypes.data, 0.0,
                    self.out.ctypes.data)
            self.call = lambda: mv(*args)
        else:
            cols = self.b.shape[1]
            self.out = line_aligned(np.zeros((a.shape[0], cols)))
            hint = fn("mkl_sparse_set_mm_hint", h_t, c.c_int, d_t, c.c_int, mkl_int, mkl_int)
            status = hint(self.handle, n, self.descr, self.ROW_MAJOR, mkl_int(cols),
                          mkl_int(expected_calls))
            mm = fn("mkl_sparse_d_mm", c.c_int, c.c_double, h_t, d_t, c.c_int, ptr, mkl_int,
                    mkl_int, c.c_double, ptr, mkl_int)
            args = (n, 1.0, self.handle, self.descr, self.ROW_MAJOR, self.b.ctypes.data,
                    mkl_int(cols), mkl_int(cols), 0.0, self.out.ctypes.data, mkl_int(cols))
            self.call = lambda: mm(*args)
        optimize = fn("mkl_sparse_optimize", h_t)
        # Hints and optimization may be declined (status 6, not supported): still valid.
        started = time.perf_counter()
        self.optimized = status == 0 and optimize(self.handle) == 0
        self.inspect_ms = 1e3 * (time.perf_counter() - started)


def set_mkl_threads(mkl, threads: int) -> Optional[str]:
    """Set MKL's thread count in this process; returns a problem or None."""
    mkl.mkl_set_num_threads(threads)
    got = mkl.mkl_get_max_threads()
    return None if got == threads else f"mkl_get_max_threads() = {got} after setting {threads}"


# --------------------------------------------------------------------------------------
# Generated inputs (written once as MatrixMarket / FROSTT files, read back by both sides)


def random_values(rng, n: int) -> np.ndarray:
    """Values in [-1, -0.1] U [0.1, 1], like sparsec's generators."""
    magnitude = rng.uniform(0.1, 1.0, n)
    return np.where(rng.random(n) < 0.5, magnitude, -magnitude)


def distinct_sorted(rng, total: int, k: int) -> np.ndarray:
    """k distinct sorted integers of range(total) (draw, deduplicate, redraw the rest)."""
    out = np.empty(0, dtype=np.int64)
    while len(out) < k:
        out = np.unique(np.concatenate([out, rng.integers(0, total, k - len(out))]))
    return out


def rows_with_counts(rng, counts: np.ndarray, cols: int) -> Tuple[np.ndarray, np.ndarray]:
    """(row, col) of a matrix whose row r holds min(counts[r], cols) distinct, uniformly
    random columns, sorted row-major."""
    counts = np.minimum(np.asarray(counts, dtype=np.int64), cols)
    rows = len(counts)
    heavy = np.flatnonzero(counts * 4 > cols)  # sample these without replacement
    parts = [r * cols + np.sort(rng.choice(cols, counts[r], replace=False)) for r in heavy]
    light = counts.copy()
    light[heavy] = 0
    linear = np.empty(0, dtype=np.int64)
    need = light
    while need.any():
        r = np.repeat(np.arange(rows, dtype=np.int64), need)
        linear = np.unique(np.concatenate([linear, r * cols + rng.integers(0, cols, len(r))]))
        need = light - np.bincount(linear // cols, minlength=rows)
    linear = np.sort(np.concatenate([linear, *parts]))
    return linear // cols, linear % cols


def gen_uniform(rng, rows: int, cols: int, nnz: int):
    linear = distinct_sorted(rng, rows * cols, nnz)
    return linear // cols, linear % cols


def gen_powerlaw(rng, rows: int, cols: int, per_row: float, exponent: float = 1.0):
    """sparsec's `powerlaw:PER_ROW` (generate::power_law): the row of (random) rank r gets
    a share of rows*PER_ROW proportional to r^-exponent, rounded randomly."""
    w = np.arange(1, rows + 1, dtype=np.float64) ** -exponent
    expected = rows * per_row * w[rng.permutation(rows)] / w.sum()
    whole = np.floor(expected)
    counts = whole.astype(np.int64) + (rng.random(rows) < expected - whole)
    return rows_with_counts(rng, counts, cols)


def gen_banded(rng, n: int, per_row: float, half_width: int):
    """Row r holds Poisson(per_row) distinct columns within half_width of the diagonal (a
    finite-element-like band): x is read near the diagonal and stays in cache, so the
    matrix streams as STREAM's arrays do."""
    width = 2 * half_width + 1
    counts = np.minimum(rng.poisson(per_row, n), width)
    offsets = rng.random((n, width)).argsort(axis=1)
    keep = np.arange(width)[None, :] < counts[:, None]
    rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], (n, width))[keep]
    cols = rows + offsets[keep] - half_width
    inside = (cols >= 0) & (cols < n)
    linear = np.sort(rows[inside] * n + cols[inside])
    return linear // n, linear % n


def skew_parameters(rows: int, nnz: int, growth: float = 5.0) -> Tuple[float, float]:
    """K, C of sparsec's `skewed:K,C` (row i holds round(K*C^i) nonzeros) with
    C^rows = e^growth (the last row is ~150x the first) and about nnz nonzeros in all."""
    c = math.exp(growth / rows)
    k = nnz * (c - 1.0) / (c ** rows - 1.0)
    return k, c


def gen_skewed(rng, rows: int, cols: int, k: float, c: float):
    counts = np.rint(k * c ** np.arange(rows, dtype=np.float64)).astype(np.int64)
    return rows_with_counts(rng, counts, cols)


def write_matrix(path: str, rows: int, cols: int, coords, rng) -> None:
    r, c = coords
    m = sp.coo_matrix((random_values(rng, len(r)), (r, c)), shape=(rows, cols))
    tmp = path + ".tmp.mtx"
    scipy.io.mmwrite(tmp, m, symmetry="general")
    os.replace(tmp, path)


def write_tensor(path: str, coords: np.ndarray, rng) -> None:
    vals = random_values(rng, len(coords))
    tmp = path + ".tmp"
    with open(tmp, "w") as f:  # FROSTT: 1-based coordinates, then the value
        np.savetxt(f, np.column_stack([coords + 1, vals]),
                   fmt=["%d"] * coords.shape[1] + ["%.17g"])
    os.replace(tmp, path)


def short(n: float) -> str:
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{int(n // div)}{suffix}"
    return str(int(n))


@dataclasses.dataclass
class Input:
    name: str
    path: str
    order: int  # 2 (matrix) or 3 (tensor)
    note: str = ""


def generated_inputs(dir_: str, which: List[str], quick: bool, seed: int) -> List[Input]:
    """Build (or reuse from the cache dir) the generated inputs named in `which`."""
    s = 10 if quick else 1
    n, nnz = 1_000_000 // s, 10_000_000 // s
    sk_rows = 100_000 // s
    sk_k, sk_c = skew_parameters(sk_rows, nnz)
    t_dim, t_nnz = 1000, 2_000_000 // s
    specs = {
        # name: (file stem, order, generator of coords, dims, note)
        "uniform": (f"uniform_{short(n)}x{short(n)}_{short(nnz)}", 2,
                    lambda rng: gen_uniform(rng, n, n, nnz), (n, n), "uniform random"),
        "powerlaw": (f"powerlaw_{short(n)}x{short(n)}_10perrow", 2,
                     lambda rng: gen_powerlaw(rng, n, n, 10.0), (n, n),
                     "sparsec powerlaw:10 (Zipf rows)"),
        "skewed": (f"skewed_{short(sk_rows)}x{short(sk_rows)}_{short(nnz)}", 2,
                   lambda rng: gen_skewed(rng, sk_rows, sk_rows, sk_k, sk_c),
                   (sk_rows, sk_rows), f"sparsec skewed:{sk_k:.4g},{sk_c:.8g}"),
        "tensor": (f"uniform3_{t_dim}x{t_dim}x{t_dim}_{short(t_nnz)}", 3,
                   lambda rng: distinct_sorted(rng, t_dim ** 3, t_nnz), (t_dim,) * 3,
                   "uniform random order-3"),
        # Last, so that the inputs above keep their seeds.
        "banded": (f"banded_{short(n)}x{short(n)}_10perrow", 2,
                   lambda rng: gen_banded(rng, n, nnz / n, 16), (n, n),
                   "10 a row on average within 16 of the diagonal"),
    }
    out = []
    unknown = set(which) - set(specs)
    if unknown:
        sys.exit(f"--generated: unknown {', '.join(sorted(unknown))}")
    for i, key in enumerate(specs):  # seed + i: each input's data is fixed by its name
        if key not in which:
            continue
        stem, order, gen, dims, note = specs[key]
        path = os.path.join(dir_, stem + (".mtx" if order == 2 else ".tns"))
        if not os.path.exists(path):
            t0 = time.perf_counter()
            rng = np.random.default_rng(seed + i)
            if order == 2:
                write_matrix(path, *dims, gen(rng), rng)
            else:
                write_tensor(path, np.column_stack(np.unravel_index(gen(rng), dims)), rng)
            log(f"generated {path} in {time.perf_counter() - t0:.1f} s")
        out.append(Input(stem, path, order, note))
    return out


def shared_inputs(names: str, folder: str, ext: str, order: int) -> List[Input]:
    """Files of a shared data folder (`all`, `none` or a comma list of stems); tensors of
    another order than `order` are skipped."""
    if names == "none" or not os.path.isdir(folder):
        return []
    stems = sorted(f[: -len(ext)] for f in os.listdir(folder) if f.endswith(ext))
    if names != "all":
        wanted = names.split(",")
        unknown = [w for w in wanted if w not in stems]
        if unknown:
            sys.exit(f"unknown inputs in {folder}: {', '.join(unknown)}")
        stems = [s for s in stems if s in wanted]
    out = []
    for stem in stems:
        path = os.path.join(folder, stem + ext)
        if order == 3 and tns_order(path) != 3:
            continue
        out.append(Input(stem, path, order))
    return out


def tns_order(path: str) -> int:
    with open(path) as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                return len(line.split()) - 1
    return 0


# --------------------------------------------------------------------------------------
# Loading inputs on the Python side (from the very files sparsec reads)


def load_matrix(path: str) -> sp.csr_matrix:
    a = sp.csr_matrix(scipy.io.mmread(path), dtype=np.float64)
    a.sum_duplicates()
    if a.nnz < 2 ** 31 and a.shape[0] < 2 ** 31 and a.shape[1] < 2 ** 31:
        a.indices = a.indices.astype(np.int32)  # MKL's LP64 interface; no copy per call
        a.indptr = a.indptr.astype(np.int32)
    return a


def load_tensor(path: str):
    raw = np.loadtxt(path, ndmin=2)
    coords = raw[:, :-1].astype(np.int64) - 1
    dims = tuple(int(d) for d in coords.max(axis=0) + 1)
    linear, inverse = np.unique(np.ravel_multi_index(coords.T, dims), return_inverse=True)
    vals = np.bincount(inverse.ravel(), weights=raw[:, -1])  # duplicates summed
    return np.column_stack(np.unravel_index(linear, dims)), vals, dims


def line_aligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `a` whose data starts on a 64-byte boundary. NumPy starts
    large arrays 16 bytes into a cache line; vector loads of 64 bytes then straddle two
    lines (MKL's SpMM on cage10 with 32 columns: 0.53 ms against 0.41 aligned), and
    sparsec's own arrays are aligned (`sparsec::memory::LineAligned`), so the peers get
    aligned inputs and outputs too."""
    raw = np.empty(a.nbytes + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def dense(*dims) -> np.ndarray:
    p = np.arange(int(np.prod(dims)), dtype=np.int64)
    return line_aligned((((7 * p) % 11).astype(np.float64) / 11.0 - 0.5).reshape(dims))


# --------------------------------------------------------------------------------------
# Kernels: the sparsec statement and schedules, and the Python peers


@dataclasses.dataclass
class Variant:
    label: str
    formats: List[str]  # -f NAME:FORMAT
    schedule: Optional[str]  # -s text; None = sparsec's default schedule
    # `sparsec run --tuned`: the formats and schedule `sparsec tune` chose, starting from
    # `formats`, for this input and thread count (`--tune SECONDS`).
    tuned: bool = False


@dataclasses.dataclass
class Kernel:
    name: str
    expr: str
    order: int  # order of the sparse input
    sparse: str  # name of the sparse input tensor in expr
    generate: List[str]  # -g NAME:KIND
    dims: List[str]  # -d VAR:SIZE
    variants: List[Variant]
    prepare: Callable  # loaded input -> state for the peers
    scipy: Callable  # state -> () -> result
    mkl_operand: Optional[str]  # MKL computes state["a"] @ state[mkl_operand]; None: no MKL
    mkl_note: str = ""
    peer_note: str = ""
    # The TACO command line's flags besides the expression and `-i` of the sparse input
    # (formats, generated dense operands, dimensions; `-c` for a sparse output, so that
    # each timed call assembles it as sparsec's does); None: TACO is not run.
    taco: Optional[List[str]] = None
    # TACO's output is sparse: its time is its compute median plus its one assembly, as
    # sparsec's is compute plus assembly.
    taco_assembles: bool = False
    # Other tensors of the statement read from the same file (A * A).
    also_reads: List[str] = dataclasses.field(default_factory=list)
    square_only: bool = False


def spmv_state(a):
    return {"a": a, "x": dense(a.shape[1])}


def spmm_state(a):
    return {"a": a, "b": dense(a.shape[1], RANK)}


def sddmm_state(b):
    # B's row of every stored entry, and D transposed to rows (both outside the timing).
    rows = np.repeat(np.arange(b.shape[0], dtype=np.int64), np.diff(b.indptr))
    return {"b": b, "rows": rows, "c": dense(b.shape[0], RANK),
            "dt": line_aligned(dense(RANK, b.shape[1]).T)}


SDDMM_BLOCK = 4096  # entries per block: the gathered rows stay in cache (3x faster)


def sddmm_numpy(s):
    """Sampled dense-dense product over B's pattern: for each stored (i, j),
    B(i,j) * dot(C[i,:], D[:,j]), as C[rows] . Dt[cols] row-wise dot products, in blocks."""
    b, rows, c, dt = s["b"], s["rows"], s["c"], s["dt"]

    def run():
        out = np.empty(b.nnz)
        for lo in range(0, b.nnz, SDDMM_BLOCK):
            hi = lo + SDDMM_BLOCK
            out[lo:hi] = np.einsum("ij,ij->i", np.take(c, rows[lo:hi], axis=0),
                                   np.take(dt, b.indices[lo:hi], axis=0))
        return out * b.data
    return run


def mttkrp_state(t):
    coords, vals, dims = t
    nnz = len(vals)
    # Sparse (I x nnz) indicator reducing per-nonzero rows into rows of A.
    s = sp.csr_matrix((np.ones(nnz), (coords[:, 0], np.arange(nnz))), shape=(dims[0], nnz))
    return {"s": s, "vals": vals[:, None], "k": coords[:, 1], "l": coords[:, 2],
            "c": dense(dims[1], RANK), "d": dense(dims[2], RANK)}


def mttkrp_numpy(s):
    return lambda: s["s"] @ (s["vals"] * s["c"][s["k"]] * s["d"][s["l"]])


SPGEMM_MAX_PRODUCTS = 3e8


def spgemm_products(a) -> float:
    """The scalar products of A * A: for each k, the entries of column k times those of
    row k."""
    column_counts = np.bincount(a.indices, minlength=a.shape[1]).astype(np.float64)
    return float(column_counts @ np.diff(a.indptr).astype(np.float64))


def ata_products(a) -> float:
    """The scalar products of A^T * A: each row k of A pairs every entry with every other."""
    row_counts = np.diff(a.indptr).astype(np.float64)
    return float(row_counts @ row_counts)


def products(kernel_name: str, a) -> Optional[float]:
    """The scalar products of a sparse-times-sparse kernel (None for other kernels)."""
    return {"spgemm": spgemm_products, "ata": ata_products}.get(kernel_name, lambda _: None)(a)


def spgemm_state(a):
    return {"a": a, "b": a}


def ttv_state(t):
    coords, vals, dims = t
    # Mode-3 unfolding over the nonempty (i, j) fibers, as a CSR matrix (built outside the
    # timing) times c: Y in `ss` stores those fibers only, and a row for every (i, j)
    # would not fit in memory where the first two modes are large.
    fibers, row = np.unique(coords[:, 0] * dims[1] + coords[:, 1], return_inverse=True)
    u = sp.csr_matrix((vals, (row.ravel(), coords[:, 2])), shape=(len(fibers), dims[2]))
    u.sum_duplicates()
    return {"u": u, "c": dense(dims[2])}


SPMV_A1 = "split(i,i0,i1,32),order(i0,i1,j),parallelize(i0,CPUThread,NoRaces)"
SPMV_BALANCED = "fuse(i,j,f),pos(f,p,A(i,j)),split(p,p0,p1,2048),parallelize(p0,CPUThread,Atomics)"
SPMM_A3 = ("split(i,i0,i1,8),pos(j,jpos,A(i,j)),split(jpos,jpos0,jpos1,8),"
           "order(i0,i1,jpos0,k,jpos1),parallelize(i0,CPUThread,NoRaces),"
           "parallelize(k,CPUVector,IgnoreRaces)")
SPMM_A12 = "pos(j,jpos,A(i,j)),split(jpos,jpos0,jpos1,8),order(i,jpos0,k,jpos1)"
MTTKRP_A5 = ("order(i,k,l,j),precompute(B(i,k,l)*D(l,j),j,j,w),split(i,i1,i2,32),"
             "parallelize(i1,CPUThread,NoRaces)")
SDDMM_ROWS = "split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)"


def variants(formats: List[str], schedules: Dict[str, Optional[str]], prefix: str = ""):
    return [Variant(prefix + label, formats, text) for label, text in schedules.items()]


SPGEMM_TACO_WORKSPACE = ["-s=reorder(i,k,j)", "-s=precompute(A(i,k)*B(k,j),j,j)"]

KERNELS = [
    Kernel("spmv", "y(i) = A(i,j) * x(j)", 2, "A", ["x:dense"], [],
           variants(["A:csr"], {"default": None, "A.1": SPMV_A1, "balanced": SPMV_BALANCED})
           + variants(["A:sell:16"], {"sell:16": None}),
           spmv_state, lambda s: (lambda: s["a"] @ s["x"]), "x",
           peer_note="scipy: A @ x (CSR); MKL: mkl_sparse_d_mv; TACO: its CLI's kernel",
           taco=["-f=A:ds", "-g=x:r"]),
    Kernel("spmm", "C(i,k) = A(i,j) * B(j,k)", 2, "A", ["B:dense"], [f"k:{RANK}"],
           variants(["A:csr"], {"default": None, "A.3": SPMM_A3, "A.12": SPMM_A12}),
           spmm_state, lambda s: (lambda: s["a"] @ s["b"]), "b",
           peer_note=f"scipy: A @ B (CSR x row-major dense, {RANK} columns); "
                     "MKL: mkl_sparse_d_mm, row-major; TACO: its CLI's kernel",
           taco=["-f=A:ds", "-g=B:d", f"-d=k:{RANK}"]),
    Kernel("mttkrp", "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", 3, "B", ["C:dense", "D:dense"],
           [f"j:{RANK}"],
           variants(["B:dss"], {"default": None, "A.5": MTTKRP_A5}, "dss ")
           + variants(["B:sss"], {"default": None, "A.5": MTTKRP_A5}, "sss "),
           mttkrp_state, mttkrp_numpy, None,
           mkl_note="MKL has no MTTKRP (sparse_dot_mkl offers sparse x dense products only)",
           peer_note="scipy/numpy: per-nonzero rows vals*C[k]*D[l] reduced by a sparse "
                     "I x nnz indicator (S @ W), as in kernels_vs_scipy.py; TACO: B in sss",
           taco=["-f=B:sss", "-g=C:d", "-g=D:d", f"-d=j:{RANK}"]),
    Kernel("sddmm", "A(i,j) = B(i,j) * C(i,k) * D(k,j)", 2, "B", ["C:dense", "D:dense"],
           [f"k:{RANK}"],
           variants(["A:csr", "B:csr", "D:dd:1,0"], {"default": None, "rows": SDDMM_ROWS}),
           sddmm_state, sddmm_numpy, None,
           mkl_note="MKL has no SDDMM (not in sparse_dot_mkl; MKL's sparse BLAS has none)",
           peer_note="numpy: B.data * einsum('ij,ij->i', C[rows], Dt[cols]) over B's pattern, "
                     f"in blocks of {SDDMM_BLOCK} entries (Dt = D transposed, made outside "
                     "the timing; sparsec likewise reads D column-major, dd:1,0); TACO: A "
                     "and B in ds, compute + one assembly",
           taco=["-f=A:ds", "-f=B:ds", "-g=C:d", "-g=D:d", f"-d=k:{RANK}"],
           taco_assembles=True),
    Kernel("spgemm", "C(i,j) = A(i,k) * B(k,j)", 2, "A", [], [],
           variants(["A:csr", "B:csr", "C:csr"], {"default": None}),
           spgemm_state, lambda s: (lambda: s["a"] @ s["b"]), "b",
           peer_note="A * A into CSR (sparsec's rows sorted); scipy: A @ A (CSR, unsorted "
                     "rows); MKL: dot_product_mkl (mkl_sparse_spmm); TACO: Gustavson with a "
                     "dense workspace (reorder + precompute), compute + one assembly",
           taco=["-f=A:ds", "-f=B:ds", "-f=C:ds", *SPGEMM_TACO_WORKSPACE],
           taco_assembles=True, also_reads=["B"], square_only=True),
    Kernel("ata", "C(i,j) = A(k,i) * A(k,j)", 2, "A", [], [],
           variants(["A:csr", "C:csr"], {"default": None}),
           lambda a: {"a": a}, lambda s: (lambda: s["a"].T @ s["a"]), None,
           mkl_note="MKL is not run for A^T * A (sparse_dot_mkl multiplies CSR by CSR only)",
           peer_note="A^T * A into CSR, A in CSR (sparsec's rows sorted); scipy: A.T @ A "
                     "(the CSC view of A times A, unsorted rows)"),
    Kernel("add", "C(i,j) = A(i,j) + B(i,j)", 2, "A", [], [],
           variants(["A:csr", "B:csr", "C:csr"], {"default": None}),
           lambda a: {"a": a}, lambda s: (lambda: s["a"] + s["a"]), None,
           mkl_note="MKL is not run for A + B (sparse_dot_mkl has no sparse sum)",
           peer_note="A + B into CSR with B = A (the same file), appended by sparsec on 1 "
                     "thread; scipy: A + A (CSR); TACO: compute + one assembly",
           taco=["-f=A:ds", "-f=B:ds", "-f=C:ds"], taco_assembles=True, also_reads=["B"]),
    Kernel("emul", "C(i,j) = A(i,j) * B(i,j)", 2, "A", [], [],
           variants(["A:csr", "B:csr", "C:csr"], {"default": None}),
           lambda a: {"a": a}, lambda s: (lambda: s["a"].multiply(s["a"])), None,
           mkl_note="MKL is not run for A .* B (sparse_dot_mkl has no element-wise product)",
           peer_note="A .* B into CSR with B = A (the same file); scipy: A.multiply(A) "
                     "(CSR); TACO: compute + one assembly",
           taco=["-f=A:ds", "-f=B:ds", "-f=C:ds"], taco_assembles=True, also_reads=["B"]),
    Kernel("ttv", "Y(i,j) = B(i,j,k) * c(k)", 3, "B", ["c:dense"], [],
           variants(["B:sss", "Y:ss"], {"default": None}),
           ttv_state, lambda s: (lambda: s["u"] @ s["c"]), None,
           mkl_note="MKL has no TTV",
           peer_note="Y in ss (DCSR); scipy: the mode-3 unfolding over the nonempty (i,j) "
                     "fibers (CSR, built outside the timing) @ c, a dense result per fiber; "
                     "TACO: compute + one assembly",
           taco=["-f=B:sss", "-f=Y:ss", "-g=c:r"], taco_assembles=True),
]


# --------------------------------------------------------------------------------------
# Measurement


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def first_line(text: str) -> str:
    """The first message of an error text on one line. A diagnostic that miette rendered
    (`Error:   x message` continued on lines starting with a box bar, then a chain of
    causes under arrows) is joined back: `Error: message: cause: ...`."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if line.strip()), None)
    if start is None:
        return "(no message)"
    parts = [lines[start]]
    for line in lines[start + 1:]:
        bar = re.match(r"^\s*\u2502\s?(.*)$", line)  # "│ message continued"
        cause = re.match(r"^\s*[\u2570\u251c]\u2500\u25b6\s*(.*)$", line)  # "╰─▶ cause"
        if cause:
            parts.append(": " + cause.group(1))
        elif bar and bar.group(1).strip():
            parts.append(bar.group(1))
        elif len(parts) > 1 and re.match(r"^\s{4,}\S", line) and "\u2502" not in line:
            parts.append(line)  # an indented continuation of a cause
        else:
            break
    text = " ".join(p.strip() for p in parts).replace(" : ", ": ").replace("\u00d7", "")
    return re.sub(r"\s+", " ", text).strip()


# Timed runs per measurement are raised until they take about this long, up to MAX_RUNS:
# a kernel of tens of microseconds timed over 7 runs moved by up to 2x from one process
# to the next on this machine (a stray interruption or a slow start decides the median).
MIN_TIMED_MS = 100.0
MAX_RUNS = 1001


def enough_runs(runs: int, one_ms: Optional[float], min_timed_ms: float = MIN_TIMED_MS,
                max_runs: int = MAX_RUNS) -> int:
    """`runs`, raised so that runs of `one_ms` each take about `min_timed_ms`, up to
    `max_runs`."""
    if one_ms is None or not one_ms > 0:
        return runs
    return max(runs, min(max_runs, math.ceil(min_timed_ms / one_ms)))


def time_ms(fn, runs: int) -> Tuple[float, float]:
    """(median, min) in ms of at least `runs` calls (see `enough_runs`, from the time of
    the warm-up call) after one warm-up call."""
    t0 = time.perf_counter()
    fn()
    runs = enough_runs(runs, (time.perf_counter() - t0) * 1e3)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, min(times) * 1e3


UNITS_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "μs": 1e-3, "ms": 1.0, "s": 1e3}


def parse_phase(output: str, phase: str, stat: str = "median") -> Optional[float]:
    """A statistic of a phase of `sparsec run --time` in ms, from a line such as
    `  compute   median 0.077 ms, min 0.055 ms, max 0.080 ms`."""
    m = re.search(rf"^\s*{phase}\b[^\n]*?\b{stat}\b[\s:=]*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
                  r"\s*(ns|us|µs|μs|ms|s)\b", output, re.MULTILINE | re.IGNORECASE)
    return float(m.group(1)) * UNITS_MS[m.group(2).lower()] if m else None


def parse_stored(output: str, tensor: str) -> Optional[int]:
    """Stored entries of an input from a line such as `A: 2003x2003 ds, 83883 stored`."""
    m = re.search(rf"^{re.escape(tensor)}: .*?(\d+) stored", output, re.MULTILINE)
    return int(m.group(1)) if m else None


@dataclasses.dataclass
class Row:
    kernel: str
    input: str
    nnz: int
    threads: int
    tool: str  # sparsec, mkl-dot, mkl-ie, scipy
    variant: str  # sparsec: schedule label; mkl-ie: optimized or not
    status: str = "ok"
    median_ms: float = float("nan")  # sparsec: compute + assembly
    min_ms: float = float("nan")  # fastest run (sparsec: the two phases' minima added)
    compute_ms: float = float("nan")
    assembly_ms: float = float("nan")
    gbps: float = float("nan")  # SpMV only
    copy_fraction: float = float("nan")  # gbps / STREAM copy at the same threads
    triad_fraction: float = float("nan")  # gbps / STREAM triad at the same threads
    ratio_mkl: float = float("nan")  # sparsec / the faster MKL row, same threads
    ratio_scipy: float = float("nan")  # sparsec / SciPy (single-threaded)
    ratio_taco: float = float("nan")  # sparsec / the faster TACO row, same threads
    ratio_best: float = float("nan")  # sparsec / the fastest peer (MKL, TACO same threads; SciPy)
    # Inspection before the timed runs, untimed there: mkl-ie's mkl_sparse_optimize, and
    # the tuned rows' `sparsec tune` (its search, conversions and compiles), in ms.
    inspect_ms: float = float("nan")
    choice: str = ""  # tuned rows: the formats and schedule `sparsec tune` chose

    @property
    def ok(self) -> bool:
        return self.status == "ok" and math.isfinite(self.median_ms)


# Formats that store padding zeros beside the entries (`NAME:FORMAT[:...]` spellings).
PADDED_FORMATS = ("sell", "ell", "bcsr", "dia")


def run_sparsec(args, kernel: Kernel, variant: Variant, inp: Input, threads: int,
                nnz: int, warnings: List[str]) -> Row:
    row = Row(kernel.name, inp.name, nnz, threads, "sparsec", variant.label)
    cmd = [args.sparsec, "run", *sparsec_command(kernel, variant, inp, threads)]
    if variant.schedule is not None:
        cmd += ["-s", variant.schedule]
    if variant.tuned:
        cmd.append("--tuned")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    runs, timed = args.runs, None
    # A second process with more runs when the first one's runs took little time.
    while timed is None or runs < enough_runs(args.runs, timed):
        if timed is not None:
            runs = enough_runs(args.runs, timed)
        try:
            p = subprocess.run(cmd + ["--time", str(runs)], capture_output=True, text=True,
                               env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            row.status = f"timeout: over {args.timeout} s"
            return row
        if p.returncode != 0:
            row.status = "unsupported: " + first_line(p.stderr or p.stdout)
            return row
        timed = ((parse_phase(p.stdout, "compute") or math.nan)
                 + (parse_phase(p.stdout, "assembl(?:y|e)") or 0.0))
        if not timed > 0:
            break
    compute = parse_phase(p.stdout, "compute")
    if compute is None:
        row.status = "failed: no compute median in the output of --time"
        return row
    assembly = parse_phase(p.stdout, "assembl(?:y|e)") or 0.0
    row.compute_ms, row.assembly_ms, row.median_ms = compute, assembly, compute + assembly
    row.min_ms = ((parse_phase(p.stdout, "compute", "min") or math.nan)
                  + (parse_phase(p.stdout, "assembl(?:y|e)", "min") or 0.0))
    stored = parse_stored(p.stdout, kernel.sparse)
    # Padded layouts store zeros beside the entries: only fewer entries than read is wrong.
    # A tuned row's formats are the tuner's, which may pad.
    padded = variant.tuned or any(
        f.split(":")[:2] in ([kernel.sparse, p_] for p_ in PADDED_FORMATS)
        for f in variant.formats)
    if stored is not None and (stored < nnz if padded else stored != nnz):
        warnings.append(f"{kernel.name}/{inp.name}: sparsec stores {stored} entries of "
                        f"{kernel.sparse}, Python {nnz}")
    return row


def sparsec_command(kernel: Kernel, variant: Variant, inp: Input, threads: int) -> List[str]:
    """The arguments of `sparsec run` or `sparsec tune` after the subcommand: the statement,
    formats, inputs, generated operands, dimensions and thread count."""
    cmd = [kernel.expr]
    for f in variant.formats:
        cmd += ["-f", f]
    for name in [kernel.sparse, *kernel.also_reads]:
        cmd += ["-i", f"{name}:{inp.path}"]
    for g in kernel.generate:
        cmd += ["-g", g]
    for d in kernel.dims:
        cmd += ["-d", d]
    return cmd + ["--threads", str(threads)]


@dataclasses.dataclass
class Tuning:
    """What `sparsec tune` chose for one kernel, input and thread count (cached by sparsec
    for `run --tuned`), or why it failed."""
    status: str = "ok"
    seconds: float = float("nan")
    choice: str = ""


def tune(args, kernel: Kernel, variant: Variant, inp: Input, threads: int) -> Tuning:
    cmd = [args.sparsec, "tune", *sparsec_command(kernel, variant, inp, threads),
           "--budget", str(args.tune), "--json"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                           timeout=args.timeout + 10 * args.tune)
    except subprocess.TimeoutExpired:
        return Tuning(status="tune timeout")
    if p.returncode != 0:
        return Tuning(status="tune failed: " + first_line(p.stderr or p.stdout))
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        return Tuning(status=f"tune failed: its --json output did not parse ({e})")
    formats = " ".join(f"{name}:{fmt_}" for name, fmt_ in sorted(out["formats"].items()))
    choice = formats + (f" -s {out['schedule']}" if out.get("schedule") else "")
    return Tuning(seconds=out["tuning_s"], choice=choice)


def run_peer(kernel: Kernel, inp: Input, nnz: int, threads: int, tool: str, fn,
             runs: int) -> Row:
    row = Row(kernel.name, inp.name, nnz, threads, tool, "")
    try:
        row.median_ms, row.min_ms = time_ms(fn, runs)
    except Exception as e:  # noqa: BLE001 - record and go on
        row.status = f"failed: {type(e).__name__}: {first_line(str(e))}"
    return row


TACO_FLAGS = "-O3 -ffast-math -std=c99"  # the TACO CLI's C compiler flags by default


def find_taco(given: Optional[str]) -> Tuple[Optional[str], str]:
    """The TACO command line tool (`--taco`, else $TACO, else `taco` on PATH), or None and
    why it is not measured."""
    path = given or os.environ.get("TACO") or shutil.which("taco")
    if not path:
        return None, ("NOT MEASURED: no TACO binary (build TACO from its public source as "
                      "bench/README.md says, then pass --taco PATH or set TACO)")
    if not os.access(path, os.X_OK):
        return None, f"NOT MEASURED: {path} is not an executable"
    return path, path


def taco_rows(args, kernel: Kernel, inp: Input, nnz: int, threads: int) -> List[Row]:
    """TACO's kernel for the statement through its command line (`-time`, which times
    the compiled kernel's compute function; a patched tool, see bench/README.md), with
    TACO's default C flags and with `-march=native` added. At more than one thread the
    outer loop is parallelized (`-s=parallelize(i,CPUThread,NoRaces)`, as TACO's own
    `compile` does)."""
    rows = []
    for variant, flags in (("default", TACO_FLAGS), ("-march=native", TACO_FLAGS + " -march=native")):
        row = Row(kernel.name, inp.name, nnz, threads, "taco", variant)
        out = os.path.join(args.dir, "taco_time.csv")
        if os.path.exists(out):
            os.remove(out)
        reads = [f"-i={name}:{inp.path}" for name in [kernel.sparse, *kernel.also_reads]]
        cmd = [args.taco, kernel.expr, *reads, *kernel.taco,
               f"-write-time={out}", f"-nthreads={threads}"]
        if threads > 1:
            cmd.append("-s=parallelize(i,CPUThread,NoRaces)")
        env = dict(os.environ, TACO_CFLAGS=flags, OMP_NUM_THREADS=str(threads))
        try:
            p = subprocess.run(cmd + [f"-time={args.runs}"], capture_output=True, text=True,
                               env=env, timeout=args.timeout, cwd=args.dir)
            timed = taco_median(out) if p.returncode == 0 else None
            runs = enough_runs(args.runs, timed)
            if runs > args.runs:
                # As for sparsec: more runs in a second process when they took little time.
                os.remove(out)
                p = subprocess.run(cmd + [f"-time={runs}"], capture_output=True, text=True,
                                   env=env, timeout=args.timeout, cwd=args.dir)
        except subprocess.TimeoutExpired:
            row.status = f"timeout: over {args.timeout} s"
            rows.append(row)
            continue
        if p.returncode != 0 or not os.path.exists(out):
            # TACO reports its refusals as an uncaught exception: keep its message.
            what = re.search(r"what\(\):\s*(.*)\n?\s*(.*)", p.stderr)
            reason = (" ".join(what.groups()).strip() if what
                      else first_line(p.stderr or p.stdout))
            row.status = "failed: TACO: " + reason
        else:
            with open(out) as fh:
                fields = fh.read().strip().split(",")
            # compileTime,assembleTime,mean,stdev,median (ms)
            row.compute_ms, row.assembly_ms = float(fields[4]), float(fields[1])
            row.median_ms = row.compute_ms + (row.assembly_ms if kernel.taco_assembles else 0)
        rows.append(row)
    return rows


def spmv_bytes(a: sp.csr_matrix) -> int:
    """Bytes SpMV moves with int64 indices and f64 values: the entries' values and
    column indices, row pointers and y, and x once."""
    rows, cols = a.shape
    return a.nnz * (8 + 8) + rows * 8 * 2 + cols * 8


def stream_copy(dir_: str, threads: List[int]) -> Tuple[Dict[int, Tuple[float, float]], str]:
    """Best STREAM-style (copy, triad) GB/s per thread count, from bench/stream_copy.c."""
    src = os.path.join(ROOT, "bench", "stream_copy.c")
    exe = os.path.join(dir_, "stream_copy")
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return {}, "no C compiler"
    p = subprocess.run([compiler, "-O3", "-march=native", "-fopenmp", src, "-o", exe],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {}, "stream_copy.c did not compile: " + first_line(p.stderr)
    out = {}
    for t in threads:
        p = subprocess.run([exe], capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS=str(t)))
        m = re.search(r"best_copy_gbps\s+([0-9.]+)\s+best_triad_gbps\s+([0-9.]+)", p.stdout)
        if m:
            out[t] = (float(m.group(1)), float(m.group(2)))
    return out, ""


def measure_input(args, inp: Input, kernels: List[Kernel], mkl,
                  stream: Dict[int, Tuple[float, float]],
                  warnings: List[str]) -> List[Row]:
    t0 = time.perf_counter()
    data = load_matrix(inp.path) if inp.order == 2 else load_tensor(inp.path)
    nnz = data.nnz if inp.order == 2 else len(data[1])
    log(f"== {inp.name}: nnz {nnz} (loaded in {time.perf_counter() - t0:.1f} s)")
    rows: List[Row] = []
    for kernel in (k for k in kernels if k.order == inp.order):
        if kernel.square_only and inp.order == 2 and data.shape[0] != data.shape[1]:
            continue
        count = products(kernel.name, data) if inp.order == 2 else None
        if count is not None and count > SPGEMM_MAX_PRODUCTS:
            log(f"  {kernel.name} skipped: {count:.2e} products "
                f"(over {SPGEMM_MAX_PRODUCTS:.0e}; its output would not fit in memory)")
            continue
        try:
            state = kernel.prepare(data)
        except (MemoryError, ValueError) as e:  # the peers' inputs; sparsec still runs
            log(f"  {kernel.name}: the peers' inputs could not be built "
                f"({type(e).__name__}: {first_line(str(e))}); peers skipped")
            state = None
        kernel_variants = [v for v in kernel.variants
                           if v.schedule is None or not args.default_only]
        tunings: Dict[int, Tuning] = {}
        if args.tune > 0:
            declared = kernel.variants[0]
            kernel_variants.append(Variant("tuned", declared.formats, None, tuned=True))
            for threads in args.threads:
                tunings[threads] = tune(args, kernel, declared, inp, threads)
        rounds = []
        for _ in range(args.rounds):
            round_rows = []
            for threads in args.threads:
                for variant in kernel_variants:
                    if variant.tuned and tunings[threads].status != "ok":
                        round_rows.append(Row(kernel.name, inp.name, nnz, threads, "sparsec",
                                              variant.label,
                                              status=tunings[threads].status))
                        continue
                    round_rows.append(run_sparsec(args, kernel, variant, inp, threads, nnz,
                                                  warnings))
                    if variant.tuned:
                        round_rows[-1].inspect_ms = 1e3 * tunings[threads].seconds
                        round_rows[-1].choice = tunings[threads].choice
                if state is not None and mkl is not None and kernel.mkl_operand is not None:
                    round_rows += mkl_rows(kernel, inp, nnz, threads, state, mkl, args.runs,
                                           warnings)
                if args.taco is not None and kernel.taco is not None:
                    round_rows += taco_rows(args, kernel, inp, nnz, threads)
            if state is not None:
                round_rows.append(run_peer(kernel, inp, nnz, 1, "scipy",
                                           kernel.scipy(state), args.runs))
            rounds.append(round_rows)
        kernel_rows = merge_rounds(rounds)
        add_ratios(kernel_rows)
        if kernel.name == "spmv":
            add_bandwidth(kernel_rows, spmv_bytes(data), stream)
        for r in kernel_rows:
            shown = f"{r.median_ms:.3f} ms" if r.ok else r.status
            log(f"  {r.kernel:6} t={r.threads} {r.tool:7} {r.variant:12} {shown}")
        rows += kernel_rows
        del state
    return rows


def merge_rounds(rounds: List[List[Row]]) -> List[Row]:
    """One row per measurement from interleaved rounds (each round measures every tool
    once, in the same order): the median over the rounds that ran of each time, and the
    fastest run of all. The machine drifts between slow and fast states that last seconds;
    interleaving spreads each tool's runs over the same states, so that no peer's figure
    comes from one state alone. A measurement that failed in every round keeps its first
    failure."""
    groups: Dict[Tuple[str, int, str], List[Row]] = {}
    for r in (r for round_rows in rounds for r in round_rows):
        groups.setdefault((r.tool, r.threads, r.variant), []).append(r)
    merged = []
    for same in groups.values():
        ok = [r for r in same if r.ok]
        if not ok:
            merged.append(same[0])
            continue
        row = dataclasses.replace(ok[0])
        for field in ("median_ms", "compute_ms", "assembly_ms"):
            values = [getattr(r, field) for r in ok if math.isfinite(getattr(r, field))]
            setattr(row, field, statistics.median(values) if values else float("nan"))
        row.min_ms = min((r.min_ms for r in ok if math.isfinite(r.min_ms)),
                         default=float("nan"))
        merged.append(row)
    return merged


def taco_median(out: str) -> Optional[float]:
    """The compute median in ms of TACO's `-write-time` file, if it wrote one."""
    if not os.path.exists(out):
        return None
    with open(out) as fh:
        fields = fh.read().strip().split(",")
    return float(fields[4]) if len(fields) > 4 else None


def mkl_rows(kernel: Kernel, inp: Input, nnz: int, threads: int, state, mkl, runs: int,
             warnings: List[str]) -> List[Row]:
    """MKL at `threads`: dot_product_mkl per call ("mkl-dot") and the inspector-executor
    with the inspection done once ("mkl-ie", made after setting the thread count, since
    mkl_sparse_optimize may partition the work for it). Both results are checked against
    scipy's."""
    problem = set_mkl_threads(mkl, threads)
    if problem:
        warnings.append(f"MKL threads: {problem}")
    a, b = state["a"], state[kernel.mkl_operand]
    expected = a @ b
    rows = []
    executor = None
    try:
        rows.append(run_peer(kernel, inp, nnz, threads, "mkl-dot",
                             lambda: mkl.dot_product_mkl(a, b), runs))
        if rows[-1].ok and not same_product(mkl.dot_product_mkl(a, b), expected):
            rows[-1].status = "failed: result differs from scipy's"
        if sp.issparse(b):
            return rows  # the inspector-executor API multiplies by dense operands only
        try:
            executor = MklExecutor(mkl, a, b, runs + 1)
        except Exception as e:  # noqa: BLE001 - record and go on
            rows.append(Row(kernel.name, inp.name, nnz, threads, "mkl-ie", "",
                            status=f"failed: {type(e).__name__}: {first_line(str(e))}"))
            return rows
        rows.append(run_peer(kernel, inp, nnz, threads, "mkl-ie", executor, runs))
        rows[-1].variant = "optimized" if executor.optimized else "not optimized"
        rows[-1].inspect_ms = executor.inspect_ms
        if rows[-1].ok and not np.allclose(executor.out, expected):
            rows[-1].status = "failed: result differs from scipy's"
        return rows
    finally:
        if executor is not None:
            executor.close()
        time.sleep(MKL_SPIN_S)  # let MKL's threads go to sleep before sparsec runs


def same_product(got, expected) -> bool:
    """Whether two products agree (sparse results compared entry by entry)."""
    if sp.issparse(got) or sp.issparse(expected):
        diff = abs(sp.csr_matrix(got) - sp.csr_matrix(expected))
        scale = max(abs(sp.csr_matrix(expected)).max(), 1.0)
        return diff.nnz == 0 or diff.max() <= 1e-9 * scale
    return np.allclose(got, expected)


def add_ratios(rows: List[Row]) -> None:
    """sparsec / MKL and sparsec / TACO at the same thread count (the faster of each
    one's rows), sparsec / SciPy (single-threaded), sparsec / the fastest of them."""
    mkl: Dict[int, float] = {}
    taco: Dict[int, float] = {}
    for r in rows:
        for prefix, fastest in (("mkl", mkl), ("taco", taco)):
            if r.tool.startswith(prefix) and r.ok:
                fastest[r.threads] = min(r.median_ms, fastest.get(r.threads, math.inf))
    scipy_ms = next((r.median_ms for r in rows if r.tool == "scipy" and r.ok), float("nan"))
    for r in rows:
        if r.tool == "sparsec" and r.ok:
            r.ratio_mkl = r.median_ms / mkl.get(r.threads, float("nan"))
            r.ratio_taco = r.median_ms / taco.get(r.threads, float("nan"))
            r.ratio_scipy = r.median_ms / scipy_ms
            best = min((t for t in (mkl.get(r.threads), taco.get(r.threads), scipy_ms)
                        if t is not None and math.isfinite(t)), default=float("nan"))
            r.ratio_best = r.median_ms / best


def add_bandwidth(rows: List[Row], nbytes: int,
                  stream: Dict[int, Tuple[float, float]]) -> None:
    for r in rows:
        if r.ok and r.median_ms > 0:
            r.gbps = nbytes / (r.median_ms * 1e-3) / 1e9
            copy, triad = stream.get(r.threads, (float("nan"), float("nan")))
            r.copy_fraction = r.gbps / copy
            r.triad_fraction = r.gbps / triad


# --------------------------------------------------------------------------------------
# Report


def fmt(x: float, digits: int = 3) -> str:
    return f"{x:.{digits}f}" if math.isfinite(x) else "-"


def print_table(headers: List[str], table: List[List[str]], right: set) -> None:
    widths = [max(len(h), *(len(row[i]) for row in table)) if table else len(h)
              for i, h in enumerate(headers)]

    def line(cells):
        return "| " + " | ".join(c.rjust(w) if i in right else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths))) + " |"

    print(line(headers))
    print("|" + "|".join(("-" * (w + 1) + ":") if i in right else "-" * (w + 2)
                         for i, w in enumerate(widths)) + "|")
    for row in table:
        print(line(row))


def call_overheads(mkl, runs: int = 200) -> str:
    """Median time of a call on a 1 x 1 matrix: the fixed cost of each peer call from
    Python (argument checks, MKL handle creation, output allocation), which dominates
    small inputs; sparsec's times are taken inside the process, around the kernel."""
    a = sp.csr_matrix(np.ones((1, 1)))
    x = np.ones(1)
    calls = {"scipy": lambda: a @ x}
    executor = None
    if mkl is not None:
        mkl.mkl_set_num_threads(1)
        calls["mkl-dot"] = lambda: mkl.dot_product_mkl(a, x)
        calls["mkl-ie"] = executor = MklExecutor(mkl, a, x, runs + 1)
    out = ", ".join(f"{name} {time_ms(fn, runs)[0] * 1e3:.1f} us" for name, fn in calls.items())
    if executor is not None:
        executor.close()
    return out


def report(rows: List[Row], kernels: List[Kernel], args, mkl_note: str, overheads: str,
           stream: Dict[int, Tuple[float, float]], stream_problem: str,
           load: Tuple[float, float],
           inputs: List[Input], warnings: List[str]) -> None:
    print(f"\nmedian over {args.rounds} interleaved rounds (each tool once a round) of "
          f"the median of at least {args.runs} runs after one warm-up (more where they take "
          f"under {MIN_TIMED_MS:.0f} ms in all, up to {MAX_RUNS}); times in ms; sparsec time = "
          "compute + assembly medians of `sparsec run --time`; ratios = sparsec / peer "
          "(below 1: sparsec faster); SciPy is single-threaded, so sparsec/SciPy at 2 "
          "threads compares with its 1-thread time")
    print(f"machine: {os.cpu_count()} CPUs; 1-minute load average {load[0]:.2f} before the "
          f"run, {load[1]:.2f} after it")
    if load[0] > 0.5:
        print("WARNING: other processes were busy before the run; with as many threads as "
              "cores, a parallel run then waits for a descheduled thread (2-thread times of "
              "small inputs jump to ~8 ms): rerun on an idle machine")
    print(f"MKL: {mkl_note}")
    for inp in inputs:
        if inp.note:
            print(f"input {inp.name}: {inp.note}, {inp.path}")
    print(f"per-call overhead of the Python peers (SpMV of a 1 x 1 matrix): {overheads}")
    if stream:
        print("STREAM copy / triad: " + ", ".join(
            f"{t} thread{'s' * (t > 1)} {stream[t][0]:.1f} / {stream[t][1]:.1f} GB/s"
            for t in sorted(stream)))
    elif stream_problem:
        print(f"STREAM: not measured ({stream_problem})")
    for kernel in kernels:
        krows = [r for r in rows if r.kernel == kernel.name]
        if not krows:
            continue
        print(f"\n### {kernel.name}: {kernel.expr}")
        print(kernel.peer_note)
        if kernel.mkl_note:
            print(kernel.mkl_note)
        spmv = kernel.name == "spmv"
        headers = ["input", "nnz", "thr", "tool", "schedule", "median ms", "asm ms",
                   "inspect ms", "sparsec/MKL", "sparsec/TACO", "sparsec/SciPy",
                   "sparsec/best"] + (["GB/s", "of copy", "of triad"] if spmv else [])
        table = []
        for r in krows:
            time_cell = fmt(r.median_ms) if r.ok else r.status.split(":")[0]
            cells = [r.input, str(r.nnz), str(r.threads), r.tool, r.variant, time_cell,
                     fmt(r.assembly_ms), fmt(r.inspect_ms), fmt(r.ratio_mkl, 2),
                     fmt(r.ratio_taco, 2), fmt(r.ratio_scipy, 2), fmt(r.ratio_best, 2)]
            if spmv:
                cells += [fmt(r.gbps, 2)] + [fmt(100 * f, 0) + "%" if math.isfinite(f) else "-"
                                             for f in (r.copy_fraction, r.triad_fraction)]
            table.append(cells)
        print_table(headers, table, right={1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
    print_geomeans(rows)
    print_tuned(rows)
    print_speedups(rows, args.threads)
    failed: Dict[str, List[str]] = {}
    for r in rows:
        if not r.ok:
            what = f"{r.kernel} {r.tool} {r.variant}".rstrip()
            failed.setdefault(r.status, [])
            if what not in failed[r.status]:
                failed[r.status].append(what)
    if failed:
        print("\nrows without a time:")
        for status, whats in failed.items():
            print(f"  {status}\n    ({', '.join(whats)})")
    for w in dict.fromkeys(warnings):
        print(f"WARNING: {w}")


def geomean(xs: List[float]) -> float:
    xs = [x for x in xs if math.isfinite(x) and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def print_geomeans(rows: List[Row]) -> None:
    groups: Dict[Tuple[str, str, int], List[Row]] = {}
    for r in rows:
        if r.tool == "sparsec":
            groups.setdefault((r.kernel, r.variant, r.threads), []).append(r)
    print("\n### geometric means of the ratios (over inputs where both were measured)")
    table = []
    for (kernel, variant, threads), rs in groups.items():
        vs_mkl = [r.ratio_mkl for r in rs if math.isfinite(r.ratio_mkl)]
        vs_taco = [r.ratio_taco for r in rs if math.isfinite(r.ratio_taco)]
        vs_scipy = [r.ratio_scipy for r in rs if math.isfinite(r.ratio_scipy)]
        vs_best = [r.ratio_best for r in rs if math.isfinite(r.ratio_best)]
        table.append([kernel, variant, str(threads),
                      fmt(geomean(vs_mkl), 3), str(len(vs_mkl)),
                      fmt(geomean(vs_taco), 3), str(len(vs_taco)),
                      fmt(geomean(vs_scipy), 3), str(len(vs_scipy)),
                      fmt(geomean(vs_best), 3), str(len(vs_best))])
    print_table(["kernel", "schedule", "thr", "sparsec/MKL", "n", "sparsec/TACO", "n",
                 "sparsec/SciPy", "n", "sparsec/best", "n"], table,
                right={2, 3, 4, 5, 6, 7, 8, 9, 10})


def print_tuned(rows: List[Row]) -> None:
    """What `sparsec tune` chose per input (`--tune`), its tuning time against MKL's
    inspection (`mkl_sparse_optimize`) at the same thread count, and the tuned time
    over the declared formats' default."""
    tuned = [r for r in rows if r.tool == "sparsec" and r.variant == "tuned" and r.ok]
    if not tuned:
        return
    by_key = {(r.kernel, r.input, r.threads, r.tool, r.variant): r for r in rows}
    print("\n### tuned: `sparsec tune --budget` choices (inspection untimed in the runs, "
          "as MKL's mkl_sparse_optimize is)")
    table = []
    for r in tuned:
        default = by_key.get((r.kernel, r.input, r.threads, "sparsec", "default"))
        mkl = next((m for m in rows if m.kernel == r.kernel and m.input == r.input
                    and m.threads == r.threads and m.tool == "mkl-ie"), None)
        table.append([r.kernel, r.input, str(r.threads), r.choice,
                      fmt(r.inspect_ms / 1e3, 2), fmt(mkl.inspect_ms if mkl else math.nan),
                      fmt(r.median_ms / default.median_ms if default and default.ok
                          else math.nan, 2)])
    print_table(["kernel", "input", "thr", "choice", "tune s", "MKL inspect ms",
                 "tuned/default"], table, right={2, 4, 5, 6})


def print_speedups(rows: List[Row], threads: List[int]) -> None:
    """sparsec's time at the fewest threads over its time at the most, per kernel and
    schedule: the geometric mean and the worst input."""
    if len(threads) < 2:
        return
    lo, hi = min(threads), max(threads)
    times: Dict[Tuple[str, str, str], Dict[int, float]] = {}
    for r in rows:
        if r.tool == "sparsec" and r.ok:
            times.setdefault((r.kernel, r.variant, r.input), {})[r.threads] = r.median_ms
    groups: Dict[Tuple[str, str], List[Tuple[float, str]]] = {}
    for (kernel, variant, inp), t in times.items():
        if lo in t and hi in t and t[hi] > 0:
            groups.setdefault((kernel, variant), []).append((t[lo] / t[hi], inp))
    print(f"\n### sparsec speed-up from {lo} to {hi} threads (time at {lo} / time at {hi})")
    table = [[kernel, variant, fmt(geomean([s for s, _ in xs]), 2),
              f"{min(xs)[0]:.2f} ({min(xs)[1]})", str(len(xs))]
             for (kernel, variant), xs in groups.items()]
    print_table(["kernel", "schedule", "geomean", "worst (input)", "n"], table,
                right={2, 4})


def write_csv(path: str, rows: List[Row]) -> None:
    fields = [f.name for f in dataclasses.fields(Row)]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for r in rows:
            w.writerow([getattr(r, name) for name in fields])


# --------------------------------------------------------------------------------------


def ensure_sparsec(path: str) -> None:
    if os.path.exists(path):
        return
    cmd = ["cargo", "build", "--release", "-p", "sparsec-cli"]
    log("$ " + " ".join(cmd))
    subprocess.check_call(cmd, cwd=ROOT)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=9, help="timed runs per measurement (median)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved rounds per input and kernel, each measuring every "
                         "tool once; figures are medians over the rounds")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--quick", action="store_true", help="generated inputs 10x smaller")
    ap.add_argument("--dir", default="/tmp/sparsec-sched-bench",
                    help="cache of generated inputs, stream_copy binary and the CSV")
    ap.add_argument("--matrices", default="all",
                    help=f"stems of {DATA}/matrices to use: all, none or a comma list")
    ap.add_argument("--tensors", default="all",
                    help=f"stems of {DATA}/tensors (order 3 only): all, none or a comma list")
    ap.add_argument("--generated", default="uniform,powerlaw,skewed,banded,tensor",
                    help="generated inputs: any of uniform,powerlaw,skewed,banded,tensor, "
                         "or none")
    ap.add_argument("--kernels", default="spmv,spmm,spgemm,ata,add,emul,mttkrp,ttv,sddmm",
                    help="kernels to run, comma-separated")
    ap.add_argument("--sparsec", default=os.path.join(ROOT, "target", "release", "sparsec"),
                    help="sparsec binary (built with cargo if missing)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per sparsec run")
    ap.add_argument("--seed", type=int, default=42, help="seed of the generated inputs")
    ap.add_argument("--csv", default=None, help="CSV output (default DIR/schedules_vs_mkl.csv)")
    ap.add_argument("--default-only", action="store_true",
                    help="sparsec's default schedule only (no paper schedules)")
    ap.add_argument("--tune", type=float, default=0.0, metavar="SECONDS",
                    help="also time `sparsec run --tuned` after `sparsec tune --budget "
                         "SECONDS` per kernel, input and thread count (0: not run)")
    ap.add_argument("--taco", default=None,
                    help="TACO's command line tool (default: $TACO, else `taco` on PATH; "
                         "TACO is skipped with a message when there is none)")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    known = {k.name for k in KERNELS}
    args.kernels = args.kernels.split(",")
    if not set(args.kernels) <= known:
        ap.error(f"--kernels: choose from {', '.join(sorted(known))}")
    args.generated = [] if args.generated == "none" else args.generated.split(",")
    if args.runs < 1 or args.rounds < 1 or min(args.threads) < 1:
        ap.error("--runs, --rounds and --threads must be positive")
    return args


def main():
    args = parse_args()
    os.makedirs(args.dir, exist_ok=True)
    ensure_sparsec(args.sparsec)
    mkl, mkl_note = load_mkl()
    log(f"MKL: {mkl_note}")
    args.taco, taco_note = find_taco(args.taco)
    log(f"TACO: {taco_note}")
    kernels = [k for k in KERNELS if k.name in args.kernels]
    inputs = (shared_inputs(args.matrices, os.path.join(DATA, "matrices"), ".mtx", 2)
              + shared_inputs(args.tensors, os.path.join(DATA, "tensors"), ".tns", 3)
              + generated_inputs(args.dir, args.generated, args.quick, args.seed))
    inputs = [i for i in inputs if any(k.order == i.order for k in kernels)]
    stream, stream_problem = ({}, "") if "spmv" not in args.kernels else \
        stream_copy(args.dir, args.threads)
    load_before = os.getloadavg()[0]
    warnings: List[str] = []
    rows: List[Row] = []
    for inp in inputs:
        rows += measure_input(args, inp, kernels, mkl, stream, warnings)
    print(f"TACO: {taco_note}")
    report(rows, kernels, args, mkl_note, call_overheads(mkl), stream, stream_problem,
           (load_before, os.getloadavg()[0]), inputs, warnings)
    out = args.csv or os.path.join(args.dir, "schedules_vs_mkl.csv")
    write_csv(out, rows)
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
