"""Type stubs of the ``sparsec._native`` extension module (Rust, pyo3)."""

import os
from typing import Any

import numpy as np

class Error(ValueError):
    """Base class of every error sparsec reports (a ValueError)."""

class NotationError(Error):
    """The expression does not parse, or does not fit the tensors given."""

class ScheduleError(Error):
    """A schedule does not parse, or a transformation's precondition does not hold."""

class CompileError(Error):
    """The statement cannot be lowered, printed or compiled as its formats and schedule say."""

class FormatError(Error):
    """A format string does not parse, or a format cannot hold the tensor."""

class InputError(Error):
    """Arrays or tensors given to sparsec are malformed or do not match the statement."""

class FileError(Error):
    """A file could not be read or written."""

class Borrowed:
    """Arrays lent to kernel calls, read in place (checked on every call) instead of copied."""

    @staticmethod
    def dense(array: np.ndarray) -> Borrowed: ...
    @staticmethod
    def compressed(
        shape: list[int],
        indptr: np.ndarray,
        indices: np.ndarray,
        data: np.ndarray,
        column_major: bool,
    ) -> Borrowed: ...
    @property
    def shape(self) -> tuple[int, ...]: ...

class Tensor:
    """A tensor stored in a sparsec format (levels of index arrays and a value array)."""

    @staticmethod
    def from_coo(shape: list[int], coords: np.ndarray, values: np.ndarray, format: str) -> Tensor: ...
    @staticmethod
    def from_dense(array: np.ndarray, format: str) -> Tensor: ...
    @staticmethod
    def from_compressed(
        shape: list[int],
        indptr: np.ndarray,
        indices: np.ndarray,
        data: np.ndarray,
        format: str,
        column_major: bool,
    ) -> Tensor: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def order(self) -> int: ...
    @property
    def format(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def index_dtype(self) -> str: ...
    @property
    def stored_values(self) -> int: ...
    @property
    def fill(self) -> float: ...
    def with_fill(self, fill: float) -> Tensor: ...
    def to_coo(self) -> tuple[np.ndarray, np.ndarray]: ...
    def to_dense(self) -> np.ndarray: ...
    def compressed_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def convert(self, format: str) -> Tensor: ...
    def write(self, path: str | os.PathLike[str]) -> None: ...

class Assembled:
    """An output assembled once, whose values ``Kernel.compute`` recomputes in place."""

    def output(self) -> Any: ...
    @property
    def dtype(self) -> str: ...

class Kernel:
    """A statement, compiled for the shapes and value type of the tensors it is run on."""

    def __init__(
        self,
        expr: str,
        formats: dict[str, str] | None = None,
        schedule: str | None = None,
        threads: int | None = None,
        backend: str = "tiered",
        dtype: str | None = None,
        sums: str = "measured",
    ) -> None: ...
    @property
    def expr(self) -> str: ...
    @property
    def inputs(self) -> list[str]: ...
    @property
    def output(self) -> str: ...
    @property
    def output_format(self) -> str: ...
    @property
    def accumulate(self) -> bool: ...
    @property
    def copied_inputs(self) -> list[str]: ...
    def compile_for_shapes(self, shapes: dict[str, list[int]]) -> None: ...
    def run(self, inputs: dict[str, Tensor | Borrowed], initial: Tensor | None = None) -> Any: ...
    def assemble(self, inputs: dict[str, Tensor | Borrowed], initial: Tensor | None = None) -> Assembled: ...
    def compute(
        self, assembled: Assembled, inputs: dict[str, Tensor | Borrowed], initial: Tensor | None = None
    ) -> None: ...
    def tune(
        self,
        inputs: dict[str, Tensor | Borrowed],
        budget: float = 10.0,
        search: str = "random",
        model: str | None = None,
        candidates: int | None = None,
    ) -> dict[str, Any]: ...
    @property
    def source(self) -> str: ...
    @property
    def loop_order(self) -> list[str]: ...
    @property
    def was_compiled(self) -> bool: ...
    @property
    def backend(self) -> str: ...
    @property
    def running_backend(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def sum_version(self) -> str | None: ...
    def finish_compiling(self) -> None: ...

def cache_info() -> dict[str, int]: ...
def format_spelling(text: str, order: int) -> str: ...
def features() -> list[str]: ...
def read(path: str | os.PathLike[str], format: str | None = None) -> Tensor: ...
def specialise(
    program: str,
    arrays: dict[str, Any],
    params: dict[str, int] | None = None,
    threshold: float = 1.0,
    run: bool = True,
    map: bool = False,
) -> dict[str, Any]: ...
