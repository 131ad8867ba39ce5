#!/usr/bin/env python3
"""Benchmark (not a test): dense matrix multiply specialised to its inputs' blocks
(`sparsec specialise examples/affine/mm.c`) against the same program run dense, and
against sparsec's own index-notation kernel `C(i,j) = A(i,k) * B(k,j)` on CSR and on
BCSR (4x4 blocks) inputs, in one run, on the same matrices.

Inputs: the partial-evaluation paper's synthetic matrices (`r` random squares of side 3
to n / r in an n x n matrix, values in [0.5, 1.5)) and shared matrices given on the
command line. For each: the analysis time, the boxes, and the medians of N runs of each
kernel (the specialised and dense times are the kernel's call alone, on arrays already
laid into its one buffer, as `sparsec specialise --time` reports them), with the ratios dense / specialised and CSR / specialised (above 1:
the specialised code is faster). The dense run is left out above n = 1600 (n^3 work).

Shared matrices with dense blocks are also run through GEMM with a dense right-hand side
of 16 columns (`examples/affine/gemm.c`, `C = A * B`), whose regions are A's boxes alone,
at each density threshold of `--thresholds`, against the index-notation kernel on CSR and
BCSR A with dense B (`--spmm MATRIX.mtx ...`).

    python3 bench/affine_specialise.py [--runs N] [--threads T] [MATRIX.mtx ...]
        [--spmm MATRIX.mtx ... [--thresholds 1,0.5,0.2]]
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MM = os.path.join(ROOT, "examples", "affine", "mm.c")
GEMM = os.path.join(ROOT, "examples", "affine", "gemm.c")
SPMM_COLUMNS = 16
DENSE_LIMIT = 1600


def binary():
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "sparsec-cli"], cwd=ROOT, check=True
    )
    return os.path.join(ROOT, "target", "release", "sparsec")


def random_squares(n, r, seed, path):
    rng = random.Random(seed)
    cells = {}
    for _ in range(r):
        t = rng.randint(3, max(3, n // r))
        x, y = rng.randrange(0, n - t), rng.randrange(0, n - t)
        for i in range(x, x + t + 1):
            for j in range(y, y + t + 1):
                cells[(i, j)] = 0.5 + rng.random()
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{n} {n} {len(cells)}\n")
        for (i, j), v in sorted(cells.items()):
            f.write(f"{i + 1} {j + 1} {v!r}\n")


def median_of(text, phase):
    m = re.search(rf"^\s*{phase}\s+median ([0-9.]+) ms", text, re.M)
    return float(m.group(1)) if m else None


def run(cmd, timeout=1800):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr else "failed")
    return out.stdout


def bench(exe, name, a, b, n, runs, threads):
    row = {"input": name, "n": n}
    common = ["--threads", str(threads)]
    spec = [exe, "specialise", MM, "-i", f"A:{a}", "-i", f"B:{b}"] + common
    try:
        report = run(spec + ["--run", "--time", str(runs)] + (["--dense"] if n <= DENSE_LIMIT else []))
    except Exception as e:  # noqa: BLE001 - reported in the table
        row["error"] = str(e)
        return row
    row["boxes"] = re.search(r"A: (\d+) box", report).group(1)
    row["analysis_ms"] = float(re.search(r"analysis: ([0-9.]+) ms", report).group(1))
    row["special_ms"] = median_of(report, "special")
    row["dense_ms"] = median_of(report, "dense")
    for fmt in ["csr", "bcsr:4x4"]:
        out = run([exe, "run", "C(i,j) = A(i,k) * B(k,j)", "-f", f"A:{fmt}", "-f", f"B:{fmt}",
                   "-i", f"A:{a}", "-i", f"B:{b}", "--backend", "c", "--time", str(runs)] + common)
        row[f"{fmt}_ms"] = median_of(out, "compute")
    return row


def dense_matrix(rows, cols, seed, path):
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{rows} {cols} {rows * cols}\n")
        for i in range(rows):
            for j in range(cols):
                f.write(f"{i + 1} {j + 1} {0.5 + rng.random()!r}\n")


def bench_spmm(exe, path, threshold, b, runs, threads):
    """GEMM with A a shared matrix and B dense, specialised to A's boxes."""
    row = {"input": f"{os.path.basename(path)} d={threshold}"}
    common = ["--threads", str(threads)]
    spec = [exe, "specialise", GEMM, "-i", f"A:{path}", "-i", f"B:{b}", "--scalar", "alpha=1",
            "--scalar", "beta=0", "--threshold", str(threshold)] + common
    try:
        report = run(spec + ["--run", "--dense", "--time", str(runs)])
    except Exception as e:  # noqa: BLE001 - reported in the table
        row["error"] = str(e)[:200]
        return row
    if "agree on every array" not in report:
        row["error"] = "the specialised and dense programs disagree"
        return row
    m = re.search(r"A: (\d+) box\(es\) cover (\d+) non-zeros with (\d+) explicit zeros", report)
    row["boxes"] = m.group(1)
    row["padding"] = int(m.group(3)) / int(m.group(2))
    row["analysis_ms"] = float(re.search(r"analysis: ([0-9.]+) ms", report).group(1))
    row["special_ms"] = median_of(report, "special")
    row["dense_ms"] = median_of(report, "dense")
    for fmt in ["csr", "bcsr:4x4"]:
        out = run([exe, "run", "C(i,j) = A(i,k) * B(k,j)", "-f", f"A:{fmt}", "-f", "B:dd",
                   "-i", f"A:{path}", "-i", f"B:{b}", "--backend", "c", "--time", str(runs)] + common)
        row[f"{fmt}_ms"] = median_of(out, "compute")
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("matrices", nargs="*")
    parser.add_argument("--spmm", nargs="*", default=[])
    parser.add_argument("--thresholds", default="1,0.5,0.2")
    args = parser.parse_args()
    exe = binary()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, r in [(600, 20), (1500, 50), (3000, 100)]:
            a, b = os.path.join(tmp, f"a{n}.mtx"), os.path.join(tmp, f"b{n}.mtx")
            random_squares(n, r, 1, a)
            random_squares(n, r, 2, b)
            rows.append(bench(exe, f"squares n={n} r={r}", a, b, n, args.runs, args.threads))
            print(rows[-1], file=sys.stderr)
        for path in args.matrices:
            with open(path) as f:
                header = next(line for line in f if not line.startswith("%"))
            n = int(header.split()[0])
            rows.append(bench(exe, os.path.basename(path), path, path, n, args.runs, args.threads))
            print(rows[-1], file=sys.stderr)
        for path in args.spmm:
            with open(path) as f:
                header = next(line for line in f if not line.startswith("%"))
            k = int(header.split()[1])
            b = os.path.join(tmp, f"dense{k}.mtx")
            dense_matrix(k, SPMM_COLUMNS, 3, b)
            for threshold in args.thresholds.split(","):
                rows.append(bench_spmm(exe, path, float(threshold), b, args.runs, args.threads))
                print(rows[-1], file=sys.stderr)
    print(f"\nthreads {args.threads}, medians of {args.runs} runs (ms); ratios above 1: specialised faster")
    print("spmm rows: GEMM with a dense B of %d columns; padding: explicit zeros per non-zero" % SPMM_COLUMNS)
    print(f"{'input':<28} {'boxes':>6} {'analysis':>9} {'special':>9} {'dense':>9} {'csr':>9} "
          f"{'bcsr4':>9} {'dense/sp':>9} {'csr/sp':>8} {'bcsr/sp':>8}")
    for row in rows:
        if "error" in row:
            print(f"{row['input']:<28} failed: {row['error']}")
            continue

        def fmt(x):
            return f"{x:9.3f}" if x is not None else f"{'-':>9}"

        def ratio(x):
            return f"{x / row['special_ms']:8.2f}" if x is not None and row["special_ms"] else f"{'-':>8}"
        pad = f" padding {row['padding']:.2f}" if "padding" in row else ""
        print(f"{row['input']:<28} {row['boxes']:>6} {fmt(row['analysis_ms'])} {fmt(row['special_ms'])} "
              f"{fmt(row['dense_ms'])} {fmt(row['csr_ms'])} {fmt(row['bcsr:4x4_ms'])} "
              f"{ratio(row['dense_ms']):>9} {ratio(row['csr_ms'])} {ratio(row['bcsr:4x4_ms'])}{pad}")


if __name__ == "__main__":
    main()
