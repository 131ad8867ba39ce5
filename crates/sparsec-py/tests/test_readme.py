"""The README's Python example runs as printed, with the package as the README's first
install command builds it (no optional features needed)."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[3] / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_readme_python_example_runs():
    blocks = python_blocks(README.read_text())
    assert blocks, "README.md has a Python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    y, choice = namespace["y"], namespace["choice"]
    assert y.shape == (1000,)
    assert set(choice) >= {"formats", "schedule", "threads"}
