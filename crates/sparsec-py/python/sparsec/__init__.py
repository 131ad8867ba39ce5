"""sparsec: a sparse tensor algebra compiler, from NumPy and SciPy.

Write a computation in tensor index notation, say how each tensor is stored, and sparsec
generates a kernel for exactly that combination, compiles it once (the C compiler's output
is cached on disk, and every kernel is memoized in the process) and runs it on your arrays::

    import numpy as np, scipy.sparse as sp, sparsec
    A = sp.random_array((1000, 1000), density=0.01, format="csr")
    x = np.ones(1000)
    y = sparsec.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x)          # a NumPy array
    spmv = sparsec.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    y = spmv(A=A, x=x)                                               # compiled once

Inputs may be NumPy arrays, ``scipy.sparse`` arrays or matrices, ``pydata/sparse`` COO
and GCXS arrays, or :class:`Tensor` (any sparsec format). Outputs are NumPy arrays for a
dense output, ``scipy.sparse`` CSR/CSC/COO arrays when the output format is one of those,
and :class:`Tensor` for formats SciPy lacks.

Copies: a kernel call reads SciPy CSR and CSC matrices and pydata/sparse GCXS matrices
(``indptr``, ``indices`` and ``data``, int32 or int64 indices, float64 or float32 values) and C-contiguous float64 or
float32 NumPy arrays in place, without a copy. Each call checks the structure of a matrix
it reads in place (offsets, index ranges, sorted indices), since its arrays may have
changed since the last call; do not write to them while a call runs. Everything else is
copied once per call into storage sparsec owns: a matrix with unsorted or duplicate
indices (sorted, and duplicates summed, as SciPy's ``sum_duplicates`` would), COO and
other SciPy formats, pydata/sparse COO arrays, non-contiguous and Fortran-ordered arrays (read
through their strides, never misread), integer and boolean values (converted to float64;
complex values are refused), and any input whose layout or value type differs from the
one the kernel reads (a CSR matrix given ``formats={"A": "csc"}`` is converted). A
:class:`Tensor` is sparsec's own storage, never copied by a call. Outputs are handed to
NumPy and SciPy without a copy: the arrays the kernel produced become the NumPy arrays.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as _sp

from . import _native, operators
from .operators import definitions as _definitions
from ._native import (
    CompileError,
    Error,
    FileError,
    FormatError,
    InputError,
    NotationError,
    ScheduleError,
    cache_info,
)

__all__ = [
    "Assembled",
    "CompileError",
    "Error",
    "FileError",
    "FormatError",
    "InputError",
    "Kernel",
    "NotationError",
    "ScheduleError",
    "Tensor",
    "cache_info",
    "compile",
    "evaluate",
    "features",
    "operators",
    "read",
    "specialise",
    "tune",
]


def _float_values(values: Any, what: str) -> np.ndarray:
    """``values`` as a float64 or float32 array (other real dtypes converted to float64)."""
    array = np.asarray(values)
    if array.dtype in (np.float64, np.float32):
        return array
    if np.issubdtype(array.dtype, np.complexfloating):
        raise InputError(f"{what} has complex values ({array.dtype}), which sparsec does not support")
    if array.dtype == np.bool_ or np.issubdtype(array.dtype, np.integer) or np.issubdtype(
        array.dtype, np.floating
    ):
        return array.astype(np.float64)
    raise InputError(f"{what} has values of dtype {array.dtype}, which sparsec does not support")


def _index_array(indices: Any) -> np.ndarray:
    """Indices as an int32 or int64 array (other integer dtypes widened to int64)."""
    array = np.asarray(indices)
    if array.dtype in (np.int64, np.int32) or not np.issubdtype(array.dtype, np.integer):
        return array
    return array.astype(np.int64)


def _pydata_sparse_type(obj: Any) -> str | None:
    """``"COO"`` or ``"GCXS"`` when ``obj`` is a pydata/sparse array of that kind."""
    module = sys.modules.get("sparse")
    if module is None:
        return None
    for kind in ("COO", "GCXS"):
        cls = getattr(module, kind, None)
        if cls is not None and isinstance(obj, cls):
            return kind
    return None


def _native_tensor(obj: Any, format: str | None, name: str = "tensor") -> _native.Tensor:
    """A native tensor holding ``obj``, stored in ``format`` when that is given."""
    if isinstance(obj, Tensor):
        obj = obj._native
    if isinstance(obj, _native.Tensor):
        if format is None or _native.format_spelling(format, obj.order) == obj.format:
            return obj
        return obj.convert(format)
    if _sp.issparse(obj):
        return _from_scipy(obj, format, name)
    kind = _pydata_sparse_type(obj)
    if kind == "GCXS" and obj.ndim == 2 and tuple(obj.compressed_axes) in ((0,), (1,)):
        column_major = tuple(obj.compressed_axes) == (1,)
        return _native.Tensor.from_compressed(
            list(obj.shape),
            _index_array(obj.indptr),
            _index_array(obj.indices),
            _float_values(obj.data, name),
            format or ("csc" if column_major else "csr"),
            column_major,
        )
    if kind is not None:
        coo = obj if kind == "COO" else obj.tocoo()
        return _native.Tensor.from_coo(
            list(coo.shape),
            _index_array(coo.coords),
            _float_values(coo.data, name),
            format or "coo",
        )
    array = np.asarray(obj)
    if array.dtype == object:
        raise InputError(f"{name} is a {type(obj).__name__}, which sparsec cannot read as a tensor")
    return _native.Tensor.from_dense(_float_values(array, name), format or "dense")


_FLOAT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))


def _kernel_input(
    obj: Any, format: str | None, name: str
) -> _native.Tensor | _native.Borrowed:
    """What a kernel call reads for ``obj``: SciPy CSR/CSC matrices, pydata/sparse GCXS
    matrices and NumPy arrays of float64 or float32 values are lent to the kernel, which
    reads their arrays in place when it can and converts them itself when the kernel's
    format differs; anything else becomes a native tensor (a copy)."""
    if _sp.issparse(obj) and obj.format in ("csr", "csc"):
        column_major = obj.format == "csc"
    elif (
        _pydata_sparse_type(obj) == "GCXS"
        and obj.ndim == 2
        and tuple(obj.compressed_axes) in ((0,), (1,))
    ):
        column_major = tuple(obj.compressed_axes) == (1,)
    else:
        column_major = None
    if (
        column_major is not None
        and obj.data.dtype in _FLOAT_DTYPES
        and obj.indptr.dtype in _INDEX_DTYPES
        and obj.indices.dtype in _INDEX_DTYPES
    ):
        return _native.Borrowed.compressed(
            list(obj.shape), obj.indptr, obj.indices, obj.data, column_major
        )
    # Subclasses (masked arrays, matrices) mean more than their data: they are converted.
    if type(obj) is np.ndarray and obj.dtype in _FLOAT_DTYPES:
        return _native.Borrowed.dense(obj)
    return _native_tensor(obj, format, name)


def _from_scipy(matrix: Any, format: str | None, name: str) -> _native.Tensor:
    kind = matrix.format
    if kind not in ("csr", "csc", "coo"):
        # BSR, DIA, LIL and DOK have no arrays sparsec reads: convert (a copy).
        matrix, kind = matrix.tocsr(), "csr"
    data = _float_values(matrix.data, name)
    shape = list(matrix.shape)
    if kind == "coo":
        coords = np.stack([_index_array(c) for c in matrix.coords]) if matrix.nnz else np.zeros(
            (len(shape), 0), dtype=np.int64
        )
        return _native.Tensor.from_coo(shape, coords, data, format or "coo")
    return _native.Tensor.from_compressed(
        shape,
        _index_array(matrix.indptr),
        _index_array(matrix.indices),
        data,
        format or kind,
        kind == "csc",
    )


def _is_format(spelling: str, name: str, order: int) -> bool:
    try:
        return spelling == _native.format_spelling(name, order)
    except FormatError:
        return False


def _to_python(result: Any) -> Any:
    """A kernel's output as NumPy, SciPy or :class:`Tensor` (see ``_native.Kernel.run``)."""
    if isinstance(result, tuple):
        kind, shape, indptr, indices, data = result
        cls = _sp.csr_array if kind == "csr" else _sp.csc_array
        return cls((data, indices, indptr), shape=shape, copy=False)
    if isinstance(result, _native.Tensor):
        scipy_fill = result.fill == 0.0
        if scipy_fill and result.order in (1, 2) and _is_format(result.format, "coo", result.order):
            coords, values = result.to_coo()
            return _sp.coo_array((values, tuple(coords)), shape=result.shape)
        return Tensor(result)
    return result


