"""sparsec.evaluate and sparsec.compile against SciPy and NumPy."""

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsec
from conftest import shared_data

SPMV = "y(i) = A(i,j) * x(j)"
SPMM = "C(i,k) = A(i,j) * B(j,k)"


def random_csr(rng, rows, cols, density, index_dtype=np.int64):
    a = sp.random_array((rows, cols), density=density, format="csr", rng=rng)
    a.indices = a.indices.astype(index_dtype)
    a.indptr = a.indptr.astype(index_dtype)
    return a


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (3, 7), (40, 30), (200, 200)])
def test_spmv_matches_scipy(rng, shape, index_dtype):
    a = random_csr(rng, *shape, 0.2, index_dtype)
    x = rng.standard_normal(shape[1])
    y = sparsec.evaluate(SPMV, A=a, x=x, formats={"A": "csr"})
    assert isinstance(y, np.ndarray) and y.shape == (shape[0],)
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "dcsr", "dense", "ds", "sd:1,0", "sell:8"])
def test_spmv_in_every_input_format(rng, fmt):
    a = random_csr(rng, 50, 40, 0.1)
    x = rng.standard_normal(40)
    y = sparsec.evaluate(SPMV, A=a, x=x, formats={"A": fmt}, backend="jit")
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("slice_rows", [1, 3, 8, 16])
def test_spmv_in_sliced_ell_with_the_c_compiler(rng, slice_rows):
    # 51 rows: the last slice is short; rows in SIMD lanes, slices on threads.
    a = random_csr(rng, 51, 40, 0.1)
    x = rng.standard_normal(40)
    y = sparsec.evaluate(SPMV, A=a, x=x, formats={"A": f"sell:{slice_rows}"})
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["csr", "csc", "coo", "bsr", "lil", "dok", "dia"])
def test_every_scipy_input_kind(rng, kind):
    a = random_csr(rng, 30, 20, 0.2).asformat(kind)
    x = rng.standard_normal(20)
    y = sparsec.evaluate(SPMV, A=a, x=x)
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)


def test_scipy_matrix_classes_are_accepted(rng):
    a = sp.csr_matrix(random_csr(rng, 20, 20, 0.2))
    x = rng.standard_normal(20)
    np.testing.assert_allclose(sparsec.evaluate(SPMV, A=a, x=x), a @ x, rtol=1e-12)


def test_unsorted_indices_and_duplicates_are_summed_not_misread(rng):
    # Row 0 holds column 2 twice (duplicates) and columns out of order.
    indptr = np.array([0, 3, 4])
    indices = np.array([2, 0, 2, 1])
    data = np.array([1.0, 2.0, 3.0, 4.0])
    a = sp.csr_array((data, indices, indptr), shape=(2, 3))
    assert not a.has_canonical_format
    x = np.array([1.0, 10.0, 100.0])
    expected = a.toarray() @ x
    for fmt in ("csr", "coo", "dcsr"):
        y = sparsec.evaluate(SPMV, A=a, x=x, formats={"A": fmt}, backend="jit")
        np.testing.assert_allclose(y, expected)


def test_unsorted_coo_with_duplicates(rng):
    rows = np.array([3, 0, 3, 1, 0])
    cols = np.array([1, 2, 1, 0, 2])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    a = sp.coo_array((vals, (rows, cols)), shape=(4, 3))
    x = rng.standard_normal(3)
    y = sparsec.evaluate(SPMV, A=a, x=x, backend="jit")
    np.testing.assert_allclose(y, a.toarray() @ x)


def test_explicit_zeros_are_kept_as_stored_entries():
    a = sp.csr_array((np.array([0.0, 5.0]), np.array([0, 1]), np.array([0, 1, 2])), shape=(2, 2))
    t = sparsec.Tensor.from_scipy(a)
    assert t.stored_values == 2
    back = t.to_scipy()
    assert back.nnz == 2 and back.data[0] == 0.0
    np.testing.assert_array_equal(back.toarray(), a.toarray())


def test_non_contiguous_and_fortran_arrays_are_read_by_strides(rng):
    a = random_csr(rng, 30, 40, 0.2)
    big = rng.standard_normal(80)
    x = big[::2]  # a strided view
    assert not x.flags.c_contiguous
    np.testing.assert_allclose(sparsec.evaluate(SPMV, A=a, x=x), a @ x, rtol=1e-12)
    b = np.asfortranarray(rng.standard_normal((40, 5)))
    c = sparsec.evaluate("C(i,k) = A(i,j) * B(j,k)", A=a, B=b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)
    d = rng.standard_normal((5, 40)).T  # transposed view
    c = sparsec.evaluate("C(i,k) = A(i,j) * B(j,k)", A=a, B=d)
    np.testing.assert_allclose(c, a @ d, rtol=1e-12)


