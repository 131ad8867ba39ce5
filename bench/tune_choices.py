#!/usr/bin/env python3
"""Which tuning choices win, on which inputs: an analysis of a `sparsec tune collect`
dataset (JSON lines, see crates/sparsec-cli/src/collect.rs).

For every input the dataset holds sparsec's default point (sample 0) and random points.
The tuned speedup available in the sample is default / best. Each choice dimension
(the sparse operand's layout, its block shape, the split of the loops, the loop order,
the parallel loop's schedule and chunk, the thread count) is then pinned to the value
the default has, and the best point left is found: the share of the log-speedup lost by
pinning a dimension says how much of the tuning that dimension explains (the WACO paper
found that chunk size and dense blocks explain most of it on its machine). Dimensions
overlap (a blocked format changes the loops too), so the shares need not sum to 1.

The second table groups the inputs by their mean nonzeros per row and says which layout
won on how many of them, with the geometric mean speedup of the winner over the default.

    python3 bench/tune_choices.py DATASET.jsonl [DATASET.jsonl ...] [--tensor A]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict


def layout(spelling: str) -> str:
    """The family of a matrix format spelling: blocked, hashed, coordinate (non-unique
    levels), DCSR/DCSC (compressed upper level), CSR/CSC."""
    letters, _, order = spelling.partition(":")
    column_major = order.replace(" ", "") == "1,0"
    major = "by columns" if column_major else "by rows"
    if letters.startswith("bcsr"):
        return "blocked"
    if "h" in letters:
        return f"hashed, {major}"
    if "u" in letters or "q" in letters or "c" in letters:
        return f"coordinate, {major}"
    if letters == "ss":
        return f"doubly compressed, {major}"
    if letters == "ds":
        return f"compressed, {major}"
    if letters == "dd":
        return f"dense, {major}"
    return f"{letters}, {major}"


def block(spelling: str) -> str:
    match = re.match(r"bcsr:(\d+)x(\d+)", spelling)
    return f"{match.group(1)}x{match.group(2)}" if match else "none"


def splits(point: dict) -> str:
    factors = {v: f for v, f in sorted(point.get("splits", {}).items()) if f > 1}
    return ",".join(f"{v}:{f}" for v, f in factors.items()) or "none"


def parallel(point: dict) -> str:
    p = point.get("parallel")
    return "serial" if p is None else f"{p['schedule']}"


def chunk(point: dict) -> str:
    p = point.get("parallel")
    if p is None:
        return "serial"
    c = p.get("chunk") or 0
    # Classes of chunk size, as the paper bins them.
    if c == 0:
        return "default"
    if c <= 16:
        return "1-16"
    if c <= 256:
        return "17-256"
    return ">256"


def dimensions(tensor: str):
    """Each choice dimension: its name and the function giving a point's value of it."""
    return [
        ("layout of " + tensor, lambda p: layout(p["formats"][tensor])),
        ("block shape of " + tensor, lambda p: block(p["formats"][tensor])),
        ("format of " + tensor + " (all of it)", lambda p: p["formats"][tensor]),
        ("loop splits", splits),
        ("loop order", lambda p: " ".join(p.get("order", []))),
        ("parallel schedule", parallel),
        ("chunk size", chunk),
        ("threads", lambda p: str(p.get("threads"))),
    ]


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def read(paths):
    by_input = defaultdict(dict)
    for path in paths:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{number}: not a JSON record ({e})")
                if record.get("status") == "ok":
                    by_input[record["input"]][record["sample"]] = record
    return by_input


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--tensor", default=None, help="the tuned tensor (default: the first)")
    parser.add_argument(
        "--min-runtime",
        type=float,
        default=20e-6,
        help="leave out inputs whose default runs faster than this many seconds: a few "
        "microseconds are within the noise of a median of a few runs (default 20e-6)",
    )
    args = parser.parse_args()
    by_input = read(args.datasets)
    inputs = {name: records for name, records in by_input.items() if 0 in records and len(records) > 1}
    fast = [name for name, records in inputs.items() if records[0]["runtime_s"] < args.min_runtime]
    for name in fast:
        del inputs[name]
    if not inputs:
        sys.exit("no input has both its default point (sample 0) and a measured candidate")
    tensor = args.tensor or next(iter(next(iter(inputs.values()))[0]["point"]["formats"]))
    dims = dimensions(tensor)

    total = {}
    pinned = defaultdict(dict)
    for name, records in inputs.items():
        default = records[0]
        best = min(r["runtime_s"] for r in records.values())
        total[name] = default["runtime_s"] / best
        for dim, value in dims:
            keep = value(default["point"])
            same = [r["runtime_s"] for r in records.values() if value(r["point"]) == keep]
            pinned[dim][name] = default["runtime_s"] / min(same)

    # The noise floor: random points that happen to be the default point, measured again.
    again = []
    for records in inputs.values():
        default = records[0]
        for sample, r in records.items():
            if sample > 0 and r["point"]["formats"] == default["point"]["formats"] and (
                r["point"].get("schedule") == default["point"].get("schedule")
                and r["point"].get("threads") == default["point"].get("threads")
            ):
                again.append(r["runtime_s"] / default["runtime_s"])
    points = sum(len(r) for r in inputs.values())
    print(
        f"{len(inputs)} inputs, {points} measured points (defaults included), tensor {tensor}; "
        f"{len(fast)} inputs left out whose default runs under {args.min_runtime * 1e6:g} us"
    )
    print()
    all_speedup = geomean(total.values())
    print(f"Speedup of the best point over sparsec's default, geometric mean: {all_speedup:.2f}x")
    if again:
        spread = geomean(max(x, 1 / x) for x in again)
        print(
            f"Noise: the default point drawn again and re-measured ({len(again)} times) differs "
            f"from its first measurement by {spread:.2f}x in geometric mean "
            f"(range {min(again):.2f} to {max(again):.2f}); a speedup below that is not a finding."
        )
    print()
    print("| dimension pinned to the default's value | best speedup left | share of the tuning it explains | inputs where it matters (>5%) |")
    print("|---|---:|---:|---:|")
    for dim, _ in dims:
        left = geomean(pinned[dim].values())
        share = 1 - math.log(left) / math.log(all_speedup) if all_speedup > 1 else 0.0
        matters = sum(1 for n in inputs if total[n] / pinned[dim][n] > 1.05)
        print(f"| {dim} | {left:.2f}x | {share:.0%} | {matters} of {len(inputs)} |")
    print()

    # Which layout wins, by mean nonzeros per row.
    def density_class(record):
        rows = record["dims"][0] or 1
        per_row = record["nnz"] / rows
        if per_row < 4:
            return "< 4 per row"
        if per_row < 16:
            return "4 to 16 per row"
        return ">= 16 per row"

    wins = defaultdict(lambda: defaultdict(list))
    for name, records in inputs.items():
        best = min(records.values(), key=lambda r: r["runtime_s"])
        winner = layout(best["point"]["formats"][tensor])
        if winner == "blocked":
            winner = f"blocked {block(best['point']['formats'][tensor])}"
        wins[density_class(records[0])][winner].append(total[name])
    print("| inputs | winning layout (inputs, geomean speedup over the default) |")
    print("|---|---|")
    for group in ("< 4 per row", "4 to 16 per row", ">= 16 per row"):
        if group not in wins:
            continue
        count = sum(len(v) for v in wins[group].values())
        cells = sorted(wins[group].items(), key=lambda kv: -len(kv[1]))
        text = "; ".join(f"{w} ({len(v)}, {geomean(v):.2f}x)" for w, v in cells)
        print(f"| {group} ({count}) | {text} |")


if __name__ == "__main__":
    main()
