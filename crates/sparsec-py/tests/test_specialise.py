"""sparsec.specialise: dense programs specialised to their arrays' blocks, checked against
NumPy on the same arrays."""
import pathlib

import numpy as np
import pytest
import scipy.sparse as sp

import sparsec

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "examples" / "affine"


def blocks(n, boxes, seed):
    rng = np.random.default_rng(seed)
    a = np.zeros((n, n))
    for r0, r1, c0, c1 in boxes:
        a[r0 : r1 + 1, c0 : c1 + 1] = 0.5 + rng.random((r1 - r0 + 1, c1 - c0 + 1))
    return a


def test_matrix_multiply_matches_numpy_and_runs_only_the_blocks():
    a = blocks(30, [(0, 5, 0, 5), (10, 19, 20, 29)], 1)
    b = sp.csr_matrix(blocks(30, [(0, 5, 3, 8), (20, 29, 0, 4)], 2))
    out = sparsec.specialise((EXAMPLES / "mm.c").read_text(), A=a, B=b)
    assert out["exact"] and out["reasons"] == []
    np.testing.assert_allclose(out["arrays"]["C"], a @ b.toarray(), rtol=1e-12)
    # C = 0 computes only zeros: it never runs.
    assert out["regions"]["S1"].endswith("}") and "S1[" not in out["regions"]["S1"]


def test_gemm_scalars_and_stencil_parameters():
    a = blocks(12, [(0, 3, 0, 3)], 3)
    b = blocks(12, [(0, 3, 4, 7)], 4)
    c = blocks(12, [(8, 11, 8, 11)], 5)
    out = sparsec.specialise((EXAMPLES / "gemm.c").read_text(), A=a, B=b, C=c, alpha=2.0, beta=0.5)
    np.testing.assert_allclose(out["arrays"]["C"], 2.0 * a @ b + 0.5 * c, rtol=1e-12)
    x = np.zeros(40)
    x[18:21] = 1.0
    out = sparsec.specialise((EXAMPLES / "jacobi-1d.c").read_text(), params={"TSTEPS": 3}, A=x)
    a_ref, b_ref = x.copy(), np.zeros(40)
    for _ in range(3):
        b_ref[1:-1] = 0.33333 * (a_ref[:-2] + a_ref[1:-1] + a_ref[2:])
        a_ref[1:-1] = 0.33333 * (b_ref[:-2] + b_ref[1:-1] + b_ref[2:])
    np.testing.assert_allclose(out["arrays"]["A"], a_ref, rtol=1e-12)


def test_the_solution_map_gives_the_same_regions_and_results():
    a = blocks(30, [(0, 5, 0, 5), (10, 19, 20, 29)], 1)
    b = blocks(30, [(0, 5, 3, 8), (20, 29, 0, 4)], 2)
    program = (EXAMPLES / "gemm.c").read_text()
    direct = sparsec.specialise(program, A=a, B=b, alpha=1.5, beta=0.0)
    mapped = sparsec.specialise(program, A=a, B=b, alpha=1.5, beta=0.0, map=True)
    assert mapped["exact"]
    np.testing.assert_allclose(mapped["arrays"]["C"], 1.5 * a @ b, rtol=1e-12)
    np.testing.assert_allclose(mapped["arrays"]["C"], direct["arrays"]["C"], rtol=1e-12)
    with pytest.raises(sparsec.Error, match="meets itself"):
        sparsec.specialise((EXAMPLES / "lu.c").read_text(), A=a, map=True)


def test_bad_programs_and_arrays_are_errors():
    with pytest.raises(sparsec.CompileError, match="data-dependent"):
        sparsec.specialise("int N; double A[N], B[N]; for (i = 0; i < N; i++) A[B[i]] = 1;", A=np.zeros(3))
    with pytest.raises(sparsec.Error, match="not an array of the program"):
        sparsec.specialise((EXAMPLES / "mm.c").read_text(), A=np.zeros((3, 3)), D=np.zeros((3, 3)))
    with pytest.raises(sparsec.Error, match="TSTEPS"):
        sparsec.specialise((EXAMPLES / "jacobi-1d.c").read_text(), A=np.zeros(8))