def test_strided_index_arrays_of_scipy_are_read_by_strides(rng):
    a = random_csr(rng, 10, 10, 0.3)
    indices = np.repeat(a.indices, 2)[::2]
    assert not indices.flags.c_contiguous
    t = sparsec._native.Tensor.from_compressed([10, 10], a.indptr, indices, a.data, "csr", False)
    np.testing.assert_array_equal(t.to_dense(), a.toarray())


def test_integer_and_boolean_values_become_float64(rng):
    a = sp.csr_array(np.array([[1, 0], [0, 2]], dtype=np.int32))
    x = np.array([True, True])
    np.testing.assert_allclose(sparsec.evaluate(SPMV, A=a, x=x), [1.0, 2.0])


def test_float32_inputs_give_float32(rng):
    a = random_csr(rng, 20, 20, 0.2).astype(np.float32)
    x = rng.standard_normal(20).astype(np.float32)
    y = sparsec.evaluate(SPMV, A=a, x=x, backend="jit")
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, a @ x, rtol=1e-5)


def test_complex_values_are_refused():
    a = sp.csr_array(np.array([[1 + 1j]]))
    with pytest.raises(sparsec.InputError, match="complex"):
        sparsec.evaluate(SPMV, A=a, x=np.ones(1))


@pytest.mark.parametrize("out", ["csr", "csc", "coo"])
def test_spgemm_returns_scipy_arrays(rng, out):
    a = random_csr(rng, 60, 50, 0.05)
    b = random_csr(rng, 50, 40, 0.05)
    c = sparsec.evaluate(SPMM, A=a, B=b, formats={"A": "csr", "B": "csr", "C": out})
    assert sp.issparse(c) and c.format == out
    np.testing.assert_allclose(c.toarray(), (a @ b).toarray(), rtol=1e-12, atol=1e-14)


def test_spgemm_output_arrays_are_int32_and_not_copied_by_scipy(rng):
    a = random_csr(rng, 30, 30, 0.1)
    c = sparsec.evaluate(SPMM, A=a, B=a, formats={"A": "csr", "B": "csr", "C": "csr"})
    # Outputs are packed with the narrowest index width.
    assert c.indices.dtype == np.int32 and c.indptr.dtype == np.int32
    assert c.has_canonical_format
    # SciPy holds the very arrays sparsec produced (or views of them): their memory
    # belongs to the Rust vectors the kernel filled, which NumPy's chain of bases ends in.
    def owner(array):
        while isinstance(array.base, np.ndarray):
            array = array.base
        return type(array.base).__name__

    for array in (c.data, c.indices, c.indptr):
        assert owner(array) == "PySliceContainer"
    y = sparsec.evaluate(SPMV, A=a, x=np.ones(30))
    assert owner(y) == "PySliceContainer"
    assert owner(a @ np.ones(30)) != "PySliceContainer"


def test_output_in_a_format_scipy_lacks_is_a_tensor(rng):
    a = random_csr(rng, 30, 30, 0.1)
    c = sparsec.evaluate(SPMM, A=a, B=a, formats={"A": "csr", "B": "csr", "C": "dcsr"})
    assert isinstance(c, sparsec.Tensor) and c.format == "ss"
    np.testing.assert_allclose(c.to_numpy(), (a @ a).toarray(), rtol=1e-12)


def test_sparse_vector_output_is_a_1d_scipy_coo_array(rng):
    a = random_csr(rng, 30, 30, 0.1)
    x = sp.random_array((30,), density=0.3, format="coo", rng=rng)
    y = sparsec.evaluate("y(i) = A(i,j) * x(j)", A=a, x=x, formats={"y": "sv", "x": "sv"})
    assert sp.issparse(y) and y.format == "coo" and y.shape == (30,)
    np.testing.assert_allclose(y.toarray(), a @ x.toarray(), rtol=1e-12)


def test_dense_vector_in_a_hashed_level_is_a_tensor(rng):
    x = rng.standard_normal(30) * (rng.random(30) < 0.3)
    y = sparsec.evaluate("y(i) = 2 * x(i)", x=x, formats={"y": "h", "x": "sv"}, backend="jit")
    assert isinstance(y, sparsec.Tensor) and y.format == "h"
    np.testing.assert_allclose(y.to_numpy(), 2 * x)