class Tensor:
    """A tensor stored in any sparsec format.

    Build one with :meth:`from_numpy`, :meth:`from_scipy`, :meth:`from_sparse`,
    :meth:`from_coo` or :meth:`from_any`; ``format`` is a sparsec format string: named
    (``"dense"``, ``"csr"``, ``"csc"``, ``"coo"``, ``"dcsr"``, ``"dcsc"``, ``"csf"``,
    ``"sv"``, ``"hash"``, ``"ell"``, ``"dia"``, ``"bcsr:RxC"``) or one letter per level
    (``"ds"`` is CSR, ``"ds:1,0"`` CSC).
    """

    __slots__ = ("_native",)

    def __init__(self, native: _native.Tensor) -> None:
        """Wrap a native tensor; use the ``from_*`` constructors to build one."""
        if not isinstance(native, _native.Tensor):
            raise TypeError("use Tensor.from_numpy, from_scipy, from_sparse, from_coo or from_any")
        self._native = native

    @classmethod
    def from_any(cls, obj: Any, format: str | None = None) -> Tensor:
        """A tensor from a NumPy array, ``scipy.sparse`` array, pydata/sparse array or
        Tensor, in ``format`` (default: the layout it already has)."""
        return cls(_native_tensor(obj, format))

    @classmethod
    def from_numpy(cls, array: Any, format: str = "dense") -> Tensor:
        """A tensor from a dense array; sparse formats keep its nonzero components."""
        return cls(_native_tensor(np.asarray(array), format))

    @classmethod
    def from_scipy(cls, matrix: Any, format: str | None = None) -> Tensor:
        """A tensor from a ``scipy.sparse`` array or matrix (default format: CSR for CSR,
        CSC for CSC, COO for COO, CSR for the others)."""
        if not _sp.issparse(matrix):
            raise InputError(f"expected a scipy.sparse array or matrix, not {type(matrix).__name__}")
        return cls(_from_scipy(matrix, format, "matrix"))

    @classmethod
    def from_sparse(cls, array: Any, format: str | None = None) -> Tensor:
        """A tensor from a pydata/sparse ``COO`` or ``GCXS`` array."""
        if _pydata_sparse_type(array) is None:
            raise InputError(f"expected a pydata/sparse COO or GCXS array, not {type(array).__name__}")
        return cls(_native_tensor(array, format))

    @classmethod
    def from_coo(
        cls, shape: tuple[int, ...], coords: Any, values: Any, format: str = "coo",
        fill: float = 0.0,
    ) -> Tensor:
        """A tensor from coordinates (one row per mode) and values; unsorted entries are
        sorted and duplicates summed. ``fill`` is the value of every other component."""
        coords = _index_array(coords)
        if coords.ndim == 1 and coords.size == 0:
            coords = coords.reshape(len(shape), 0)
        native = _native.Tensor.from_coo(list(shape), coords, _float_values(values, "values"), format)
        return cls(native.with_fill(float(fill)) if fill != 0.0 else native)

    @property
    def fill(self) -> float:
        """The value of every component the tensor does not store: 0 unless set, and a
        semiring's reduction identity for the result of a kernel over it (``inf`` for
        ``(min, +)``)."""
        return self._native.fill

    def with_fill(self, fill: float) -> Tensor:
        """The same stored entries with ``fill`` as the value of every other component."""
        return Tensor(self._native.with_fill(float(fill)))

    @property
    def shape(self) -> tuple[int, ...]:
        """Dimension sizes."""
        return self._native.shape

    @property
    def ndim(self) -> int:
        """Number of modes."""
        return self._native.order

    @property
    def format(self) -> str:
        """The format, as sparsec spells it (``"ds"`` for CSR)."""
        return self._native.format

    @property
    def dtype(self) -> np.dtype:
        """The value type (float64 or float32)."""
        return np.dtype(self._native.dtype)

    @property
    def index_dtype(self) -> np.dtype:
        """The index width (int32 when every index array is 32-bit, else int64). Tensors are
        built with the narrowest width; CSR/CSC arrays from SciPy keep their own."""
        return np.dtype(self._native.index_dtype)

    @property
    def stored_values(self) -> int:
        """Number of stored values, padding of non-compact formats included."""
        return self._native.stored_values

    def convert(self, format: str) -> Tensor:
        """The same tensor in another format."""
        return Tensor(self._native.convert(format))

    def to_coo(self) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates (``(ndim, nnz)`` int64, row-major order) and values."""
        return self._native.to_coo()

    def to_numpy(self) -> np.ndarray:
        """Every component, as a dense NumPy array."""
        return self._native.to_dense()

    def to_scipy(self, format: str | None = None) -> Any:
        """A ``scipy.sparse`` array of a matrix: ``"csr"``, ``"csc"`` or ``"coo"`` (default:
        CSR or CSC when stored so, else COO)."""
        if self.ndim != 2:
            raise InputError(f"scipy.sparse holds matrices; this tensor has {self.ndim} modes")
        if self.fill != 0.0:
            raise InputError(
                f"this tensor's missing entries are {self.fill}, and scipy.sparse's are 0; "
                "use to_numpy(), or to_sparse(), which keeps the fill value"
            )
        if format is None:
            format = next((f for f in ("csr", "csc") if _is_format(self.format, f, 2)), "coo")
        if format in ("csr", "csc"):
            source = self._native if _is_format(self.format, format, 2) else self._native.convert(format)
            indptr, indices, data = source.compressed_arrays()
            cls = _sp.csr_array if format == "csr" else _sp.csc_array
            return cls((data, indices, indptr), shape=self.shape, copy=False)
        if format == "coo":
            coords, values = self.to_coo()
            return _sp.coo_array((values, tuple(coords)), shape=self.shape)
        raise InputError(f"scipy.sparse format must be \"csr\", \"csc\" or \"coo\", not {format!r}")

    def to_sparse(self, format: str = "coo") -> Any:
        """A pydata/sparse array: ``"coo"`` or ``"gcxs"`` (needs the ``sparse`` package)."""
        import sparse

        coords, values = self.to_coo()
        coo = sparse.COO(coords, values, shape=self.shape, has_duplicates=False, sorted=True,
                         fill_value=self.fill)
        if format == "coo":
            return coo
        if format == "gcxs":
            return sparse.GCXS(coo)
        raise InputError(f"pydata/sparse format must be \"coo\" or \"gcxs\", not {format!r}")

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write to ``path``: ``.mtx`` (order 1 or 2), ``.tns``, ``.spt`` (sparsec's
        binary file, any format exactly) or ``.h5`` (binsparse in HDF5: CSR, CSC, COO,
        DCSR, DCSC, DVEC, DMAT, CVEC under their names, other formats of dense and
        compressed levels as custom descriptors)."""
        self._native.write(os.fspath(path))

    def __repr__(self) -> str:
        return repr(self._native)


