#!/usr/bin/env python3
"""Autotuning benchmark: `sparsec tune` random and model-guided search against the
format-only baseline and Intel MKL.

For each kernel, input and thread count, runs `sparsec tune --json` with the same
measurement budget (`--budget` seconds, and with `--candidates N` at most N measured
candidates), drawing formats and schedules together (random search), drawing formats
only with sparsec's default schedule (format-only baseline), and with `--model` the
points the shipped cost model ranks best (a binary built with `--features learned`); and
times
MKL's inspector-executor (`mkl_sparse_set_mv_hint`/`mm_hint` and `mkl_sparse_optimize`,
through `sparse_dot_mkl` as `schedules_vs_mkl.py` loads it) on the same real matrices at
the same thread count. Prints each run's speedup over sparsec's default (declared
formats, default schedule), over the format-only search and over MKL, the tuning and
conversion cost and the break-even run count, then geometric means per kernel and thread
count; writes a CSV, a long CSV of the speedups over each baseline, and with `--figure`
draws the sorted per-input speedups (`sparsec tune figure`, a binary built with
`--features plot`).

    cargo build --release -p sparsec-cli --features plot
    python3 bench/tune_search.py --figure /tmp/tune.png   # the full run (~10 min)
    python3 bench/tune_search.py --budget 5 --inputs bcsstk13 --kernels spmv   # quick
    cargo build --release -p sparsec-cli --features learned,plot
    python3 bench/tune_search.py --model --candidates 10 --budget 60   # the three searches

The default inputs are shared matrices the shipped models were not trained on (held out
by `tune::model::train::held_out`) and generated families of other sizes than training's.

Each search measures its own candidates and its own default (medians of repeated runs of
preparation, compute and assembly; every candidate is checked against the reference), but
the searches run minutes apart and this machine's speed drifts between states lasting
seconds to minutes. So after the searches the default, each search's choice (the
`sparsec run` command `tune` printed) and MKL are measured again in `--rounds`
interleaved rounds, each running every one of them once, starting one place further on
than the round before; the speedups
are the medians over the rounds. The searches' own speedups are kept beside them in the
CSV (`*_search_speedup`). MKL's times are medians of its executor calls from Python (a
few microseconds of ctypes each), on the shared matrices only: the generated families are
drawn by sparsec's own generator.
"""
import argparse
import csv
import json
import math
import os
import shlex
import subprocess
import sys
import statistics
import tempfile
import time

import numpy as np

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")

# Per kernel: the statement, its other arguments, the tuned sparse tensor and the index
# variables of its modes. Formats are spelled by level (`ds` is CSR) as `tune --json`
# spells its choices, so that a choice of the declared formats is recognised.
KERNELS = {
    "spmv": ("y(i) = A(i,j) * x(j)", ["-f", "A:ds", "-g", "x:dense"], "A", ["i", "j"]),
    "spmm": ("C(i,j) = A(i,k) * B(k,j)", ["-f", "A:ds", "-g", "B:dense", "-d", "j:16"],
             "A", ["i", "k"]),
    "sddmm": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)",
              ["-f", "A:ds", "-f", "B:ds", "-g", "C:dense", "-g", "D:dense", "-d", "k:32"],
              "B", ["i", "j"]),
    "mttkrp": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
               ["-f", "B:sss", "-g", "C:dense", "-g", "D:dense", "-d", "j:16"],
               "B", ["i", "k", "l"]),
}

# Real inputs and generated families (`KIND@N`: every mode of size N, from `-g B:KIND`) that
# the shipped models were not trained on, for matrices and for order-3 tensors.
MATRICES = "adder_dcop_05,bayer10,cage10,karate"
GENERATED = "powerlaw:8@50000,banded:4@100000"
TENSORS = "pierreauger_coauthor"
GENERATED_TENSORS = "uniform:0.000001@4000,uniform:0.003@100,powerlaw:8@5000,uniform:0.0000002@8000"


def source_file(source, order):
    """The shared file of a real input: a matrix, or a FROSTT tensor for order 3."""
    if order == 2:
        return os.path.join(DATA, "matrices", source + ".mtx")
    return os.path.join(DATA, "tensors", source + ".tns")


def input_args(kernel, source):
    """The arguments that give the tuned tensor: a shared file, or a generated family."""
    _, _, tensor, modes = KERNELS[kernel]
    if "@" in source:
        kind, n = source.split("@")
        return ["-g", f"{tensor}:{kind}"] + [a for m in modes for a in ("-d", f"{m}:{n}")]
    return ["-i", f"{tensor}:{source_file(source, len(modes))}"]