def test_elementwise_and_scalars(rng):
    a = random_csr(rng, 20, 30, 0.2)
    b = random_csr(rng, 20, 30, 0.2)
    c = sparsec.evaluate("C(i,j) = A(i,j) + 2 * B(i,j)", A=a, B=b, formats={"C": "csr"})
    np.testing.assert_allclose(c.toarray(), (a + 2 * b).toarray(), rtol=1e-12)
    d = rng.standard_normal((20, 30))
    e = sparsec.evaluate("E(i,j) = A(i,j) * D(i,j)", A=a, D=d)
    np.testing.assert_allclose(e, a.toarray() * d, rtol=1e-12)


def test_accumulate_into_initial(rng):
    a = random_csr(rng, 20, 20, 0.2)
    x = rng.standard_normal(20)
    y0 = rng.standard_normal(20)
    y = sparsec.evaluate("y(i) += A(i,j) * x(j)", A=a, x=x, initial=y0)
    np.testing.assert_allclose(y, y0 + a @ x, rtol=1e-12)


def test_order3_tensor_from_pydata_sparse(rng):
    sparse = pytest.importorskip("sparse", reason="CI installs pydata/sparse")
    t = sparse.random((6, 5, 4), density=0.3, random_state=1)
    c = rng.standard_normal(4)
    out = sparsec.evaluate("A(i,j) = T(i,j,k) * c(k)", T=t, c=c, formats={"T": "csf"})
    np.testing.assert_allclose(out, np.einsum("ijk,k->ij", t.todense(), c), rtol=1e-12)


def test_gcxs_inputs(rng):
    sparse = pytest.importorskip("sparse", reason="CI installs pydata/sparse")
    a = random_csr(rng, 20, 15, 0.2)
    x = rng.standard_normal(15)
    for axes in ((0,), (1,)):
        g = sparse.GCXS(sparse.COO.from_scipy_sparse(a), compressed_axes=axes)
        np.testing.assert_allclose(sparsec.evaluate(SPMV, A=g, x=x), a @ x, rtol=1e-12)


@pytest.mark.parametrize(
    "name", ["karate.mtx", "494_bus.mtx", "west0479.mtx", "ash219.mtx", "bcspwr10.mtx"]
)
def test_real_matrices(name, rng):
    a = sp.csr_array(scipy.io.mmread(shared_data(f"matrices/{name}")))
    a.sum_duplicates()
    x = rng.standard_normal(a.shape[1])
    np.testing.assert_allclose(
        sparsec.evaluate(SPMV, A=a, x=x, formats={"A": "csr"}), a @ x, rtol=1e-10, atol=1e-10
    )
    b = sp.csr_array(a.T)
    c = sparsec.evaluate(SPMM, A=a, B=b, formats={"A": "csr", "B": "csr", "C": "csr"})
    expected = (a @ b).tocsr()
    np.testing.assert_allclose(c.toarray(), expected.toarray(), rtol=1e-10, atol=1e-10)


def test_compiled_kernel_is_reused_and_memoized(rng):
    kernel = sparsec.compile(SPMV, formats={"A": "csr"}, backend="c")
    a = random_csr(rng, 64, 48, 0.1)
    for _ in range(3):
        x = rng.standard_normal(48)
        np.testing.assert_allclose(kernel(A=a, x=x), a @ x, rtol=1e-12)
    before = sparsec.cache_info()
    again = sparsec.compile(SPMV, formats={"A": "csr"}, backend="c")
    again(A=a, x=x)
    after = sparsec.cache_info()
    assert after["hits"] == before["hits"] + 1
    assert after["misses"] == before["misses"]
    # Other shapes compile a kernel of the same C source: the C compiler does not run.
    b = random_csr(rng, 10, 12, 0.3)
    kernel(A=b, x=np.ones(12))
    assert not kernel.was_compiled


def test_new_process_finds_the_kernel_in_the_disk_cache(tmp_path):
    script = (
        "import numpy as np, scipy.sparse as sp, sparsec\n"
        "a = sp.random_array((30, 30), density=0.2, format='csr', rng=1)\n"
        "k = sparsec.compile('y(i) = A(i,j) * x(j) + x(i)', formats={'A': 'csr'}, backend='c')\n"
        "k(A=a, x=np.ones(30))\n"
        "print(k.was_compiled)\n"
    )
    env = {**__import__("os").environ, "SPARSEC_CACHE_DIR": str(tmp_path)}
    run = lambda: subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert run() == "True"
    assert run() == "False"


