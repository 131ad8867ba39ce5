#!/usr/bin/env python3
"""Regenerate bench/RESULTS.md, sparsec's current figures of record beside its peers.

    python3 bench/results.py                    # run every benchmark below, then write the page
    python3 bench/results.py --only graphs,io   # rerun some of them, keep the others' data
    python3 bench/results.py --render           # rewrite the page and plots from the data only

Each benchmark is one of the side-by-side scripts of this folder, run with the settings
below on an idle machine; its rows go to `bench/results/NAME.csv`, its printed report to
`bench/results/NAME.log`, and when, where and how it ran to `bench/results/meta.json`. The
page and its plots (`bench/results/*.png`, drawn with matplotlib) are made from those files
alone, so a page always shows one set of measurements with the command and machine that
produced them. Needs the benchmark environment of `bench/README.md` (numpy, scipy, mkl,
sparse-dot-mkl, python-graphblas, fast_matrix_market, matplotlib, the sparsec package built
in release) and, for the TACO columns, `$TACO` (bench/README.md, "Setup (TACO)").
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
PAGE = os.path.join(ROOT, "bench", "RESULTS.md")
DATA = os.environ.get("SPARSEC_DATA", os.path.join(ROOT, "..", "shared", "data"))


def csv_path(name):
    return os.path.join(RESULTS, f"{name}.csv")


# The benchmarks of record: what each measures, and the command that measures it.
BENCHMARKS = {
    "kernels": ("Kernels against MKL, TACO and SciPy",
                # Generated inputs at a tenth of the size (100k rows): the full sizes take
                # over an hour on two cores, most of it in SpGEMM on them.
                ["bench/schedules_vs_mkl.py", "--default-only", "--quick", "--runs", "9",
                 "--rounds", "1", "--csv", csv_path("kernels")]),
    "graphs": ("Graph kernels over semirings against SuiteSparse:GraphBLAS",
               ["bench/vs_graphblas.py", "--runs", "5", "--csv", csv_path("graphs")]),
    "trisolve": ("The SPF lower triangular solve against MKL and SciPy",
                 ["bench/spf_trisolve.py", os.path.join(DATA, "matrices"), "20",
                  "--csv", csv_path("trisolve")]),
    "smoothers": ("SPF Gauss-Seidel and ILU(0) against MKL and SciPy",
                  ["bench/spf_smoothers.py", os.path.join(DATA, "matrices"), "20",
                   "--csv", csv_path("smoothers")]),
    "io": ("Reading MatrixMarket files against fast_matrix_market and SciPy",
           ["bench/io_vs_scipy.py", "--repeat", "5", "--csv", csv_path("io")]),
}


# --------------------------------------------------------------------------------------
# Running


def machine():
    model = "unknown processor"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), model)
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(next(line.split()[1] for line in f if line.startswith("MemTotal")))
        memory = f", {kib / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return f"{model}, {os.cpu_count()} logical CPUs{memory}, {platform.system()} " \
           f"{platform.release()}"


def commit():
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "crates")
    return head + (" with uncommitted changes to crates/" if dirty else "")


def busy_share(seconds=2.0):
    """The share of CPU time spent outside the idle task over the next `seconds`: what
    other work would take from a benchmark started now (the load average lags by minutes,
    so it still counts the benchmark that just ended)."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # all, idle + iowait
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except OSError:
        return math.nan
    return 1 - (idle1 - idle0) / max(total1 - total0, 1)