def read(path: str | os.PathLike[str], format: str | None = None) -> Tensor:
    """Read a ``.mtx``, ``.tns``, ``.spt`` or binsparse ``.h5`` file into ``format``
    (default: the stored format of ``.spt`` and binsparse files, else CSR for matrices
    and CSF for other orders)."""
    return Tensor(_native.read(os.fspath(path), format))


class Assembled:
    """A sparse output assembled once, whose values :meth:`Kernel.compute` recomputes in
    place for inputs with new values and the same nonzero structure."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.Assembled) -> None:
        self._native = native

    def output(self) -> Any:
        """A copy of the output as it is now (NumPy, SciPy or :class:`Tensor`)."""
        return _to_python(self._native.output())


class Kernel:
    """A compiled statement: call it with the input tensors by name, as often as you
    like. It is compiled once for each combination of input shapes, formats and value
    type, and that kernel is shared by the whole process."""

    __slots__ = ("_native", "_formats")

    def __init__(self, native: _native.Kernel, formats: Mapping[str, str]) -> None:
        self._native = native
        self._formats = dict(formats)

    def _inputs(self, tensors: Mapping[str, Any]) -> dict[str, _native.Tensor | _native.Borrowed]:
        missing = [n for n in self._native.inputs if n not in tensors]
        if missing:
            raise InputError(
                f"`{self._native.expr}` reads {', '.join(self._native.inputs)}; "
                f"missing: {', '.join(missing)}"
            )
        return {
            name: _kernel_input(obj, self._formats.get(name), name) for name, obj in tensors.items()
        }

    def _initial(self, initial: Any) -> _native.Tensor | None:
        if initial is None:
            return None
        return _native_tensor(initial, self._formats.get(self._native.output), "initial")

    def __call__(self, initial: Any = None, **tensors: Any) -> Any:
        """Run on the named tensors; ``initial`` is the output's starting value for
        ``+=`` statements."""
        return _to_python(self._native.run(self._inputs(tensors), self._initial(initial)))

    def assemble(self, initial: Any = None, **tensors: Any) -> Assembled:
        """Run once and keep the output's structure for :meth:`compute`."""
        return Assembled(self._native.assemble(self._inputs(tensors), self._initial(initial)))

    def compute(self, assembled: Assembled, initial: Any = None, **tensors: Any) -> None:
        """Recompute ``assembled``'s values in place for inputs of the same structure
        (a different structure raises :class:`InputError`: assemble again)."""
        self._native.compute(assembled._native, self._inputs(tensors), self._initial(initial))

    @property
    def expr(self) -> str:
        """The statement."""
        return self._native.expr

    @property
    def inputs(self) -> list[str]:
        """Names of the input tensors."""
        return self._native.inputs

    @property
    def output(self) -> str:
        """Name of the output tensor."""
        return self._native.output

    @property
    def source(self) -> str:
        """The generated C of the kernel last run."""
        return self._native.source

    @property
    def loop_order(self) -> list[str]:
        """Loops of the kernel last run, outermost first."""
        return self._native.loop_order

    @property
    def was_compiled(self) -> bool:
        """True when the kernel last run was compiled for this process rather than found
        in the disk cache."""
        return self._native.was_compiled

    @property
    def backend(self) -> str:
        """The backend asked for: ``"c"``, ``"jit"``, ``"tiered"``, ``"opencl"`` or ``"cuda"``."""
        return self._native.backend

    @property
    def running_backend(self) -> str:
        """The backend whose code runs now: ``"c"``, ``"jit"`` or ``"opencl"``."""
        return self._native.running_backend

    @property
    def threads(self) -> int:
        """Threads of the parallel loops."""
        return self._native.threads

    @property
    def sum_version(self) -> str | None:
        """The version of the gathered sums (SpMV's rows, TTV's fibers) chosen by measuring
        on the last call's inputs: ``"scalar"``, ``"lanes"`` or ``"gathers"``; ``None``
        before it is chosen, with ``sums`` other than ``"measured"``, and for kernels with
        one version."""
        return self._native.sum_version

    @property
    def copied_inputs(self) -> list[str]:
        """The inputs the last call copied instead of reading them in place: unsorted or
        duplicate indices, layouts or value types other than those the kernel reads,
        non-contiguous arrays (see the module's notes on copies)."""
        return self._native.copied_inputs

    def finish_compiling(self) -> None:
        """Wait for a tiered kernel's C compilation and use its code from now on."""
        self._native.finish_compiling()

    def __repr__(self) -> str:
        return f"sparsec.Kernel({self._native.expr!r})"


