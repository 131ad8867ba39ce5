#!/usr/bin/env bash
# Fuzzing: the differential statement fuzzer (sparsec-fuzz) and every parser's cargo-fuzz
# target, side by side.
#
#   bash fuzz/run.sh ci      # bounded, for .ci/run: 60 s of statements (seed 1, at most 600)
#                            # and 3 s per parser target; fails on a panic, signal, C compile
#                            # error, invalid IR or wrong result (other than the documented
#                            # ones in fuzz/known-failures-seed1.txt) and on any parser crash
#   bash fuzz/run.sh long    # the long run: 20,000 statements (seed 2026) and 9 minutes per
#                            # parser target (an hour in all), statements and parsers at once
#
# Reports go to $FUZZ_REPORT_DIR (default target/fuzz-reports): the statement fuzzer's
# failures.txt, unsupported.txt and clear-errors.txt, the kept cases under cases/, and one
# log per parser target. Environment overrides: FUZZ_SEED, FUZZ_STATEMENTS,
# FUZZ_STATEMENT_SECONDS, FUZZ_PARSER_SECONDS, FUZZ_JOBS.
#
# cargo-fuzz is installed when missing. It runs on the stable toolchain with
# RUSTC_BOOTSTRAP=1 (libFuzzer's build needs no nightly feature once the sanitizer is off:
# the parsers are safe Rust, and debug assertions and overflow checks stay on).
set -euo pipefail
cd "$(dirname "$0")/.."

# The whole script is one function, which bash reads before running any of it: editing this
# file while an hour-long run uses it does not change that run.
main() {
mode=${1:-}
case "$mode" in
  ci)
    seed=${FUZZ_SEED:-1}
    statements=${FUZZ_STATEMENTS:-600}
    statement_seconds=${FUZZ_STATEMENT_SECONDS:-60}
    parser_seconds=${FUZZ_PARSER_SECONDS:-3}
    # An unoptimised build compiles in about half the time; a few seconds of fuzzing do
    # not need the speed.
    profile=(--dev)
    # Cases of seed 1 that reproduce bugs documented but not fixed yet; the run fails on
    # any other, and says which listed ones pass now.
    known=(--known fuzz/known-failures-seed1.txt)
    ;;
  long)
    seed=${FUZZ_SEED:-2026}
    statements=${FUZZ_STATEMENTS:-20000}
    statement_seconds=${FUZZ_STATEMENT_SECONDS:-7200}
    parser_seconds=${FUZZ_PARSER_SECONDS:-540}
    profile=(--codegen-units 16)
    known=()
    ;;
  *)
    echo "usage: bash fuzz/run.sh ci|long" >&2
    exit 2
    ;;
esac
jobs=${FUZZ_JOBS:-2}
report_dir=${FUZZ_REPORT_DIR:-$PWD/target/fuzz-reports}
mkdir -p "$report_dir"
report_dir=$(cd "$report_dir" && pwd)
export SPARSEC_CACHE_DIR="${SPARSEC_CACHE_DIR:-$PWD/target/kernel-cache}"
target_dir=${CARGO_TARGET_DIR:-$PWD/target}

# libFuzzer itself is C++, built by libfuzzer-sys.
if ! command -v c++ >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq g++
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
fuzz() { (cd fuzz && CARGO_TARGET_DIR="$PWD/target" RUSTC_BOOTSTRAP=1 cargo fuzz "$@"); }

started=$SECONDS
# The test profile: after `cargo test --workspace` (as in .ci/run) everything but the
# fuzzer's own binary is already built.
cargo build --profile test -p sparsec-cli -p sparsec-fuzz
fuzz build --sanitizer none "${profile[@]}"
echo "fuzz: built in $((SECONDS - started)) s"

# The run uses copies of the binaries, so that a rebuild while it runs (a long run takes an
# hour) does not change the code under test halfway.
bin="$report_dir/bin"
rm -rf "$bin"
mkdir -p "$bin"
cp "$target_dir/debug/sparsec" "$target_dir/debug/sparsec-fuzz" "$bin/"
host=$(rustc -vV | sed -n 's/^host: //p')
fuzz_out="fuzz/target/$host/$([ "${profile[0]}" = --dev ] && echo debug || echo release)"
targets=$(fuzz list)
for target in $targets; do
  cp "$fuzz_out/$target" "$bin/fuzz-$target"
done

# The statement fuzzer in the background; the parser targets one after another beside it.
"$bin/sparsec-fuzz" --seed "$seed" --count "$statements" \
  --seconds "$statement_seconds" --jobs "$jobs" --report-dir "$report_dir" "${known[@]}" \
  > "$report_dir/statements.txt" 2>&1 &
statement_pid=$!

parsers_failed=0
for target in $targets; do
  # New inputs libFuzzer finds go to a scratch corpus, so that the committed seeds stay as
  # they are; a crashing input is written to the report directory.
  scratch="$report_dir/corpus/$target"
  mkdir -p "$scratch" "$report_dir/artifacts"
  if "$bin/fuzz-$target" "$scratch" "fuzz/corpus/$target" \
      -max_total_time="$parser_seconds" -rss_limit_mb=2048 -timeout=20 \
      -artifact_prefix="$report_dir/artifacts/$target-" \
      > "$report_dir/parser-$target.txt" 2>&1; then
    echo "fuzz: $target: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "$report_dir/parser-$target.txt" | tail -1)"
  else
    parsers_failed=1
    echo "fuzz: $target FAILED:"
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$report_dir/parser-$target.txt" | head -8
  fi
done

statements_failed=0
wait "$statement_pid" || statements_failed=1
cat "$report_dir/statements.txt"
echo "fuzz: reports in $report_dir, $((SECONDS - started)) s in all"
if [ "$statements_failed" -ne 0 ] || [ "$parsers_failed" -ne 0 ]; then
  echo "fuzz: FAILED (statements: $statements_failed, parsers: $parsers_failed)"
  exit 1
fi
}

main "$@"
