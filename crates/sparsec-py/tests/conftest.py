"""Shared helpers of the sparsec Python tests."""

from pathlib import Path

import numpy as np
import pytest


def shared_data(rel: str) -> Path:
    """The shared data file ``rel`` under ``shared/data`` beside the repository (as the Rust
    tests find it). A missing file fails the test: these tests need the data and do not
    skip."""
    root = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
    path = root / rel
    assert path.exists(), f"shared data {path} is missing (see {root}/SOURCES.md); these tests need it"
    return path


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261123)
