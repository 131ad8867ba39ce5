#!/usr/bin/env bash
# The GPU machine's one prepared run (issue 54), under 8 minutes: the OpenCL tests on the
# machine's OpenCL device (NVIDIA's ICD on a GPU machine), then `bench_gpu` (SpMV warp
# and thread per row and the paper's position split A.11, SpMM with 32 columns and the
# paper's A.4 with 128, against the C target on the CPU) on the
# shared matrices, then cuSPARSE through CuPy on the same matrices where CuPy is
# installed (`bench/gpu_cusparse.py`). Results go to $OUT (the device tool's output
# folder) or /tmp/sparsec-gpu.
#   bash bench/gpu.sh [MATRICES_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
MATRICES="${1:-../shared/data/matrices}"
RUNS="${2:-50}"
RESULTS="${OUT:-/tmp/sparsec-gpu}"
mkdir -p "$RESULTS"
{ command -v nvidia-smi >/dev/null && nvidia-smi -L; } || echo "no nvidia-smi"
{ command -v clinfo >/dev/null && clinfo -l; } || echo "no clinfo"
cargo test --release -p sparsec --features opencl --test opencl --test opencl_residency \
  2>&1 | tee "$RESULTS/opencl-tests.txt"
cargo run --release -p sparsec --features opencl --example bench_gpu -- "$MATRICES" "$RUNS" \
  | tee "$RESULTS/bench_gpu.txt"
python3 bench/gpu_cusparse.py "$MATRICES" "$RUNS" | tee "$RESULTS/cusparse.txt"