def compile(
    expr: str,
    *,
    formats: Mapping[str, str] | None = None,
    schedule: str | None = None,
    threads: int | None = None,
    backend: str = "tiered",
    dtype: str | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    sums: str = "measured",
    operators: Any = None,
) -> Kernel:
    """Compile ``expr`` (tensor index notation, e.g. ``"y(i) = A(i,j) * x(j)"``).

    ``formats`` maps tensor names to format strings (inputs default to the layout they
    come in, the output to dense); ``schedule`` is a string of scheduling transformations
    (``"split(i,i0,i1,32),parallelize(i0,CPUThread,NoRaces)"``); ``threads`` the threads of
    parallel loops (default: ``OMP_NUM_THREADS`` or all cores); ``backend`` is ``"c"``
    (the C compiler, cached on disk), ``"jit"`` (in process, serial, no compiler),
    ``"tiered"`` (the cached C kernel if there is one, else the JIT's code at once and the
    C compiler's as soon as it is ready), ``"opencl"`` (GPU schedules on an OpenCL device,
    in a package built with the ``opencl`` feature; without a schedule, a default GPU
    mapping) or ``"cuda"`` (printed, not yet launched); ``dtype`` is ``"float64"`` or ``"float32"``
    (default: float32 when every input is, else float64). With ``shapes``
    (``{name: shape}`` for every input) the kernel is compiled now, else at the first call.
    ``sums`` says how the version of gathered sums (SpMV's rows, TTV's fibers) is chosen:
    ``"measured"`` (the run-time tests choose the first call, the next calls measure each
    version, then the fastest runs; results may change in their last bits until then),
    ``"tested"`` (the run-time tests choose every call: results identical to the last
    bit), or one version: ``"scalar"``, ``"lanes"``, ``"gathers"``. ``operators`` lists
    user operators traced from Python functions (:mod:`sparsec.operators`), which
    ``expr`` may call by name.
    """
    native = _native.Kernel(
        _definitions(operators) + expr,
        formats=dict(formats or {}),
        schedule=schedule,
        threads=threads,
        backend=backend,
        dtype=dtype,
        sums=sums,
    )
    if shapes is not None:
        native.compile_for_shapes({name: list(shape) for name, shape in shapes.items()})
    return Kernel(native, formats or {})


