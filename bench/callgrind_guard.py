#!/usr/bin/env python3
"""Regression guard: instruction counts of generated kernels under callgrind.

Wall-clock times on a shared machine vary by tens of percent from run to run; the number
of instructions a kernel executes on fixed inputs does not. This script runs each kernel
of `crates/sparsec/examples/callgrind_kernels.rs` (SpMV on uniform, power-law and long
rows, SpMM, SpGEMM on a medium and a small input, MTTKRP on a cube and on a tensor with a
short outer mode, TTV, and the SPF forward substitution serial and by level sets, a
Gauss-Seidel sweep and ILU(0), on fixed
generated inputs, one thread) under
`valgrind --tool=callgrind --toggle-collect=sparsec_kernel`, so that only the generated
kernel and what it calls are counted, and compares the counts with
`bench/callgrind_baseline.json`:

    python3 bench/callgrind_guard.py                 # compare; exit 1 on a regression
    python3 bench/callgrind_guard.py --update        # record the counts as the new baseline
    python3 bench/callgrind_guard.py --kernels spmv,spgemm --tolerance 2

Kernels are compiled for `-march=x86-64-v3` (AVX2, FMA) instead of `-march=native`:
valgrind 3.19 does not decode AVX-512, and a fixed target makes the counts the same on
every x86-64-v3 machine. They still depend on the C compiler: the baseline records it
(`gcc --version`), and a comparison with another says so (a change is then expected, not
a regression). Update the baseline deliberately, in the commit that changes the generated
code, with the before and after counts in its message.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "bench", "callgrind_baseline.json")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
EXAMPLE = os.path.join(TARGET, "release", "examples", "callgrind_kernels")
# Flags after sparsec's own win: a fixed instruction set that valgrind decodes.
KERNEL_CC = "gcc -march=x86-64-v3"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def machine() -> dict:
    cc = KERNEL_CC.split()[0]
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    return {"compiler": version.splitlines()[0] if version else cc, "flags": KERNEL_CC}


def build() -> None:
    cmd = ["cargo", "build", "--release", "-q", "-p", "sparsec", "--example",
           "callgrind_kernels"]
    log("$ " + " ".join(cmd))
    subprocess.check_call(cmd, cwd=ROOT)


def kernels() -> list:
    out = subprocess.run([EXAMPLE, "--list"], capture_output=True, text=True, check=True)
    return out.stdout.split()


def count(name: str) -> int:
    """Instructions executed inside `sparsec_kernel` by one run of kernel `name`."""
    # Compile (or load) the kernel once outside valgrind, so that the counted run finds
    # it in the cache and valgrind does not follow gcc.
    env = dict(os.environ, OMP_NUM_THREADS="1", SPARSEC_CC=KERNEL_CC)
    subprocess.run([EXAMPLE, name], capture_output=True, check=True, env=env)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=sparsec_kernel",
               f"--callgrind-out-file={out}", EXAMPLE, name]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"{name}: valgrind failed:\n{p.stderr[-2000:]}")
        with open(out) as f:
            text = f.read()
    m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if not m:
        raise RuntimeError(f"{name}: no instruction total in callgrind's output")
    return int(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--update", action="store_true", help="write the counts as the baseline")
    ap.add_argument("--tolerance", type=float, default=3.0,
                    help="percent change reported as a regression or improvement (default 3)")
    ap.add_argument("--kernels", default=None, help="comma-separated subset (default: all)")
    ap.add_argument("--no-build", action="store_true", help="use the example as built")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        log("valgrind is not installed (apt-get install valgrind)")
        return 2
    if not args.no_build:
        build()
    names = kernels() if args.kernels is None else args.kernels.split(",")
    here = machine()
    baseline = {}
    if os.path.exists(BASELINE):
        with open(BASELINE) as f:
            baseline = json.load(f)
    base_counts = baseline.get("counts", {})
    if not args.update and baseline and {k: baseline.get(k) for k in here} != here:
        log(f"note: the baseline was taken with {baseline.get('compiler')} "
            f"({baseline.get('flags')}); this run uses {here['compiler']} ({here['flags']}): "
            "differences may come from the compiler, not from sparsec")
    counts = {}
    changed = []
    print(f"{'kernel':15} {'baseline':>14} {'now':>14} {'change':>8}")
    for name in names:
        counts[name] = count(name)
        before = base_counts.get(name)
        if before:
            change = 100.0 * (counts[name] - before) / before
            flag = ""
            if abs(change) > args.tolerance:
                flag = "  REGRESSION" if change > 0 else "  improvement"
                changed.append((name, change))
            print(f"{name:15} {before:>14,} {counts[name]:>14,} {change:>+7.2f}%{flag}")
        else:
            print(f"{name:15} {'-':>14} {counts[name]:>14,} {'new':>8}")
    if args.update:
        merged = dict(base_counts, **counts)
        with open(BASELINE, "w") as f:
            json.dump(dict(here, counts=merged), f, indent=2, sort_keys=True)
            f.write("\n")
        log(f"wrote {BASELINE}")
        return 0
    regressions = [n for n, c in changed if c > 0]
    if changed:
        log(f"beyond {args.tolerance}%: " + ", ".join(f"{n} {c:+.1f}%" for n, c in changed)
            + "; record intended changes with --update")
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
