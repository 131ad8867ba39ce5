"""binsparse files: sparsec reads what the reference implementation (`binsparse` on PyPI)
writes and the reference reads what sparsec writes, for every format both know."""

import json
import os
import subprocess

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsec
from conftest import shared_data

binsparse = pytest.importorskip("binsparse", reason="CI installs the binsparse reference package")
h5py = pytest.importorskip("h5py", reason="CI installs h5py")


def reference_tensor(kind, a):
    """The reference implementation's object of format `kind` for the SciPy matrix or NumPy
    vector `a`, and sparsec's name of that format."""
    n = lambda x: np.asarray(x)
    if kind == "DVEC":
        return binsparse.DVECVector(a.shape, a.size, values=a), "dense"
    if kind == "CVEC":
        idx = np.flatnonzero(a)
        return binsparse.CVECVector(a.shape, idx.size, indices_0=idx, values=a[idx]), "sv"
    if kind in ("DMAT", "DMATC"):
        values = a.toarray().ravel(order="C" if kind == "DMAT" else "F")
        cls = binsparse.DMATMatrix if kind == "DMAT" else binsparse.DMATCMatrix
        return cls(a.shape, values.size, values=values), "dense" if kind == "DMAT" else "dd:1,0"
    if kind == "CSR":
        c = a.tocsr()
        return binsparse.CSRMatrix(a.shape, c.nnz, pointers_to_1=c.indptr, indices_1=c.indices, values=c.data), "csr"
    if kind == "CSC":
        c = a.tocsc()
        return binsparse.CSCMatrix(a.shape, c.nnz, pointers_to_1=c.indptr, indices_1=c.indices, values=c.data), "csc"
    if kind in ("DCSR", "DCSC"):
        c = a.tocsr() if kind == "DCSR" else a.tocsc()
        rows = np.flatnonzero(np.diff(c.indptr))
        ptr = np.concatenate([[0], c.indptr[rows + 1]])
        cls = binsparse.DCSRMatrix if kind == "DCSR" else binsparse.DCSCMatrix
        return cls(a.shape, c.nnz, indices_0=rows, pointers_to_1=ptr, indices_1=c.indices, values=c.data), kind.lower()
    if kind in ("COO", "COOC"):
        c = a.tocoo()
        c.sum_duplicates()
        if kind == "COO":
            return binsparse.COOMatrix(a.shape, c.nnz, indices_0=c.row, indices_1=c.col, values=c.data), "coo"
        order = np.lexsort((c.row, c.col))
        return binsparse.COOCMatrix(a.shape, c.nnz, indices_0=c.col[order], indices_1=c.row[order], values=c.data[order]), "uq:1,0"
    raise AssertionError(kind)


MATRIX_KINDS = ["DMAT", "DMATC", "CSR", "CSC", "DCSR", "DCSC", "COO", "COOC"]


def random_matrix(rng, shape=(9, 7)):
    return sp.random_array(shape, density=0.3, format="csr", rng=rng)


@pytest.mark.parametrize("kind", MATRIX_KINDS)
@pytest.mark.parametrize("shape", [(9, 7), (1, 1), (0, 4)])
def test_sparsec_reads_reference_files(tmp_path, rng, kind, shape):
    a = random_matrix(rng, shape)
    tensor, fmt = reference_tensor(kind, a)
    path = tmp_path / "a.bsp.h5"
    binsparse.save_binsparse(tensor, path)
    t = sparsec.read(path)
    assert t.format == sparsec._native.format_spelling(fmt, 2)
    np.testing.assert_array_equal(t.to_numpy(), a.toarray())


@pytest.mark.parametrize("kind", ["DVEC", "CVEC"])
def test_sparsec_reads_reference_vectors(tmp_path, rng, kind):
    x = rng.standard_normal(11) * (rng.random(11) < 0.5)
    tensor, fmt = reference_tensor(kind, x)
    path = tmp_path / "x.h5"
    binsparse.save_binsparse(tensor, path)
    t = sparsec.read(path)
    assert t.format == sparsec._native.format_spelling(fmt, 1)
    np.testing.assert_array_equal(t.to_numpy(), x)


def test_reference_custom_format_and_int32_values(tmp_path, rng):
    a = random_matrix(rng)
    c = a.tocsr()
    custom = binsparse.CustomTensor(
        a.shape,
        c.nnz,
        level=binsparse.DenseLevel(
            1, binsparse.SparseLevel(1, binsparse.ElementLevel(np.arange(c.nnz, dtype=np.int32)), (c.indices.astype(np.int32),), c.indptr.astype(np.int32))
        ),
    )
    path = tmp_path / "custom.h5"
    binsparse.save_binsparse(custom, path, alias=False)
    t = sparsec.read(path)
    expected = sp.csr_array((np.arange(c.nnz, dtype=float), c.indices, c.indptr), shape=a.shape)
    np.testing.assert_array_equal(t.to_numpy(), expected.toarray())