def evaluate(
    expr: str,
    /,
    *,
    formats: Mapping[str, str] | None = None,
    schedule: str | None = None,
    threads: int | None = None,
    backend: str = "tiered",
    dtype: str | None = None,
    sums: str = "measured",
    operators: Any = None,
    initial: Any = None,
    **tensors: Any,
) -> Any:
    """Compile ``expr`` (or take it from the process's memo) and run it on ``tensors``.

    ``sparsec.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x)``; the options are those of
    :func:`compile`. Returns a NumPy array for a dense output, a ``scipy.sparse`` array
    for a CSR, CSC or COO output, else a :class:`Tensor`.
    """
    kernel = compile(
        expr,
        formats=formats,
        schedule=schedule,
        threads=threads,
        backend=backend,
        dtype=dtype,
        sums=sums,
        operators=operators,
    )
    return kernel(initial=initial, **tensors)


def tune(
    expr: str,
    /,
    *,
    formats: Mapping[str, str] | None = None,
    threads: int | None = None,
    budget: float = 10.0,
    search: str = "random",
    model: str | os.PathLike[str] | None = None,
    candidates: int | None = None,
    **tensors: Any,
) -> dict[str, Any]:
    """Choose the sparse operands' formats and the schedule of ``expr`` together for
    these ``tensors`` (WACO-style autotuning), measuring candidates for about ``budget``
    seconds. ``search`` is ``"random"`` (formats and schedules drawn together),
    ``"format-only"`` (formats with the default schedule, the baseline) or ``"model"``
    (the learned cost model reads the input's nonzero pattern and ranks the schedules; the
    ``candidates`` it ranks best, 10 by default, are measured). ``"model"`` uses the model
    shipped for the statement (SpMV, SpMM, SDDMM), or the one at the stem ``model`` written
    by ``sparsec tune train``, and needs a package built with the ``learned`` feature
    (see :func:`features`). ``candidates`` also caps the other searches.

    Returns ``{"formats": {name: format}, "schedule": str, "threads": int, "speedup":
    float, "measured": int, "seconds": float}``: pass ``formats``, ``schedule`` and
    ``threads`` to :func:`compile` or :func:`evaluate` to use the choice. ``formats`` given
    here are where the search starts (the default it measures speedup against). The
    choice is also stored in the tuning cache that ``sparsec run --tuned`` reads.
    """
    kernel = compile(expr, formats=formats, threads=threads, backend="c")
    return kernel._native.tune(
        kernel._inputs(tensors),
        budget=budget,
        search=search,
        model=None if model is None else os.fspath(model),
        candidates=candidates,
    )


