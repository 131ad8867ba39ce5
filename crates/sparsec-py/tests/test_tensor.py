"""sparsec.Tensor: conversions from and to NumPy, SciPy and pydata/sparse."""

import numpy as np
import pytest
import scipy.sparse as sp

import sparsec

FORMATS_2D = ["dense", "csr", "csc", "coo", "dcsr", "dcsc", "ell", "sell:4", "dia", "bcsr:2x2",
              "hash", "sd", "ds:1,0"]


@pytest.mark.parametrize("fmt", FORMATS_2D)
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 8), (17, 13)])
def test_round_trip_through_every_format(rng, fmt, shape):
    dense = rng.standard_normal(shape) * (rng.random(shape) < 0.3)
    t = sparsec.Tensor.from_numpy(dense, fmt)
    np.testing.assert_array_equal(t.to_numpy(), dense)
    np.testing.assert_array_equal(t.to_scipy().toarray(), dense)
    np.testing.assert_array_equal(t.convert("csr").to_scipy("csr").toarray(), dense)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scipy_round_trip_keeps_the_structure(rng, index_dtype):
    a = sp.random_array((30, 20), density=0.2, format="csr", rng=rng)
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    t = sparsec.Tensor.from_scipy(a)
    assert t.format == "ds" and t.shape == (30, 20) and t.stored_values == a.nnz
    assert t.index_dtype == index_dtype
    b = t.to_scipy()
    assert b.format == "csr"
    assert b.indptr.dtype == index_dtype and b.indices.dtype == index_dtype
    np.testing.assert_array_equal(b.indptr, a.indptr)
    np.testing.assert_array_equal(b.indices, a.indices)
    np.testing.assert_array_equal(b.data, a.data)
    c = t.to_scipy("csc")
    np.testing.assert_array_equal(c.toarray(), a.toarray())
    coo = t.to_scipy("coo")
    np.testing.assert_array_equal(coo.toarray(), a.toarray())


def test_order3_coo_round_trip(rng):
    coords = np.array([[2, 0, 2, 1], [1, 0, 1, 3], [0, 4, 0, 2]])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    t = sparsec.Tensor.from_coo((3, 4, 5), coords, values, "csf")
    c, v = t.to_coo()
    np.testing.assert_array_equal(c, [[0, 1, 2], [0, 3, 1], [4, 2, 0]])
    np.testing.assert_array_equal(v, [2.0, 4.0, 4.0])
    dense = np.zeros((3, 4, 5))
    np.add.at(dense, tuple(coords), values)
    np.testing.assert_array_equal(t.to_numpy(), dense)


def test_pydata_sparse_round_trip(rng):
    sparse = pytest.importorskip("sparse", reason="CI installs pydata/sparse")
    s = sparse.random((4, 5, 6), density=0.2, random_state=3)
    t = sparsec.Tensor.from_sparse(s, "csf")
    np.testing.assert_array_equal(t.to_numpy(), s.todense())
    np.testing.assert_array_equal(t.to_sparse().todense(), s.todense())
    g = sparsec.Tensor.from_numpy(s.todense()[0], "csr").to_sparse("gcxs")
    np.testing.assert_array_equal(g.todense(), s.todense()[0])


def test_malformed_arrays_are_refused_not_misread():
    native = sparsec._native.Tensor
    with pytest.raises(sparsec.InputError, match="indptr"):
        native.from_compressed([2, 2], np.array([0, 3, 2]), np.array([0, 1]), np.ones(2), "csr", False)
    with pytest.raises(sparsec.InputError, match="data has 3 values"):
        native.from_compressed([2, 2], np.array([0, 1, 2]), np.array([0, 1]), np.ones(3), "csr", False)
    with pytest.raises(sparsec.Error, match="outside"):
        native.from_compressed([2, 2], np.array([0, 1, 2]), np.array([0, 5]), np.ones(2), "csr", False)
    with pytest.raises(sparsec.InputError, match="int32 or int64"):
        native.from_compressed([2, 2], np.array([0.0, 1, 2]), np.array([0, 1]), np.ones(2), "csr", False)
    with pytest.raises(sparsec.InputError, match="float64 or float32"):
        native.from_coo([2], np.array([[0]]), np.array([1], dtype=np.int64), "sv")
    with pytest.raises(sparsec.InputError, match="negative"):
        native.from_coo([-2], np.zeros((1, 0), dtype=np.int64), np.zeros(0), "sv")
    with pytest.raises(sparsec.InputError, match="2 rows"):
        native.from_coo([3], np.array([[0], [1]]), np.array([1.0]), "sv")
    big_endian = np.array([0, 1], dtype=">i8")
    with pytest.raises(sparsec.InputError, match="int32 or int64"):
        native.from_compressed([1, 2], np.array([0, 2]), big_endian, np.ones(2), "csr", False)


def test_format_errors_are_python_exceptions():
    with pytest.raises(sparsec.FormatError, match="zz"):
        sparsec.Tensor.from_numpy(np.ones((2, 2)), "zz")
    assert issubclass(sparsec.FormatError, sparsec.Error)
    assert issubclass(sparsec.Error, ValueError)


def test_to_scipy_of_a_tensor_of_order_3_is_refused():
    t = sparsec.Tensor.from_numpy(np.ones((2, 2, 2)))
    with pytest.raises(sparsec.InputError, match="3 modes"):
        t.to_scipy()