@pytest.mark.parametrize(
    "fmt,kind",
    [("csr", "CSR"), ("csc", "CSC"), ("dcsr", "DCSR"), ("dcsc", "DCSC"), ("coo", "COO"), ("dense", "DMAT"), ("dd:1,0", "DMATC")],
)
def test_reference_reads_sparsec_files(tmp_path, rng, fmt, kind):
    a = random_matrix(rng)
    path = tmp_path / "a.h5"
    sparsec.Tensor.from_scipy(a, fmt).write(path)
    loaded = binsparse.load_binsparse(path)
    # The reference loads COO as COOR and DMAT as DMATR, the same layouts.
    assert loaded.format == {"COO": "COOR", "DMAT": "DMATR"}.get(kind, kind)
    with h5py.File(path) as f:
        assert json.loads(f.attrs["binsparse"])["binsparse"]["format"] == kind
    expected, _ = reference_tensor(kind, a)
    for field in ("pointers_to_1", "indices_0", "indices_1", "values"):
        if hasattr(expected, field):
            np.testing.assert_array_equal(getattr(loaded, field), getattr(expected, field))


def test_reference_reads_sparsec_custom_descriptors(tmp_path, rng):
    sparse = pytest.importorskip("sparse", reason="CI installs pydata/sparse")
    s = sparse.random((4, 5, 6), density=0.2, random_state=5)
    path = tmp_path / "t.h5"
    sparsec.Tensor.from_sparse(s, "csf").write(path)
    loaded = binsparse.load_binsparse(path)
    assert loaded.format == "custom" and loaded.shape == (4, 5, 6)
    assert isinstance(loaded.level, binsparse.SparseLevel)
    assert np.asarray(loaded.level.level.level.level.values).size == s.nnz
    np.testing.assert_array_equal(sparsec.read(path).to_numpy(), s.todense())


def test_formats_binsparse_cannot_describe_are_refused(tmp_path):
    t = sparsec.Tensor.from_numpy(np.eye(4), "hash")
    with pytest.raises(sparsec.FileError, match="binsparse has no layout"):
        t.write(tmp_path / "h.h5")


def test_cli_converts_mtx_to_binsparse_and_back(tmp_path):
    mtx = shared_data("matrices/494_bus.mtx")
    out = tmp_path / "494_bus.bsp.h5"
    exe = os.environ.get("SPARSEC_CLI")
    assert exe, "set SPARSEC_CLI to the sparsec command built with --features binsparse (.ci/run does)"
    subprocess.run([exe, "convert", str(mtx), str(out), "--format", "csc"], check=True, capture_output=True)
    loaded = binsparse.load_binsparse(out)
    assert loaded.format == "CSC"
    a = sp.csc_array(scipy.io.mmread(mtx))
    a.sum_duplicates()
    np.testing.assert_array_equal(loaded.pointers_to_1, a.indptr)
    np.testing.assert_array_equal(loaded.indices_1, a.indices)
    np.testing.assert_allclose(loaded.values, a.data)
    back = tmp_path / "back.mtx"
    subprocess.run([exe, "convert", str(out), str(back)], check=True, capture_output=True)
    np.testing.assert_allclose(scipy.io.mmread(back).toarray(), a.toarray())


def test_unsorted_and_duplicate_entries_in_reference_files_are_summed(tmp_path):
    # Row 0 holds column 2 twice and its columns out of order; COO entries unsorted.
    csr = binsparse.CSRMatrix(
        (2, 3), 4, pointers_to_1=np.array([0, 3, 4]), indices_1=np.array([2, 0, 2, 1]), values=np.array([1.0, 2.0, 3.0, 4.0])
    )
    coo = binsparse.COOMatrix(
        (2, 3), 3, indices_0=np.array([1, 0, 1]), indices_1=np.array([1, 2, 1]), values=np.array([5.0, 6.0, 7.0])
    )
    binsparse.save_binsparse(csr, tmp_path / "csr.h5")
    binsparse.save_binsparse(coo, tmp_path / "coo.h5")
    np.testing.assert_array_equal(sparsec.read(tmp_path / "csr.h5").to_numpy(), [[2.0, 0.0, 4.0], [0.0, 4.0, 0.0]])
    np.testing.assert_array_equal(sparsec.read(tmp_path / "coo.h5").to_numpy(), [[0.0, 0.0, 6.0], [0.0, 12.0, 0.0]])


def test_files_that_are_not_binsparse_are_refused(tmp_path):
    with h5py.File(tmp_path / "plain.h5", "w") as f:
        f["values"] = np.ones(3)
    with pytest.raises(sparsec.FileError, match="no `binsparse` attribute"):
        sparsec.read(tmp_path / "plain.h5")
