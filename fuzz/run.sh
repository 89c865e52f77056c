#!/usr/bin/env bash
# Build the fuzz targets with coverage instrumentation on the stable
# toolchain (the flags cargo-fuzz passes, without its nightly-only
# sanitizer), then run each for SECONDS seconds on its corpus.
#
#   bash fuzz/run.sh 600              # every target, 10 minutes each
#   bash fuzz/run.sh 5 journal trace  # some targets, a few seconds each
#   MINIMIZE=1 bash fuzz/run.sh 600   # and shrink each corpus afterwards
#   FUZZ_PROFILE=dev bash fuzz/run.sh 3 # quicker to build, slower to run
#
# Corpora live in fuzz/corpus/NAME (kept in the repository; inputs the
# fuzzer finds interesting are added there). A crash, timeout or
# out-of-memory leaves its input in fuzz/artifacts/NAME and fails the
# script: turn it into a regression test. Full output: fuzz/logs/NAME.log.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_EACH=${1:-5}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(tfrecord example npy cosmoflow scattering manifest journal trace options checkpoint cif)
fi
# An explicit --target keeps the instrumentation out of build scripts and
# proc macros, which are linked without libFuzzer's runtime.
HOST=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
PROFILE=${FUZZ_PROFILE:-release}
cargo build --profile "$PROFILE" --locked --bins --target "$HOST"
# Cargo's output directory for the `dev` profile is named `debug`.
BIN="$CARGO_TARGET_DIR/$HOST/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")"
mkdir -p logs
failed=0
for target in "${TARGETS[@]}"; do
    corpus="corpus/$target"
    mkdir -p "$corpus" "artifacts/$target"
    log="logs/$target.log"
    status=0
    "$BIN/$target" "$corpus" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="artifacts/$target/" -print_final_stats=1 > "$log" 2>&1 || status=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
    echo "fuzz $target: ${SECONDS_EACH}s, ${runs:-?} runs, peak RSS ${rss:-?} MB, corpus $(find "$corpus" -type f | wc -l) inputs, exit $status"
    if [ "$status" -ne 0 ] || [ -n "$(ls -A "artifacts/$target")" ]; then
        echo "fuzz $target FAILED: inputs in fuzz/artifacts/$target; the end of $log:" >&2
        tail -30 "$log" >&2
        failed=1
    elif [ "${MINIMIZE:-0}" = 1 ]; then
        rm -rf "$corpus.min" && mkdir "$corpus.min"
        "$BIN/$target" -merge=1 "$corpus.min" "$corpus" > "logs/$target.merge.log" 2>&1
        rm -rf "$corpus" && mv "$corpus.min" "$corpus"
    fi
done
exit $failed