def test_compile_with_shapes_compiles_now():
    kernel = sparsec.compile(SPMV, formats={"A": "csr"}, shapes={"A": (5, 4), "x": (4,)}, backend="jit")
    assert kernel.loop_order[0] == "i"
    assert "sparsec_kernel" in kernel.source


def test_schedule_and_threads(rng):
    a = random_csr(rng, 300, 200, 0.05)
    x = rng.standard_normal(200)
    kernel = sparsec.compile(
        SPMV,
        formats={"A": "csr"},
        schedule="split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)",
        threads=2,
        backend="c",
    )
    np.testing.assert_allclose(kernel(A=a, x=x), a @ x, rtol=1e-12)
    assert kernel.threads == 2
    assert kernel.loop_order[:2] == ["i0", "i1"]


def test_tiered_backend_switches_to_c(rng):
    a = random_csr(rng, 20, 20, 0.2)
    x = rng.standard_normal(20)
    kernel = sparsec.compile("y(i) = A(i,j) * x(j) * 2", formats={"A": "csr"}, backend="tiered")
    np.testing.assert_allclose(kernel(A=a, x=x), 2 * (a @ x), rtol=1e-12)
    kernel.finish_compiling()
    assert kernel.running_backend == "c"
    np.testing.assert_allclose(kernel(A=a, x=x), 2 * (a @ x), rtol=1e-12)


def test_assemble_then_compute_new_values(rng):
    a = random_csr(rng, 40, 40, 0.1)
    b = random_csr(rng, 40, 40, 0.1)
    kernel = sparsec.compile(SPMM, formats={"A": "csr", "B": "csr", "C": "csr"}, backend="jit")
    out = kernel.assemble(A=a, B=b)
    np.testing.assert_allclose(out.output().toarray(), (a @ b).toarray(), rtol=1e-12)
    for step in range(3):
        a2 = a.copy()
        a2.data = rng.standard_normal(a.nnz)
        kernel.compute(out, A=a2, B=b)
        np.testing.assert_allclose(out.output().toarray(), (a2 @ b).toarray(), rtol=1e-12)
    other = random_csr(rng, 40, 40, 0.2)
    with pytest.raises(sparsec.InputError, match="assemble it again"):
        kernel.compute(out, A=other, B=b)


def test_threads_share_a_kernel_and_compile_concurrently(rng):
    from concurrent.futures import ThreadPoolExecutor

    kernel = sparsec.compile("y(i) = A(i,j) * x(j) - x(i)", formats={"A": "csr"}, backend="jit")
    cases = []
    for n in (5, 6, 7, 8, 5, 6, 7, 8):
        a = random_csr(rng, n, n, 0.4)
        cases.append((a, rng.standard_normal(n)))

    def run(case):
        a, x = case
        return kernel(A=a, x=x), a @ x - x

    with ThreadPoolExecutor(4) as pool:
        for got, expected in pool.map(run, cases):
            np.testing.assert_allclose(got, expected, rtol=1e-12)
    out = sparsec.compile(SPMM, formats={"A": "csr", "B": "csr", "C": "csr"}, backend="jit")
    a = random_csr(rng, 20, 20, 0.2)
    assembled = out.assemble(A=a, B=a)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: (out.compute(assembled, A=a, B=a), assembled.output()), range(8)))
    np.testing.assert_allclose(assembled.output().toarray(), (a @ a).toarray(), rtol=1e-12)


def assert_spmv_choice_computes(choice, a, x):
    """The tuned choice of SpMV (formats, schedule, threads) computes ``a @ x``."""
    y = sparsec.evaluate(
        "y(i) = A(i,j) * x(j)",
        A=a,
        x=x,
        formats=choice["formats"],
        schedule=choice["schedule"] or None,
        threads=choice["threads"],
    )
    np.testing.assert_allclose(y, a @ x, rtol=1e-12, atol=1e-12)


def test_tune_returns_a_choice_that_computes_the_same_result(rng):
    a = sp.random(300, 200, density=0.05, format="csr", random_state=7)
    x = rng.standard_normal(200)
    choice = sparsec.tune("y(i) = A(i,j) * x(j)", A=a, x=x, budget=3.0, threads=1)
    assert set(choice) == {"formats", "schedule", "threads", "speedup", "measured", "seconds"}
    assert "A" in choice["formats"] and choice["measured"] >= 1 and choice["speedup"] > 0
    assert_spmv_choice_computes(choice, a, x)


