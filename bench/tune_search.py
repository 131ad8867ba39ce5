#!/usr/bin/env python3
"""Autotuning benchmark: `sparsec tune` random search against the format-only baseline.

For each kernel, input and thread count, runs `sparsec tune --json` twice with the same
measurement budget, once drawing formats and schedules together (random search) and once
drawing formats only with sparsec's default schedule (format-only baseline). Prints each
run's speedup over sparsec's default (declared formats, default schedule), the tuning and
conversion cost and the break-even run count, then geometric means per kernel and thread
count, and writes a CSV.

    cargo build --release -p sparsec-cli
    python3 bench/tune_search.py                          # the full run (~8 min)
    python3 bench/tune_search.py --budget 5 --inputs bcsstk13 --kernels spmv   # quick

Runtimes are medians of repeated runs measured by `sparsec tune` itself (preparation,
compute and assembly); every candidate's result is checked against the reference.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "matrices")

KERNELS = {
    "spmv": ("y(i) = A(i,j) * x(j)", ["-f", "A:csr", "-g", "x:dense"]),
    "spmm": ("C(i,j) = A(i,k) * B(k,j)", ["-f", "A:csr", "-g", "B:dense", "-d", "j:16"]),
}

# Generated families (`KIND@N`: an N x N matrix from `-g A:KIND`).
GENERATED = ["powerlaw:8@50000", "banded:4@100000"]


def tune(binary, kernel, source, threads, search, budget, cache):
    expr, extra = KERNELS[kernel]
    if "@" in source:
        kind, n = source.split("@")
        # The second mode of A is `j` (SpMV) or `k` (SpMM).
        inner = "j" if kernel == "spmv" else "k"
        data = ["-g", f"A:{kind}", "-d", f"i:{n}", "-d", f"{inner}:{n}"]
    else:
        data = ["-i", f"A:{os.path.join(DATA, source + '.mtx')}"]
    cmd = [binary, "tune", expr, *extra, *data, "--threads", str(threads), "--search",
           search, "--budget", str(budget), "--seed", "1", "--json"]
    env = dict(os.environ, SPARSEC_TUNE_DIR=cache)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default="target/release/sparsec")
    p.add_argument("--budget", type=float, default=15)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--kernels", default="spmv,spmm")
    p.add_argument("--inputs", default="bcsstk13,cage10,ca-HepTh,delaunay_n16")
    p.add_argument("--generated", default=",".join(GENERATED))
    p.add_argument("--out", default="/tmp/sparsec-tune-bench.csv")
    args = p.parse_args()
    sources = [s for s in args.inputs.split(",") + args.generated.split(",") if s]
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for kernel in args.kernels.split(","):
            for source in sources:
                for threads in [int(t) for t in args.threads.split(",")]:
                    runs = {s: tune(args.binary, kernel, source, threads, s, args.budget, cache)
                            for s in ("random", "format-only")}
                    r, f = runs["random"], runs["format-only"]
                    row = {
                        "kernel": kernel, "input": source, "threads": threads,
                        "default_ms": r["default_ms"], "random_ms": r["tuned_ms"],
                        "format_only_ms": f["tuned_ms"],
                        "random_speedup": r["speedup"], "format_only_speedup": f["speedup"],
                        "random_over_format_only": f["tuned_ms"] / r["tuned_ms"],
                        "measured_random": r["measured"], "measured_format_only": f["measured"],
                        "tuning_s": r["tuning_s"], "conversion_ms": r["conversion_ms"],
                        "break_even_runs": r["break_even_runs"],
                        "formats": " ".join(f"{k}:{v}" for k, v in r["formats"].items()),
                        "schedule": r["schedule"], "failures": len(r["failures"]) + len(f["failures"]),
                    }
                    rows.append(row)
                    be = row["break_even_runs"]
                    print(f"{kernel:5} {source:18} {threads}t default {row['default_ms']:9.3f} ms  "
                          f"random {row['random_ms']:9.3f} ms ({row['random_speedup']:.2f}x, "
                          f"{row['measured_random']} cand.)  format-only {row['format_only_ms']:9.3f} ms "
                          f"({row['format_only_speedup']:.2f}x)  conv {row['conversion_ms']:.2f} ms  "
                          f"break-even {'-' if be is None else f'{be:.0f}'} runs  "
                          f"[{row['formats']} | {row['schedule'] or 'default'}]", flush=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("\ngeomean speedups (median runtimes, same budget per search):")
    for kernel in args.kernels.split(","):
        for threads in sorted({r["threads"] for r in rows}):
            sel = [r for r in rows if r["kernel"] == kernel and r["threads"] == threads]
            print(f"  {kernel:5} {threads}t  random/default {geomean([r['random_speedup'] for r in sel]):.2f}x"
                  f"  format-only/default {geomean([r['format_only_speedup'] for r in sel]):.2f}x"
                  f"  random/format-only {geomean([r['random_over_format_only'] for r in sel]):.2f}x"
                  f"  failures {sum(r['failures'] for r in sel)}")
    print(f"CSV: {args.out}")


if __name__ == "__main__":
    main()
