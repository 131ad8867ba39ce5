#!/usr/bin/env bash
# MatrixMarket read speed, sparsec vs scipy.io.mmread (see io_vs_scipy.py for options).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import scipy' 2>/dev/null || pip install scipy
exec python3 bench/io_vs_scipy.py "$@"