def test_tune_refuses_bad_options(rng):
    a = sp.random(20, 20, density=0.2, format="csr", random_state=3)
    x = rng.standard_normal(20)
    with pytest.raises(sparsec.InputError, match="budget"):
        sparsec.tune("y(i) = A(i,j) * x(j)", A=a, x=x, budget=-1.0)
    with pytest.raises(sparsec.InputError, match="unknown search"):
        sparsec.tune("y(i) = A(i,j) * x(j)", A=a, x=x, search="exhaustive")


def test_features_are_those_the_build_was_asked_for():
    features = sparsec.features()
    assert set(features) <= {"binsparse", "learned"}
    # CI names the features it builds the package with, so a build that lost one fails here.
    expected = os.environ.get("SPARSEC_PY_FEATURES")
    if expected is not None:
        assert set(features) == set(filter(None, expected.split(","))), features


def test_tune_with_the_learned_model_or_a_clear_refusal(rng, tmp_path):
    a = sp.random(400, 300, density=0.03, format="csr", random_state=11)
    x = rng.standard_normal(300)
    spmv = "y(i) = A(i,j) * x(j)"
    if "learned" not in sparsec.features():
        with pytest.raises(sparsec.InputError, match="without the `learned` feature"):
            sparsec.tune(spmv, A=a, x=x, search="model", budget=1.0)
        return
    choice = sparsec.tune(spmv, A=a, x=x, search="model", budget=5.0, candidates=3, threads=1)
    # sparsec's default and at most the three points the model ranks best.
    assert 1 <= choice["measured"] <= 4 and choice["speedup"] > 0
    assert_spmv_choice_computes(choice, a, x)
    missing = tmp_path / "no-such-model"
    with pytest.raises(sparsec.InputError, match="no-such-model"):
        sparsec.tune(spmv, A=a, x=x, search="model", model=missing, budget=1.0)
    b = sp.random(400, 300, density=0.03, format="csr", random_state=12)
    with pytest.raises(sparsec.InputError, match="no cost model ships"):
        sparsec.tune("C(i,j) = A(i,j) + B(i,j)", A=a, B=b, search="model", budget=1.0)


def test_tune_refuses_a_model_for_other_searches_and_zero_candidates(rng):
    a = sp.random(20, 20, density=0.2, format="csr", random_state=3)
    x = rng.standard_normal(20)
    with pytest.raises(sparsec.InputError, match="model"):
        sparsec.tune("y(i) = A(i,j) * x(j)", A=a, x=x, search="random", model="m")
    with pytest.raises(sparsec.InputError, match="at least one"):
        sparsec.tune("y(i) = A(i,j) * x(j)", A=a, x=x, candidates=0)


@pytest.mark.parametrize("sums", ["tested", "scalar", "lanes", "gathers"])
def test_fixed_sum_versions_repeat_their_results_exactly(rng, sums):
    a = random_csr(rng, 300, 200, 0.05)
    x = rng.standard_normal(200)
    kernel = sparsec.compile(SPMV, sums=sums, backend="c")
    first = kernel(A=a, x=x)
    np.testing.assert_allclose(first, a @ x, rtol=1e-12, atol=1e-12)
    for _ in range(20):
        np.testing.assert_array_equal(kernel(A=a, x=x), first)
    assert kernel.sum_version is None


def test_measured_sum_versions_name_the_chosen_one(rng):
    a = random_csr(rng, 300, 200, 0.05)
    x = rng.standard_normal(200)
    kernel = sparsec.compile(SPMV, backend="c")
    # The first call, then each version in blocks of up to 32 calls, twice over.
    for _ in range(300):
        np.testing.assert_allclose(kernel(A=a, x=x), a @ x, rtol=1e-12, atol=1e-12)
    assert kernel.sum_version in ("scalar", "lanes", "gathers")


def test_unknown_sums_are_refused():
    with pytest.raises(ValueError, match="unknown sums `fastest`"):
        sparsec.compile(SPMV, sums="fastest")


