"""From `A @ x` to a scheduled kernel: sparsec for SciPy users.

This tutorial is a script: run it with `python docs/python_tutorial.py` after installing the
package (`pip install ./crates/sparsec-py`, see README.md). CI runs it, so every line below
works as written. Each step prints what it shows.
"""

import time

import numpy as np
import scipy.sparse as sp

import sparsec

rng = np.random.default_rng(0)

# ---------------------------------------------------------------------------------------
# 1. The operation you know.
#
# In SciPy, a sparse matrix-vector product is `A @ x`. In sparsec you write the same
# computation in index notation: `y(i) = A(i,j) * x(j)` says "y at i is the sum over j of
# A at (i,j) times x at j". Pass your SciPy and NumPy objects by the names the expression
# uses. The result is a NumPy array, because y is dense.
A = sp.random_array((2000, 2000), density=0.005, format="csr", rng=rng)
x = rng.standard_normal(2000)

y = sparsec.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x)
assert np.allclose(y, A @ x)
print("1. evaluate: y matches A @ x")

# ---------------------------------------------------------------------------------------
# 2. Compile once, call many times.
#
# `evaluate` compiles a kernel for the expression, the formats and the shapes, the first
# time; every later call with the same combination reuses it (in this process, from a memo;
# in a new process, from the disk cache in SPARSEC_CACHE_DIR, so the C compiler runs once
# per kernel, ever). To keep the kernel in hand, `compile` it and call it with new arrays.
spmv = sparsec.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
for step in range(3):
    x = rng.standard_normal(2000)
    assert np.allclose(spmv(A=A, x=x), A @ x)
print("2. compiled kernel called 3 times; memo:", sparsec.cache_info())

# ---------------------------------------------------------------------------------------
# 3. Sparse results come back as SciPy arrays.
#
# Say how the output is stored and you get that format: CSR, CSC and COO outputs are
# `scipy.sparse` arrays (their arrays are handed over without a copy), other formats a
# `sparsec.Tensor`. Here, sparse times sparse (SpGEMM) into CSR:
B = sp.random_array((2000, 2000), density=0.005, format="csr", rng=rng)
C = sparsec.evaluate(
    "C(i,j) = A(i,k) * B(k,j)", A=A, B=B, formats={"A": "csr", "B": "csr", "C": "csr"}
)
assert sp.issparse(C) and C.format == "csr"
assert np.allclose(C.toarray(), (A @ B).toarray())
print("3. SpGEMM:", repr(C))

# ---------------------------------------------------------------------------------------
# 4. Formats SciPy does not have.
#
# Each tensor can be stored in any sparsec format: doubly compressed rows ("dcsr") skip
# empty rows, "csf" compresses every level of a higher-order tensor, "ell", "dia",
# "bcsr:4x4", hash maps... Ask for one in `formats` and sparsec converts the input (a copy)
# and generates code for that layout. A `sparsec.Tensor` holds one explicitly.
T = sparsec.Tensor.from_scipy(A, "dcsr")
print("4. A as DCSR:", T)
y = sparsec.evaluate("y(i) = A(i,j) * x(j)", A=T, x=x)
assert np.allclose(y, A @ x)

# Expressions are not limited to products: element-wise sums, scalars, and tensors of any
# order (here a third-order tensor contracted with a vector).
D = sparsec.evaluate("D(i,j) = A(i,j) + 2 * B(i,j)", A=A, B=B, formats={"D": "csr"})
assert np.allclose(D.toarray(), (A + 2 * B).toarray())
X = np.zeros((30, 40, 50))
X[rng.integers(0, 30, 500), rng.integers(0, 40, 500), rng.integers(0, 50, 500)] = 1.0
v = rng.standard_normal(50)
M = sparsec.evaluate("M(i,j) = X(i,j,k) * v(k)", X=X, v=v, formats={"X": "csf"})
assert np.allclose(M, X @ v)
print("4. element-wise and third-order expressions match NumPy")

