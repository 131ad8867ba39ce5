#!/usr/bin/env python3
"""Strong scaling of distributed SpMV (`sparsec run --distributed` under mpirun) at 1, 2
and 4 ranks, against one process without MPI, with each rank's ghost traffic per product.

    python3 bench/distributed.py [--runs N] [--side S] [--ranks 1 2 4]

Needs OpenMPI (`mpirun`) and the release CLI built with MPI:
`cargo build --release -p sparsec-cli --features mpi`. Matrices: the largest shared ones
and a generated 2-D Laplacian of `side`^2 rows (5 entries per row), written to a temporary
.mtx file. Each rank computes its rows on one thread (`--threads 1`), so that ranks, not
threads, share the cores; on a machine with fewer cores than ranks the ranks take turns,
and the figures say so. Times are the medians of `--runs` products of the slowest rank.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("SPARSEC_DATA", os.path.join(ROOT, "..", "shared", "data"))
SPARSEC = os.path.join(ROOT, "target", "release", "sparsec")
SHARED = ["cage10", "bcsstk16", "ct2010"]
STATEMENT = "y(i) = A(i,j) * x(j)"


def laplacian(side, path):
    """The 5-point Laplacian of a side x side grid, as a symmetric MatrixMarket file."""
    n = side * side
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real symmetric\n")
        lines = []
        for x in range(side):
            for y in range(side):
                i = x * side + y + 1
                lines.append(f"{i} {i} 4")
                if x + 1 < side:
                    lines.append(f"{i + side} {i} -1")
                if y + 1 < side:
                    lines.append(f"{i + 1} {i} -1")
        f.write(f"{n} {n} {len(lines)}\n")
        f.write("\n".join(lines))
        f.write("\n")


def median_ms(output):
    m = re.search(r"(?:compute|product)\s+median ([0-9.]+) (ms|µs|s)", output)
    if not m:
        raise RuntimeError(output)
    value, unit = float(m.group(1)), m.group(2)
    return value * {"ms": 1.0, "µs": 1e-3, "s": 1e3}[unit]


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(" ".join(command) + "\n" + done.stdout + done.stderr)
    return done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    if not os.path.exists(SPARSEC):
        sys.exit(f"{SPARSEC} is missing: cargo build --release -p sparsec-cli --features mpi")
    tmp = tempfile.mkdtemp()
    generated = os.path.join(tmp, f"laplacian-{args.side}.mtx")
    laplacian(args.side, generated)
    matrices = [(name, os.path.join(DATA, "matrices", f"{name}.mtx")) for name in SHARED]
    matrices.append((f"laplacian-{args.side}", generated))
    common = [STATEMENT, "-f", "A:csr", "-g", "x:dense", "--threads", "1",
              "--time", str(args.runs)]
    print(f"cores: {os.cpu_count()}")
    print(f"{'matrix':<18} {'ranks':>5} {'ms':>9} {'speedup':>8}  ghost values sent/received by rank")
    for name, path in matrices:
        single = median_ms(run([SPARSEC, "run", *common, "-i", f"A:{path}", "--backend", "c"]))
        print(f"{name:<18} {'none':>5} {single:>9.3f} {1.0:>8.2f}  (one process, no MPI)")
        for ranks in args.ranks:
            out = run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
                       SPARSEC, "run", *common, "-i", f"A:{path}", "--distributed"])
            ms = median_ms(out)
            volume = re.search(r"sent/received by rank: (.*)", out).group(1)
            print(f"{name:<18} {ranks:>5} {ms:>9.3f} {single / ms:>8.2f}  {volume}")


if __name__ == "__main__":
    main()