def tune(binary, kernel, source, threads, search, budget, candidates, cache):
    expr, extra, _, _ = KERNELS[kernel]
    data = input_args(kernel, source)
    cmd = [binary, "tune", expr, *extra, *data, "--threads", str(threads), "--search",
           search, "--budget", str(budget), "--seed", "1", "--json"]
    if candidates:
        cmd += ["--candidates", str(candidates)]
    env = dict(os.environ, SPARSEC_TUNE_DIR=cache)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def default_command(binary, kernel, source, threads):
    """`sparsec run` with the declared formats and the default schedule, on the same data
    as `tune` (generated inputs with `tune`'s seed)."""
    expr, extra, _, _ = KERNELS[kernel]
    seed = ["--seed", "1"] if "@" in source else []
    return [binary, "run", expr, *extra, *input_args(kernel, source), *seed,
            "--threads", str(threads)]


def chosen_command(binary, kernel, source, threads, choice):
    """The `sparsec run` command that `tune --json` printed for its choice, run by `binary`;
    the default's command when the choice is the declared formats with the default
    schedule, so that the two are one measurement, not two draws of the noise."""
    declared = dict(f.split(":", 1) for flag, f in zip(KERNELS[kernel][1], KERNELS[kernel][1][1:])
                    if flag == "-f")
    if (not choice["schedule"] and choice["threads"] == threads
            and all(declared.get(name) == f for name, f in choice["formats"].items())):
        return default_command(binary, kernel, source, threads)
    words = shlex.split(choice["command"])
    return [binary, *words[1:]]


# Timed runs per `sparsec run` are raised until they take about this long, up to
# MAX_RUNS: the searches' candidates are often tens of microseconds, and a process that
# times them for a few milliseconds measures how the machine woke up as much as the kernel.
MIN_TIMED_MS = 300.0
MAX_RUNS = 10001


def run_ms(cmd, threads, runs=21):
    """The median of `sparsec run --time` (preparation, compute and assembly, as `tune`
    measures), in ms; more runs in a second process when the first ones took little."""
    import schedules_vs_mkl as peers

    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    timed, wanted = None, runs
    while timed is None or runs < wanted:
        runs = wanted
        p = subprocess.run(cmd + ["--time", str(runs)], capture_output=True, text=True,
                           env=env)
        if p.returncode != 0:
            sys.exit(f"failed: {shlex.join(cmd)}\n{p.stderr}")
        timed = sum(peers.parse_phase(p.stdout, phase) or 0.0
                    for phase in ("prepare", "compute", "assembly"))
        if not timed > 0:
            break
        wanted = peers.enough_runs(runs, timed, MIN_TIMED_MS, MAX_RUNS)
    return timed


class Mkl:
    """MKL's inspector-executor for `kernel` on the shared matrix `source`, checked once
    against SciPy; `time()` is the median of `runs` executor calls in ms."""

    def __init__(self, mkl, kernel, source, threads):
        import schedules_vs_mkl as peers

        self.peers = peers
        a = peers.load_matrix(source_file(source, 2))
        rng = np.random.default_rng(1)
        dense_in = rng.standard_normal(a.shape[1] if kernel == "spmv" else (a.shape[1], 16))
        problem = peers.set_mkl_threads(mkl, threads)
        if problem:
            sys.exit(f"MKL: {problem}")
        self.executor = peers.MklExecutor(mkl, a, dense_in, expected_calls=1000)
        if not np.allclose(self.executor(), a @ dense_in):
            sys.exit(f"MKL computes a wrong {kernel} on {source}")

    def time(self, runs=21):
        return self.peers.time_ms(self.executor, runs)[0]

    def close(self):
        self.executor.close()


def confirm(binary, kernel, source, threads, choices, mkl, rounds):
    """Runtimes in ms of sparsec's default, of each search's choice (`choices`: search ->
    `tune --json` record) and of MKL (None where it has no such kernel or input),
    measured again in `rounds` interleaved rounds, each round running every one of them
    once; each figure is the median over the rounds. The searches'
    own figures come from separate runs minutes apart, and this machine's speed drifts
    between states lasting seconds to minutes: interleaving puts every candidate in the
    same states."""
    commands = {"default": default_command(binary, kernel, source, threads)}
    commands.update({s: chosen_command(binary, kernel, source, threads, c)
                     for s, c in choices.items()})
    # MKL has no SDDMM or MTTKRP, and the generated families are sparsec's own.
    peer = (Mkl(mkl, kernel, source, threads)
            if mkl is not None and "@" not in source and kernel in ("spmv", "spmm") else None)
    times = {name: [] for name in [*commands, "mkl"]}
    try:
        names = [*commands, "mkl"] if peer is not None else [*commands]
        for r in range(rounds):
            # Each round starts one place further on, so that no candidate is always the
            # first after a pause.
            measured = {}  # one run per distinct command a round
            for name in names[r % len(names):] + names[:r % len(names)]:
                if name == "mkl":
                    times["mkl"].append(peer.time())
                    continue
                key = tuple(commands[name])
                if key not in measured:
                    measured[key] = run_ms(commands[name], threads)
                times[name].append(measured[key])
    finally:
        if peer is not None:
            peer.close()
    return {name: statistics.median(ts) if ts else None for name, ts in times.items()}