def run(name):
    title, command = BENCHMARKS[name]
    os.makedirs(RESULTS, exist_ok=True)
    busy = busy_share()
    if busy > 0.1:
        print(f"warning: {busy:.0%} of the CPUs were busy before the run; figures of record "
              "want an idle machine", file=sys.stderr)
    print(f"== {name}: {title}", file=sys.stderr, flush=True)
    started = time.time()
    with open(os.path.join(RESULTS, f"{name}.log"), "w") as log:
        done = subprocess.run([sys.executable, *command], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.exit(f"{name}: `{' '.join(command)}` failed (status {done.returncode}); "
                 f"see bench/results/{name}.log")
    meta = read_meta()
    meta[name] = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "machine": machine(),
        "command": "python3 " + " ".join(os.path.relpath(a, ROOT) if a.startswith(ROOT)
                                         else a for a in command),
        "minutes": round((time.time() - started) / 60, 1),
        "busy_before": round(busy, 3),
        "taco": os.environ.get("TACO", ""),
    }
    with open(os.path.join(RESULTS, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")


def read_meta():
    try:
        with open(os.path.join(RESULTS, "meta.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def read_csv(name):
    try:
        with open(csv_path(name), newline="") as f:
            return list(csv.DictReader(f))
    except FileNotFoundError:
        return None


# --------------------------------------------------------------------------------------
# Summaries


def number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return math.nan
    return value


def geomean(values):
    values = [v for v in values if math.isfinite(v) and v > 0]
    if not values:
        return math.nan
    return math.exp(sum(map(math.log, values)) / len(values))


def ratio_text(value):
    return "–" if not math.isfinite(value) else f"{value:.2f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def speedup_plot(path, title, labels, series, xlabel):
    """Horizontal bars of peer time / sparsec time per input (above 1: sparsec is
    faster), one bar per series (thread count), on a log axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    height = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.28 * len(labels) * max(len(series), 1) ** 0.5))
    for n, (name, values) in enumerate(series.items()):
        positions = [k + (n - (len(series) - 1) / 2) * height for k in range(len(labels))]
        # Bars grow from 1 (a tie): right where sparsec is faster, left where slower.
        ax.barh(positions, [v - 1 if math.isfinite(v) else 0 for v in values], left=1,
                height=height, label=name)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=2))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def provenance(name, meta):
    m = meta.get(name)
    if not m:
        return "_Not measured yet: run `python3 bench/results.py --only " + name + "`._"
    taco = f" TACO: `{m['taco']}`." if name == "kernels" and m.get("taco") else ""
    busy = m.get("busy_before")
    idle = f"{1 - busy:.0%} idle before it ran; " if busy is not None else ""
    return (f"Measured {m['date']} at commit `{m['commit']}` on {m['machine']} "
            f"({idle}{m['minutes']} min).{taco} "
            f"Command: `{m['command']}`; the full report is "
            f"[`results/{name}.log`](results/{name}.log).")


def section(title, name, meta, prose):
    """A section's head: its title, where its figures come from, and how to read them."""
    return [f"## {title}", "", provenance(name, meta), "", prose, ""]


def kernels_section(rows, meta):
    out = section("Kernels against MKL, TACO and SciPy", "kernels", meta,
                  "sparsec's default schedule (no schedule given; `sell:16` is SpMV with that "
           "format declared) against the fastest peer at the same thread count (MKL's "
           "inspector-executor or its one-call product, TACO's generated kernel with and "
           "without `-march=native`, and SciPy, which runs on one thread). Each figure is a "
           "geometric mean over the inputs of sparsec's median time over the peer's: **below "
           "1, sparsec is faster**. Sparse outputs count compute and assembly on both sides.")
    if rows is None:
        return out
    ours = [r for r in rows if r["tool"] == "sparsec" and r["status"] == "ok"]
    keys = sorted({(r["kernel"], r["variant"]) for r in ours},
                  key=lambda k: (KERNEL_ORDER.index(k[0]) if k[0] in KERNEL_ORDER else 99, k[1]))
    threads = sorted({int(r["threads"]) for r in ours})
    body = []
    for kernel, variant in keys:
        for t in threads:
            group = [r for r in ours if (r["kernel"], r["variant"], int(r["threads"]))
                     == (kernel, variant, t)]
            if not group:
                continue
            best = [number(r["ratio_best"]) for r in group]
            wins = sum(1 for b in best if math.isfinite(b) and b < 1)
            measured = sum(1 for b in best if math.isfinite(b))
            body.append([kernel, variant, t, len(group),
                         f"**{ratio_text(geomean(best))}**",
                         ratio_text(geomean(number(r["ratio_mkl"]) for r in group)),
                         ratio_text(geomean(number(r["ratio_taco"]) for r in group)),
                         ratio_text(geomean(number(r["ratio_scipy"]) for r in group)),
                         f"{wins} of {measured}"])
    out += [table(["kernel", "sparsec", "threads", "inputs", "/ best peer", "/ MKL", "/ TACO",
                   "/ SciPy", "faster on"], body), ""]
    for kernel, variant in keys:
        group = [r for r in ours if (r["kernel"], r["variant"]) == (kernel, variant)]
        inputs = sorted({r["input"] for r in group}, key=lambda i: min(
            int(r["nnz"]) for r in group if r["input"] == i))
        series = {}
        for t in threads:
            by_input = {r["input"]: 1 / number(r["ratio_best"]) for r in group
                        if int(r["threads"]) == t}
            series[f"{t} thread{'s' if t > 1 else ''}"] = [by_input.get(i, math.nan)
                                                          for i in inputs]
        slug = f"kernels-{kernel}-{variant}".replace(" ", "-").replace(":", "")
        speedup_plot(os.path.join(RESULTS, f"{slug}.png"), f"{kernel} ({variant})", inputs,
                     series, "best peer's time / sparsec's (right of 1: sparsec is faster)")
        out += [f"![{kernel}, {variant}: speedup over the best peer per input]"
                f"(results/{slug}.png)", ""]
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        out += ["<details><summary>Rows without a time</summary>", "",
                table(["kernel", "input", "threads", "tool", "variant", "status"],
                      [[r["kernel"], r["input"], r["threads"], r["tool"], r["variant"],
                        r["status"].replace("|", "/")[:160]] for r in failed]),
                "", "</details>", ""]
    return out


KERNEL_ORDER = ["spmv", "spmm", "spgemm", "ata", "add", "emul", "sddmm", "mttkrp", "ttv"]


def graphs_section(rows, meta):
    out = section("Graph kernels against SuiteSparse:GraphBLAS", "graphs", meta,
                  "Each operation computes the same result both ways (checked before timing): one "
           "min-plus relaxation (`minplus`), the masked triangle count (`triangles`) and the "
           "same count as one scalar statement (`tri-scalar`), BFS levels (`bfs`, a masked "
           "push step per level) and 20 PageRank iterations (`pagerank`). Figures are "
           "sparsec's median time over GraphBLAS's, geometric means over the graphs: **below "
           "1, sparsec is faster**.")
    if rows is None:
        return out
    ops = list(dict.fromkeys(r["op"] for r in rows))
    threads = sorted({int(r["threads"]) for r in rows})
    body = []
    for op in ops:
        line = [op]
        for t in threads:
            line.append(ratio_text(geomean(number(r["sparsec_ms"]) / number(r["graphblas_ms"])
                                           for r in rows
                                           if r["op"] == op and int(r["threads"]) == t)))
        body.append(line)
    body.append(["**all**"] + [f"**{ratio_text(geomean(number(r['sparsec_ms']) / number(r['graphblas_ms']) for r in rows if int(r['threads']) == t))}**"  # noqa: E501
                               for t in threads])
    out += [table(["operation"] + [f"{t} thread{'s' if t > 1 else ''}" for t in threads],
                  body), ""]
    labels = [f"{r['graph']} {r['op']}" for r in rows if int(r["threads"]) == threads[0]]
    series = {f"{t} thread{'s' if t > 1 else ''}": [
        number(r["graphblas_ms"]) / number(r["sparsec_ms"]) for r in rows
        if int(r["threads"]) == t] for t in threads}
    speedup_plot(os.path.join(RESULTS, "graphs.png"), "graph kernels", labels, series,
                 "GraphBLAS's time / sparsec's (right of 1: sparsec is faster)")
    out += ["![GraphBLAS's time over sparsec's per graph and operation](results/graphs.png)",
            "", "<details><summary>Per graph</summary>", "",
            table(["graph", "vertices", "stored", "operation", "threads", "sparsec ms",
                   "GraphBLAS ms", "ratio"],
                  [[r["graph"], r["vertices"], r["stored"], r["op"], r["threads"],
                    f"{number(r['sparsec_ms']):.3f}", f"{number(r['graphblas_ms']):.3f}",
                    ratio_text(number(r["sparsec_ms"]) / number(r["graphblas_ms"]))]
                   for r in rows]), "", "</details>", ""]
    return out


def trisolve_section(rows, meta):
    out = section("The SPF lower triangular solve against MKL and SciPy", "trisolve", meta,
                  "Forward substitution `L x = b` written as loops over index arrays (`.spf`), "
           "compiled by the sparse polyhedral front end: serially, and as level sets on 1 "
           "and 2 threads (its inspector runs on the first call; its level sets are kept for "
           "the same tensors, as MKL keeps its analysis). The peers are MKL's "
           "`mkl_sparse_d_trsv` (inspection once, untimed) and SciPy's "
           "`spsolve_triangular`. Figures are sparsec's best time over the peer's, geometric "
           "means over the matrices: **below 1, sparsec is faster**.")
    if rows is None:
        return out
    best = [min(number(r["serial_ms"]), number(r["levelset_2t_ms"])) for r in rows]
    body = [["serial, 1 thread / MKL 1 thread",
             ratio_text(geomean(number(r["serial_ms"]) / number(r["mkl_1t_ms"]) for r in rows))],
            ["best of serial and level sets / MKL 2 threads",
             ratio_text(geomean(b / number(r["mkl_2t_ms"]) for b, r in zip(best, rows)))],
            ["serial / SciPy",
             ratio_text(geomean(number(r["serial_ms"]) / number(r["scipy_ms"]) for r in rows))],
            ["level sets on 2 threads / serial",
             ratio_text(geomean(number(r["levelset_2t_ms"]) / number(r["serial_ms"])
                                for r in rows))]]
    out += [table(["comparison", "geometric mean"], body), ""]
    labels = [r["matrix"] for r in rows]
    speedup_plot(os.path.join(RESULTS, "trisolve.png"), "lower triangular solve", labels,
                 {"MKL 1 thread / serial": [number(r["mkl_1t_ms"]) / number(r["serial_ms"])
                                            for r in rows],
                  "MKL 2 threads / best": [number(r["mkl_2t_ms"]) / b
                                           for b, r in zip(best, rows)]},
                 "MKL's time / sparsec's (right of 1: sparsec is faster)")
    out += ["![MKL's time over sparsec's per matrix](results/trisolve.png)", "",
            "<details><summary>Per matrix (ms)</summary>", "",
            table(["matrix", "n", "nnz", "serial", "level sets 1t", "level sets 2t", "SciPy",
                   "MKL 1t", "MKL 2t"],
                  [[r["matrix"], r["n"], r["nnz"]] + [f"{number(r[k]):.3f}" for k in (
                      "serial_ms", "levelset_1t_ms", "levelset_2t_ms", "scipy_ms",
                      "mkl_1t_ms", "mkl_2t_ms")] for r in rows]), "", "</details>", ""]
    return out


def smoothers_section(rows, meta):
    out = section("SPF Gauss-Seidel and ILU(0) against MKL and SciPy", "smoothers", meta,
                  "Two programs of `examples/spf/` on one thread, on each square shared matrix "
           "made strictly diagonally dominant: a forward Gauss-Seidel sweep "
           "(`gauss_seidel.spf`), against MKL's `mkl_sparse_d_mv` then `mkl_sparse_d_trsv` "
           "and SciPy's product then `spsolve_triangular` (neither has a sweep of its own), "
           "and ILU(0) (`ilu0.spf`) against MKL's `dcsrilu0` (SciPy has no ILU(0)). Each "
           "result is checked against the peers'. Figures are sparsec's median time over the "
           "peer's, geometric means over the matrices: **below 1, sparsec is faster**.")
    if rows is None:
        return out
    body = [["Gauss-Seidel sweep / MKL", ratio_text(geomean(
                number(r["gs_ms"]) / number(r["mkl_gs_ms"]) for r in rows))],
            ["Gauss-Seidel sweep / SciPy", ratio_text(geomean(
                number(r["gs_ms"]) / number(r["scipy_gs_ms"]) for r in rows))],
            ["ILU(0) / MKL", ratio_text(geomean(
                number(r["ilu0_ms"]) / number(r["mkl_ilu0_ms"]) for r in rows))]]
    out += [table(["comparison", "geometric mean"], body), "",
            "<details><summary>Per matrix (ms)</summary>", "",
            table(["matrix", "n", "nnz", "sweep", "SciPy sweep", "MKL sweep", "ILU(0)",
                   "MKL ILU(0)"],
                  [[r["matrix"], r["n"], r["nnz"]] + [f"{number(r[k]):.3f}" for k in (
                      "gs_ms", "scipy_gs_ms", "mkl_gs_ms", "ilu0_ms", "mkl_ilu0_ms")]
                   for r in rows]), "", "</details>", ""]
    return out


def io_section(rows, meta):
    out = section("Reading MatrixMarket files", "io", meta,
                  "`sparsec info` reading each shared `.mtx` file (and one large generated file) "
           "against fast_matrix_market (the C++ reader behind SciPy's, with its threads) and "
           "`scipy.io.mmread`. Figures are sparsec's median read time over the peer's, "
           "geometric means over the files: **below 1, sparsec is faster**.")
    if rows is None:
        return out
    out += [table(["peer", "geometric mean", "files"], [
        ["fast_matrix_market",
         ratio_text(geomean(number(r["sparsec_ms"]) / number(r["fmm_ms"]) for r in rows)),
         len(rows)],
        ["SciPy", ratio_text(geomean(number(r["sparsec_ms"]) / number(r["scipy_ms"])
                                     for r in rows)), len(rows)]]), ""]
    speedup_plot(os.path.join(RESULTS, "io.png"), "reading .mtx files",
                 [r["file"] for r in rows],
                 {"fast_matrix_market": [number(r["fmm_ms"]) / number(r["sparsec_ms"])
                                         for r in rows],
                  "SciPy": [number(r["scipy_ms"]) / number(r["sparsec_ms"]) for r in rows]},
                 "peer's time / sparsec's (right of 1: sparsec is faster)")
    out += ["![peers' read time over sparsec's per file](results/io.png)", "",
            "<details><summary>Per file (ms)</summary>", "",
            table(["file", "MB", "sparsec", "fast_matrix_market", "SciPy"],
                  [[r["file"], f"{number(r['mb']):.2f}", f"{number(r['sparsec_ms']):.3f}",
                    f"{number(r['fmm_ms']):.3f}", f"{number(r['scipy_ms']):.3f}"]
                   for r in rows]), "", "</details>", ""]
    return out


def render():
    meta = read_meta()
    page = ["# sparsec: results", "",
            "The current figures of record, each beside its peers in the same run on the same "
            "machine. They are regenerated by one command, `python3 bench/results.py`, which "
            "reruns the benchmarks and rewrites this page and its plots; how each benchmark "
            "works and measures is in [README.md](README.md), and the dated history of "
            "earlier figures in [HISTORY.md](HISTORY.md). Figures from a 2-core machine are "
            "noisy: ratios within about 10% of 1 are a tie.", ""]
    page += kernels_section(read_csv("kernels"), meta)
    page += graphs_section(read_csv("graphs"), meta)
    page += trisolve_section(read_csv("trisolve"), meta)
    page += smoothers_section(read_csv("smoothers"), meta)
    page += io_section(read_csv("io"), meta)
    with open(PAGE, "w") as f:
        f.write("\n".join(page).rstrip() + "\n")
    print(f"wrote {os.path.relpath(PAGE, ROOT)}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=None,
                        help=f"comma-separated benchmarks to rerun ({', '.join(BENCHMARKS)})")
    parser.add_argument("--render", action="store_true",
                        help="rewrite the page from bench/results/ without running anything")
    args = parser.parse_args()
    chosen = [] if args.render else (args.only.split(",") if args.only else list(BENCHMARKS))
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from "
                     f"{', '.join(BENCHMARKS)}")
    for name in chosen:
        run(name)
    render()


if __name__ == "__main__":
    main()
