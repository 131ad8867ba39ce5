"""Errors become Python exceptions with sparsec's messages."""

import numpy as np
import pytest
import scipy.sparse as sp

import sparsec


def test_notation_error_carries_the_annotated_expression():
    with pytest.raises(sparsec.NotationError) as err:
        sparsec.compile("y(i) = A(i,j) * ")
    text = str(err.value)
    assert "y(i) = A(i,j) * " in text
    assert isinstance(err.value, ValueError)


def test_dimension_mismatch_is_a_notation_error():
    a = sp.csr_array(np.ones((3, 4)))
    with pytest.raises(sparsec.NotationError, match="j"):
        sparsec.evaluate("y(i) = A(i,j) * x(j)", A=a, x=np.ones(5))


def test_schedule_errors():
    with pytest.raises(sparsec.ScheduleError):
        sparsec.compile("y(i) = A(i,j) * x(j)", schedule="split(i,")
    a = sp.csr_array(np.ones((3, 4)))
    with pytest.raises(sparsec.ScheduleError):
        sparsec.evaluate("y(i) = A(i,j) * x(j)", A=a, x=np.ones(4), schedule="reorder(q,i)")


def test_missing_and_unknown_inputs():
    k = sparsec.compile("y(i) = A(i,j) * x(j)")
    with pytest.raises(sparsec.InputError, match="missing: x"):
        k(A=np.ones((2, 2)))
    with pytest.raises(sparsec.InputError, match="`z` is not an input"):
        k(A=np.ones((2, 2)), x=np.ones(2), z=np.ones(2))
    with pytest.raises(sparsec.InputError, match="does not use"):
        sparsec.compile("y(i) = A(i,j) * x(j)", formats={"B": "csr"})


def test_opencl_needs_its_feature():
    # The package is built without the `opencl` feature: compiling says which is missing,
    # after the default GPU mapping has been chosen (no CPU schedule is refused).
    k = sparsec.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, backend="opencl")
    with pytest.raises(sparsec.CompileError, match="`opencl` feature"):
        k(A=np.ones((3, 2)), x=np.ones(2))


def test_bad_options():
    with pytest.raises(sparsec.InputError, match="backend"):
        sparsec.compile("y(i) = x(i)", backend="gpu")
    with pytest.raises(sparsec.InputError, match="dtype"):
        sparsec.compile("y(i) = x(i)", dtype="int8")
    with pytest.raises(sparsec.InputError, match="threads"):
        sparsec.compile("y(i) = x(i)", threads=0)
    with pytest.raises(sparsec.InputError, match="initial"):
        sparsec.evaluate("y(i) = x(i)", x=np.ones(2), initial=np.ones(2))


def test_wrong_order_input():
    with pytest.raises(sparsec.InputError, match="2 indices"):
        sparsec.evaluate("y(i) = A(i,j) * x(j)", A=np.ones(3), x=np.ones(3))


def test_object_inputs_are_refused():
    with pytest.raises(sparsec.InputError, match="dict"):
        sparsec.evaluate("y(i) = x(i)", x={"a": 1})
