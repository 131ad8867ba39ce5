"""Inputs read in place: SciPy CSR/CSC arrays and NumPy arrays lent to kernel calls without
a copy, checked on every call, and copied only where their layout does not agree."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsec
from conftest import shared_data

SPMV = "y(i) = A(i,j) * x(j)"


def random_csr(rng, shape, density=0.2, index_dtype=np.int32):
    a = sp.random_array(shape, density=density, format="csr", rng=rng)
    a.indptr = a.indptr.astype(index_dtype)
    a.indices = a.indices.astype(index_dtype)
    return a


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("value_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (7, 0), (40, 31), (300, 500)])
def test_canonical_csr_and_contiguous_vectors_are_read_in_place(
    rng, index_dtype, value_dtype, shape
):
    a = random_csr(rng, shape, index_dtype=index_dtype)
    a.data = a.data.astype(value_dtype)
    x = rng.standard_normal(shape[1]).astype(value_dtype)
    spmv = sparsec.compile(SPMV)
    y = spmv(A=a, x=x)
    assert spmv.copied_inputs == []
    assert y.dtype == value_dtype
    tol = 1e-4 if value_dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, a @ x, rtol=tol, atol=tol)


def test_csc_is_read_in_place_by_a_csc_kernel(rng):
    a = random_csr(rng, (60, 45), index_dtype=np.int64).tocsc()
    x = rng.standard_normal(45)
    spmv = sparsec.compile(SPMV, formats={"A": "csc"})
    np.testing.assert_allclose(spmv(A=a, x=x), a @ x, rtol=1e-12, atol=1e-12)
    assert spmv.copied_inputs == []


def test_every_call_reads_the_arrays_as_they_are_now(rng):
    """No call may keep an earlier call's copy: values and structure changed in place
    between calls are what the next call reads."""
    a = random_csr(rng, (50, 40))
    x = rng.standard_normal(40)
    spmv = sparsec.compile(SPMV)
    np.testing.assert_allclose(spmv(A=a, x=x), a @ x, rtol=1e-12, atol=1e-12)
    a.data *= -3.0
    x[::2] = 7.0
    np.testing.assert_allclose(spmv(A=a, x=x), a @ x, rtol=1e-12, atol=1e-12)
    # Same arrays, another structure: the last row's entries moved one column left (still
    # sorted and in range).
    row = slice(a.indptr[-2], a.indptr[-1])
    if a.indices[row].size and a.indices[row][0] > 0:
        a.indices[row] -= 1
    np.testing.assert_allclose(spmv(A=a, x=x), a @ x, rtol=1e-12, atol=1e-12)
    assert spmv.copied_inputs == []


def test_unsorted_and_duplicate_indices_are_copied_and_summed(rng):
    dense = np.array([[1.0, 0, 2], [0, 0, 3], [4, 5, 0]])
    a = sp.csr_array(dense)
    a.indices = a.indices[[1, 0, 2, 4, 3]].copy()
    a.data = a.data[[1, 0, 2, 4, 3]].copy()
    assert not a.has_sorted_indices
    x = np.array([1.0, 10.0, 100.0])
    spmv = sparsec.compile(SPMV)
    np.testing.assert_allclose(spmv(A=a, x=x), dense @ x)
    assert spmv.copied_inputs == ["A"]
    # A duplicate (row 0, column 0 twice) is summed.
    dup = sp.csr_array((np.array([1.0, 2.0, 3.0]), np.array([0, 0, 2]), np.array([0, 2, 3, 3])), shape=(3, 3))
    np.testing.assert_allclose(spmv(A=dup, x=x), [3.0, 300.0, 0.0])
    assert spmv.copied_inputs == ["A"]


def test_layouts_that_differ_are_copied_never_misread(rng):
    a = random_csr(rng, (30, 20))
    b = np.asfortranarray(rng.standard_normal((20, 6)))
    spmm = sparsec.compile("C(i,k) = A(i,j) * B(j,k)")
    np.testing.assert_allclose(spmm(A=a, B=b), a @ b, rtol=1e-12, atol=1e-12)
    assert spmm.copied_inputs == ["B"]
    strided = rng.standard_normal(40)[::2]
    spmv = sparsec.compile(SPMV)
    np.testing.assert_allclose(spmv(A=a, x=strided), a @ strided, rtol=1e-12, atol=1e-12)
    assert spmv.copied_inputs == ["x"]
    converted = sparsec.compile(SPMV, formats={"A": "csc"})
    x = rng.standard_normal(20)
    np.testing.assert_allclose(converted(A=a, x=x), a @ x, rtol=1e-12, atol=1e-12)
    assert converted.copied_inputs == ["A"]
    # Mixed value types: the float32 vector is widened for a float64 kernel.
    np.testing.assert_allclose(
        spmv(A=a, x=x.astype(np.float32)), a @ x.astype(np.float32), rtol=1e-6
    )
    assert spmv.copied_inputs == ["x"]


def test_strided_index_arrays_lent_directly_are_copied(rng):
    a = random_csr(rng, (20, 30), index_dtype=np.int64)
    x = rng.standard_normal(30)
    wide = np.repeat(a.indices, 2)[::2]
    assert not wide.flags.c_contiguous
    lent = sparsec._native.Borrowed.compressed([20, 30], a.indptr, wide, a.data, False)
    native = sparsec._native.Kernel(SPMV)
    y = native.run({"A": lent, "x": sparsec._native.Borrowed.dense(x)})
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)
    assert native.copied_inputs == ["A"]


@pytest.mark.parametrize(
    "indptr, indices, message",
    [
        ([0, 1, 5], [0, 1], "indptr"),
        ([0, 2, 1], [0, 1], "indptr"),
        ([1, 1, 2], [0, 1], "indptr"),
        ([0, 1, 2], [0, 9], "9"),
        ([0, 1, 2], [0, -1], "-1"),
        ([0, 1], [0], "indptr"),
    ],
)
def test_malformed_lent_arrays_are_clear_errors(indptr, indices, message):
    indptr, indices = np.array(indptr, dtype=np.int32), np.array(indices, dtype=np.int32)
    data = np.ones(indices.size)
    lent = sparsec._native.Borrowed.compressed([2, 3], indptr, indices, data, False)
    native = sparsec._native.Kernel(SPMV)
    with pytest.raises(sparsec.Error, match=message):
        native.run({"A": lent, "x": sparsec._native.Borrowed.dense(np.ones(3))})


def test_inputs_are_not_written(rng):
    a = random_csr(rng, (40, 40))
    x = rng.standard_normal(40)
    before = (a.indptr.copy(), a.indices.copy(), a.data.copy(), x.copy())
    sparsec.evaluate("C(i,j) = A(i,k) * A(k,j)", A=a, formats={"C": "csr"})
    sparsec.evaluate(SPMV, A=a, x=x)
    for kept, now in zip(before, (a.indptr, a.indices, a.data, x)):
        np.testing.assert_array_equal(kept, now)


def test_spgemm_and_assemble_compute_read_in_place(rng):
    a = random_csr(rng, (80, 80), density=0.05)
    spgemm = sparsec.compile("C(i,j) = A(i,k) * A(k,j)", formats={"C": "csr"})
    c = spgemm(A=a)
    assert spgemm.copied_inputs == []
    np.testing.assert_allclose(c.toarray(), (a @ a).toarray(), rtol=1e-12, atol=1e-12)
    assembled = spgemm.assemble(A=a)
    a.data *= 2.0
    spgemm.compute(assembled, A=a)
    np.testing.assert_allclose(assembled.output().toarray(), (a @ a).toarray(), rtol=1e-12, atol=1e-12)
    assert spgemm.copied_inputs == []


@pytest.mark.parametrize("name", ["bcsstk16", "cage10", "west0479"])
def test_real_matrices_in_place(name, rng):
    a = scipy.io.mmread(shared_data(f"matrices/{name}.mtx")).tocsr()
    a.sum_duplicates()
    x = rng.standard_normal(a.shape[1])
    spmv = sparsec.compile(SPMV)
    np.testing.assert_allclose(spmv(A=a, x=x), a @ x, rtol=1e-10, atol=1e-8)
    assert spmv.copied_inputs == []


def test_gcxs_matrices_are_read_in_place(rng):
    sparse = pytest.importorskip("sparse", reason="CI installs pydata/sparse")
    a = random_csr(rng, (30, 25), index_dtype=np.int64)
    x = rng.standard_normal(25)
    for axes, matrix in (((0,), a), ((1,), a.tocsc())):
        g = sparse.GCXS.from_scipy_sparse(matrix)
        assert tuple(g.compressed_axes) == axes
        spmv = sparsec.compile(SPMV, formats={"A": "csr" if axes == (0,) else "csc"})
        np.testing.assert_allclose(spmv(A=g, x=x), a @ x, rtol=1e-12, atol=1e-12)
        assert spmv.copied_inputs == []