# ---------------------------------------------------------------------------------------
# 5. Same structure, new values: assemble once, compute many times.
#
# A sparse output's structure costs time to build. When only the input values change (a
# Newton iteration, a time step), `assemble` once and `compute` the values again in place.
spgemm = sparsec.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
out = spgemm.assemble(A=A, B=B)
A2 = A.copy()
A2.data = rng.standard_normal(A.nnz)
spgemm.compute(out, A=A2, B=B)
assert np.allclose(out.output().toarray(), (A2 @ B).toarray())
print("5. assemble + compute: values recomputed in place")

# ---------------------------------------------------------------------------------------
# 6. Scheduling: how the loops run.
#
# The default kernel runs its outermost loop on all threads when that is race-free. A
# schedule says more precisely how to run it: here, rows in chunks of 32 over 2 threads.
# The generated C shows the result; `loop_order` lists the loops.
scheduled = sparsec.compile(
    "y(i) = A(i,j) * x(j)",
    formats={"A": "csr"},
    schedule="split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)",
    threads=2,
)
assert np.allclose(scheduled(A=A, x=x), A @ x)
print("6. scheduled loops:", scheduled.loop_order)
print("   kernel C source starts:", scheduled.source.splitlines()[0])

# Load balancing over nonzeros instead of rows: fuse the two loops, iterate over A's
# positions, split them into chunks and resolve races on y with atomics.
balanced = sparsec.compile(
    "y(i) = A(i,j) * x(j)",
    formats={"A": "csr"},
    schedule="fuse(i,j,f),pos(f,p,A(i,j)),split(p,p0,p1,2048),parallelize(p0,CPUThread,Atomics)",
    threads=2,
)
assert np.allclose(balanced(A=A, x=x), A @ x)
print("6. nonzero-balanced loops:", balanced.loop_order)

# Or let sparsec choose: `tune` measures candidate formats and schedules on these inputs
# for about `budget` seconds and returns the fastest, ready to pass to `evaluate`.
choice = sparsec.tune("y(i) = A(i,j) * x(j)", A=A, x=x, budget=2.0)
tuned = sparsec.evaluate(
    "y(i) = A(i,j) * x(j)",
    A=A,
    x=x,
    formats=choice["formats"],
    schedule=choice["schedule"] or None,
    threads=choice["threads"],
)
assert np.allclose(tuned, A @ x)
print(f"6. tuned: {choice['formats']} {choice['schedule']!r}, {choice['speedup']:.2f}x the default")

# ---------------------------------------------------------------------------------------
# 7. Mistakes are Python exceptions with the compiler's explanation.
try:
    sparsec.evaluate("y(i) = A(i,j) * x(j)", A=A, x=np.ones(3))
except sparsec.NotationError as err:  # a ValueError, like every sparsec.Error
    print("7. NotationError:", str(err).splitlines()[0])
try:
    sparsec.compile("y(i) = A(i,j) * x(j)", schedule="split(i,i0,i1")
except sparsec.ScheduleError as err:
    print("7. ScheduleError:", str(err).splitlines()[0])

# ---------------------------------------------------------------------------------------
# 8. What it costs: time one call of a compiled kernel against SciPy.
#
# A call reads SciPy's CSR arrays and the NumPy vector in place, checking the matrix's
# structure first (the output is handed over without a copy); `copied_inputs` names any
# input it had to copy instead (unsorted indices, another format or dtype). A matrix held
# as a `sparsec.Tensor` skips the check too. On a matrix this small, one thread is quicker
# than waking a team of threads.
small = sparsec.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, threads=1)
A_held = sparsec.Tensor.from_scipy(A)


def per_call(f, runs=200):
    f()
    start = time.perf_counter()
    for _ in range(runs):
        f()
    return (time.perf_counter() - start) / runs * 1e6


print(
    f"8. SpMV per call: scipy {per_call(lambda: A @ x):.1f} us, "
    f"sparsec {per_call(lambda: small(A=A, x=x)):.1f} us, "
    f"sparsec with A held as a Tensor {per_call(lambda: small(A=A_held, x=x)):.1f} us"
)
small(A=A, x=x)
print("8. inputs the last call copied:", small.copied_inputs or "none")
print("tutorial: all steps ran")
