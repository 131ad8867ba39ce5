"""Dimensions of 2^31, 2^32 and 3e9 through the Python API: storage that cannot be
allocated raises sparsec's error naming the bytes, and nothing aborts the interpreter.
Each case runs in a child interpreter with its address space limited, so that large
allocations fail as they would on a machine with less memory, whatever this one has."""

import os
import resource
import subprocess
import sys
import textwrap

import pytest

ADDRESS_SPACE = 6 << 30

SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    import sparsec

    n = int(sys.argv[1])
    path = sys.argv[2]
    with open(path, "w") as f:
        f.write(f"%%MatrixMarket matrix coordinate real general\\n{n} {n} 2\\n1 1 1.0\\n{n} {n} 2.0\\n")

    def refused(what, call):
        try:
            call()
        except sparsec.Error as e:
            assert any(w in str(e) for w in ("bytes", "memory", "address space")), f"{what}: {e}"
            print(f"{what}: refused")
        else:
            print(f"{what}: ran")

    coords = np.array([[0, n - 1], [0, n - 1]])
    values = np.array([1.0, 2.0])
    refused("from_coo csr", lambda: sparsec.Tensor.from_coo((n, n), coords, values, "csr"))
    refused("read csr", lambda: sparsec.read(path, "csr"))
    a = sparsec.Tensor.from_coo((n, n), coords, values, "dcsr")
    assert a.shape == (n, n) and a.stored_values == 2
    b = sparsec.read(path, "dcsr")
    assert b.shape == (n, n)
    refused("convert dense", lambda: a.convert("dense"))
    refused("to_numpy", a.to_numpy)
    refused("convert csr", lambda: a.convert("csr"))
    total = sparsec.evaluate("s = A(i,j) * A(i,j)", A=a)
    assert float(total) == 5.0, total
    refused(
        "spgemm",
        lambda: sparsec.evaluate("C(i,j) = A(i,k) * A(k,j)", A=a, formats={"C": "dcsr"}),
    )
    refused(
        "dense output",
        lambda: sparsec.evaluate("y(i) = A(i,j)", A=a, formats={"A": "dcsr", "y": "d"}),
    )
    print("done")
    """
)


def limit_address_space():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.mark.parametrize("n", [1 << 31, 1 << 32, 3_000_000_000])
def test_huge_dimensions_raise_errors_and_never_abort(n, tmp_path):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(n), str(tmp_path / "huge.mtx")],
        capture_output=True,
        text=True,
        preexec_fn=limit_address_space,
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
    assert run.stdout.strip().endswith("done"), run.stdout
    # Arrays of one element per row (8n bytes, at least 16 GiB) never fit the limit.
    for what in ["from_coo csr", "read csr", "convert dense", "to_numpy", "convert csr"]:
        assert f"{what}: refused" in run.stdout, run.stdout