@pytest.mark.parametrize("backend", ["c", "jit"])
def test_an_inputs_fill_value_is_read_where_it_has_no_entry(backend):
    t = sparsec.Tensor.from_coo((4, 3), [[0, 2, 2], [1, 1, 2]], [2.0, 3.0, 0.0],
                                format="csr", fill=0.5)
    dense = t.to_numpy()
    assert dense[3, 0] == 0.5 and dense[2, 2] == 0.0
    x = np.array([1.0, 5.0, -1.0])
    y = sparsec.evaluate("y(i) = A(i,j) * x(j)", A=t, x=x, backend=backend)
    np.testing.assert_allclose(y, dense @ x, rtol=1e-12)
    # Element-wise, a sparse output keeps A's pattern, and its fill value is computed.
    c = sparsec.evaluate("C(i,j) = A(i,j) * 2 + 1", A=t, formats={"C": "csr"},
                         backend=backend)
    assert isinstance(c, sparsec.Tensor) and c.fill == 2.0
    np.testing.assert_allclose(c.to_numpy(), dense * 2 + 1, rtol=1e-12)
    assert c.to_coo()[1].size == 3
    # One kernel object, inputs whose fill values differ: each call gets the kernel
    # compiled for its input's fill value.
    spmv = sparsec.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, backend=backend)
    for fill in [0.5, 0.25, 0.0, 0.25]:
        filled = t.with_fill(fill)
        np.testing.assert_allclose(spmv(A=filled, x=x), filled.to_numpy() @ x, rtol=1e-12)


@pytest.mark.parametrize("backend", ["c", "jit"])
def test_math_functions_match_numpy(rng, backend):
    a = random_csr(rng, 30, 20, 0.2)
    b = random_csr(rng, 30, 20, 0.5)
    dense_a, dense_b = a.toarray(), b.toarray()
    # f(0) = 0: the output keeps A's pattern.
    c = sparsec.evaluate("C(i,j) = sqrt(abs(A(i,j))) * B(i,j)", A=a, B=b,
                         formats={"C": "csr"}, backend=backend)
    want = np.sqrt(np.abs(dense_a)) * dense_b
    np.testing.assert_allclose(c.toarray(), want, rtol=1e-12, atol=1e-12)
    assert c.nnz <= min(a.nnz, b.nnz)
    # exp(0) = 1: the output fills where A stores nothing.
    e = sparsec.evaluate("C(i,j) = exp(A(i,j)) + pow(B(i,j), 2)", A=a, B=b, backend=backend)
    np.testing.assert_allclose(e, np.exp(dense_a) + dense_b ** 2, rtol=1e-12, atol=1e-12)
    # A sum inside a function is computed first: the row norms.
    x = rng.standard_normal(20)
    y = sparsec.evaluate("y(i) = sqrt(A(i,j) * A(i,j))", A=a, backend=backend)
    np.testing.assert_allclose(y, np.sqrt((dense_a * dense_a).sum(axis=1)), rtol=1e-12)
    # Comparisons are 1 or 0, and where selects: a thresholded copy keeps A's pattern.
    t = sparsec.evaluate("C(i,j) = where(A(i,j) > 0.5, A(i,j), 0) + (B(i,j) >= 0)", A=a, B=b,
                         backend=backend)
    np.testing.assert_allclose(t, np.where(dense_a > 0.5, dense_a, 0) + (dense_b >= 0), rtol=1e-12)
    with pytest.raises(Exception, match="takes 2 argument"):
        sparsec.evaluate("y(i) = pow(x(i))", x=x)


@pytest.mark.parametrize("name", ["karate.mtx", "ca-HepTh.mtx"])
def test_triangle_count_by_a_masked_product(name):
    # Triangles of an undirected graph: with L its strictly lower triangle, the entries
    # of L where row i and row j of L share a neighbour k, summed (GraphBLAS's C<L> = L*L').
    a = sp.csr_array(scipy.io.mmread(shared_data(f"matrices/{name}")))
    lower = sp.csr_array((sp.tril(a + a.T, k=-1) != 0).astype(np.float64))
    c = sparsec.evaluate("C<pattern(L)>(i,j) = L(i,k) * L(j,k)", L=lower,
                         formats={"L": "csr", "C": "csr"})
    assert sp.issparse(c) and c.nnz <= lower.nnz
    # Independently: trace(A^3) / 6 of the symmetric adjacency, as (A^2 .* A) summed.
    sym = lower + lower.T
    want = (sym @ sym).multiply(sym).sum() / 6
    assert want > 0 and c.sum() == want
    if name == "karate.mtx":
        # The valued mask and its complement split the product between them.
        full = sparsec.evaluate("C(i,j) = L(i,k) * L(j,k)", L=lower, formats={"L": "csr"})
        outside = sparsec.evaluate("C<!L>(i,j) = L(i,k) * L(j,k)", L=lower,
                                   formats={"L": "csr"})
        np.testing.assert_allclose(np.asarray(full), c.toarray() + np.asarray(outside))