def features() -> list[str]:
    """The optional parts this build of the package has: ``"binsparse"`` (reading and
    writing ``.h5`` files) and ``"learned"`` (``tune(search="model")``)."""
    return list(_native.features())


def specialise(
    program: str,
    /,
    *,
    params: Mapping[str, int] | None = None,
    threshold: float = 1.0,
    run: bool = True,
    map: bool = False,
    **arrays: Any,
) -> dict[str, Any]:
    """Specialise a dense affine program (C loop nests, see ``docs/affine.md``) to the
    non-zero structure of its arrays, and run it on them.

    ``sparsec.specialise(open("mm.c").read(), A=A, B=B)``: arrays are NumPy arrays (or
    ``scipy.sparse`` matrices, densified), scalars numbers; an array not given starts as
    zeros. Sizes come from the arrays' shapes and ``params``. Returns a dict with
    ``exact`` (whether the analysis is exact), ``reasons`` (what was approximated),
    ``regions`` (each statement's executed iterations) and, with ``run``, ``arrays``
    (every array's final contents, the dense program's results). With ``map``, the
    analysis goes through the solution map, computed for boxes whose bounds are
    parameters and applied to these arrays' boxes (the arrays not given fixed as zeros).
    """
    given = {}
    for name, value in arrays.items():
        if _sp.issparse(value):
            value = value.toarray()
        given[name] = np.array(value, dtype=np.float64, order="C")
    return _native.specialise(
        program, given, dict(params) if params else None, threshold, run, map
    )