def break_even(choice, default_ms, tuned_ms):
    """Runs after which tuning (search and conversion) pays for itself, from the confirmed
    times; None when the tuned choice is not faster than the default."""
    saved = default_ms - tuned_ms
    if not saved > 0:
        return None
    return (choice["tuning_s"] * 1e3 + choice["conversion_ms"]) / saved


def schedule_parts(schedule):
    """The kinds of scheduling command in a schedule text: split, order, parallelize with
    its OpenMP schedule kind and chunk (`parallelize guided,4`), and so on."""
    parts = []
    for command in schedule.replace("),", ")\n").splitlines():
        name, _, rest = command.strip().partition("(")
        if name == "parallelize":
            parts.append("parallelize " + ",".join(rest.rstrip(")").split(",")[3:]))
        elif name:
            parts.append(name)
    return parts


def what_the_model_proposes(rows, proposals, top):
    """What the model ranks best, apart from what measuring then found: per kernel and
    thread count, how often each layout and each kind of scheduling command is among the
    model's `top` proposals per input, and its first proposal beside the measured choice."""
    print(f"\nwhat the model proposes (its first {top} points per input, in its order):")
    for (kernel, threads) in sorted({(r["kernel"], r["threads"]) for r in rows}):
        sel = [r for r in rows if r["kernel"] == kernel and r["threads"] == threads]
        layouts, commands, total = {}, {}, 0
        for r in sel:
            for point in proposals[(kernel, r["input"], threads)][:top]:
                total += 1
                layout = " ".join(f"{k}:{v}" for k, v in point["formats"].items())
                layouts[layout] = layouts.get(layout, 0) + 1
                for part in set(schedule_parts(point["schedule"])) or {"default schedule"}:
                    commands[part] = commands.get(part, 0) + 1
        if not total:
            continue

        def share(counts):
            return ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in
                             sorted(counts.items(), key=lambda kv: -kv[1])[:6])

        print(f"  {kernel} {threads}t, {total} proposals over {len(sel)} inputs")
        print(f"    layouts:  {share(layouts)}")
        print(f"    schedule: {share(commands)}")
        for r in sel:
            first = proposals[(kernel, r["input"], threads)][:1]
            text = (" ".join(f"{k}:{v}" for k, v in first[0]["formats"].items())
                    + f" | {first[0]['schedule'] or 'default'}") if first else "-"
            print(f"    {r['input']:22} first: {text:60} measured choice: "
                  f"{r['formats']} | {r['schedule'] or 'default'} ({r['model_speedup']:.2f}x)")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--binary", default="target/release/sparsec")
    p.add_argument("--budget", type=float, default=15)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--kernels", default="spmv,spmm", help="spmv, spmm, sddmm, mttkrp")
    p.add_argument("--inputs", help=f"real inputs (default: matrices {MATRICES}; "
                   f"for MTTKRP tensors {TENSORS})")
    p.add_argument("--candidates", type=int, help="at most this many measured candidates")
    p.add_argument("--model", action="store_true", help="also the model-guided search")
    p.add_argument("--generated", help=f"generated families (default: {GENERATED}; for "
                   f"MTTKRP {GENERATED_TENSORS})")
    p.add_argument("--out", default="/tmp/sparsec-tune-bench.csv")
    p.add_argument("--no-mkl", action="store_true", help="leave MKL out")
    p.add_argument("--figure", help="draw the sorted speedups into this PNG")
    p.add_argument("--rounds", type=int, default=5,
                   help="interleaved rounds in which the default, each search's choice and "
                        "MKL are measured again after the searches")
    args = p.parse_args()

    def sources(kernel):
        tensors = len(KERNELS[kernel][3]) == 3
        real = args.inputs if args.inputs is not None else TENSORS if tensors else MATRICES
        generated = args.generated if args.generated is not None else (
            GENERATED_TENSORS if tensors else GENERATED)
        return [s for s in real.split(",") + generated.split(",") if s]

    mkl = None
    if not args.no_mkl:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import schedules_vs_mkl as peers

        mkl, how = peers.load_mkl()
        print(f"MKL: {how}", flush=True)
    rows = []
    proposals = {}  # (kernel, input, threads) -> the model search's points, in its order
    with tempfile.TemporaryDirectory() as cache:
        for kernel in args.kernels.split(","):
            for source in sources(kernel):
                for threads in [int(t) for t in args.threads.split(",")]:
                    searches = ["random", "format-only"] + (["model"] if args.model else [])
                    runs = {s: tune(args.binary, kernel, source, threads, s, args.budget,
                                    args.candidates, cache) for s in searches}
                    # The tuned choice is the model's when it searched, else the random
                    # search's.
                    tuned = "model" if args.model else "random"
                    t = runs[tuned]
                    ms = confirm(args.binary, kernel, source, threads, runs, mkl, args.rounds)
                    row = {
                        "kernel": kernel, "input": source, "threads": threads,
                        "tuned_by": tuned, "default_ms": ms["default"],
                        **{f"{s}_ms": ms[s] for s in searches},
                        **{f"{s}_speedup": ms["default"] / ms[s] for s in searches},
                        "tuned_over_format_only": ms["format-only"] / ms[tuned],
                        "tuned_over_random": ms["random"] / ms[tuned],
                        "mkl_ms": ms["mkl"],
                        "tuned_over_mkl": None if ms["mkl"] is None else ms["mkl"] / ms[tuned],
                        # What each search reported from its own runs, before the rounds.
                        **{f"{s}_search_speedup": runs[s]["speedup"] for s in searches},
                        **{f"measured_{s}": runs[s]["measured"] for s in searches},
                        "tuning_s": t["tuning_s"], "conversion_ms": t["conversion_ms"],
                        "break_even_runs": break_even(t, ms["default"], ms[tuned]),
                        "formats": " ".join(f"{k}:{v}" for k, v in t["formats"].items()),
                        "schedule": t["schedule"],
                        "failures": sum(len(runs[s]["failures"]) for s in searches),
                    }
                    rows.append(row)
                    if args.model:
                        proposals[(kernel, source, threads)] = runs["model"].get("tried", [])
                    be = row["break_even_runs"]
                    mkl_text = "-" if ms["mkl"] is None else f"{ms['mkl']:9.4g} ms"
                    each = "  ".join(f"{s} {row[f'{s}_ms']:9.4g} ms ({row[f'{s}_speedup']:.2f}x; "
                                     f"search {row[f'{s}_search_speedup']:.2f}x, "
                                     f"{row[f'measured_{s}']} cand.)" for s in searches)
                    print(f"{kernel:5} {source:18} {threads}t default {row['default_ms']:9.4g} ms  "
                          f"{each}  "
                          f"mkl {mkl_text}  "
                          f"tuning {row['tuning_s']:.1f} s  conv {row['conversion_ms']:.2f} ms  "
                          f"break-even {'-' if be is None else f'{be:.0f}'} runs  "
                          f"[{row['formats']} | {row['schedule'] or 'default'}]", flush=True)
    with open(args.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"\ngeomean speedups (medians of {args.rounds} interleaved rounds after the searches, "
          "same budget per search):")
    for kernel in args.kernels.split(","):
        for threads in sorted({r["threads"] for r in rows}):
            sel = [r for r in rows if r["kernel"] == kernel and r["threads"] == threads]
            over_mkl = [r["tuned_over_mkl"] for r in sel if r["tuned_over_mkl"] is not None]
            each = "  ".join(f"{s}/default {geomean([r[f'{s}_speedup'] for r in sel]):.2f}x"
                             for s in searches)
            print(f"  {kernel:5} {threads}t  {each}"
                  f"  {tuned}/format-only {geomean([r['tuned_over_format_only'] for r in sel]):.2f}x"
                  f"  {tuned}/random {geomean([r['tuned_over_random'] for r in sel]):.2f}x"
                  f"  {tuned}/MKL {geomean(over_mkl):.2f}x ({len(over_mkl)} inputs)"
                  f"  tuning {geomean([r['tuning_s'] for r in sel]):.1f} s"
                  f"  failures {sum(r['failures'] for r in sel)}")
    if args.model:
        what_the_model_proposes(rows, proposals, top=args.candidates or 10)
    print(f"CSV: {args.out}")
    # The speedups of the tuned choice over each baseline, a row per input.
    speedups = os.path.splitext(args.out)[0] + "-speedups.csv"
    with open(speedups, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kernel", "input", "threads", "baseline", "speedup"])
        for r in rows:
            for baseline, column in (("default", f"{r['tuned_by']}_speedup"),
                                     ("format-only", "tuned_over_format_only"),
                                     ("MKL", "tuned_over_mkl")):
                if r[column] is not None:
                    w.writerow([r["kernel"], r["input"], r["threads"], baseline, r[column]])
    print(f"speedups over each baseline: {speedups}")
    if args.figure:
        out = subprocess.run([args.binary, "tune", "figure", "--csv", speedups,
                              "--out", args.figure], capture_output=True, text=True)
        print(f"figure: {args.figure}" if out.returncode == 0
              else f"no figure: {out.stderr.strip()}")


if __name__ == "__main__":
    main()
