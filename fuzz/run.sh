#!/usr/bin/env bash
# Short fuzz run of every libFuzzer target (what CI does):
#   bash fuzz/run.sh [SECONDS]        (default 60 seconds per target)
# Builds the targets (installing clang from Debian's packages if missing, as
# root), replays fuzz/regressions/<target>/* (inputs that once crashed), then
# fuzzes each target for SECONDS from the seeds in fuzz/corpus/<target>/.
# New corpus entries and crash artifacts go to a temporary directory: kept and
# printed when something crashed, removed otherwise. Exits non-zero if any
# target crashed (or a regression input fails). Works from any directory.
#
# Environment: PCB_FUZZ_WORKDIR  use this directory instead of a new temporary one
#              PCB_FUZZ_TARGETS  space-separated subset of the targets
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
seconds="${1:-60}"
case "$seconds" in
    ''|*[!0-9]*) echo "usage: bash fuzz/run.sh [SECONDS]" >&2; exit 2 ;;
esac
targets=(${PCB_FUZZ_TARGETS:-fuzz_store_load fuzz_cipher_args fuzz_b64 fuzz_tink_keyset fuzz_floor})

if [ -n "${PCB_FUZZ_WORKDIR:-}" ]; then
    work="$PCB_FUZZ_WORKDIR"
    mkdir -p "$work"
else
    work="$(mktemp -d "${TMPDIR:-/tmp}/pcb-fuzz.XXXXXX")"
fi
# The store target's own files: tmpfs when there is one (fsync is free there).
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    scratch="$(mktemp -d /dev/shm/pcb-fuzz-scratch.XXXXXX)"
else
    scratch="$work/scratch"
    mkdir -p "$scratch"
fi
export PCB_FUZZ_TMPDIR="$scratch"
cleanup_scratch() { rm -rf "$scratch"; }
trap cleanup_scratch EXIT

if ! bash "$here/build.sh" "$work/bin"; then
    echo "fuzz/run.sh: build failed" >&2
    exit 1
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=()
for t in "${targets[@]}"; do
    bin="$work/bin/$t"
    art="$work/artifacts/$t"
    corpus="$work/corpus/$t"
    mkdir -p "$art" "$corpus"
    case "$t" in
        fuzz_store_load) max_len=8192 ;;
        *) max_len=4096 ;;
    esac
    dict=()
    if [ -f "$here/$t.dict" ]; then
        dict=(-dict="$here/$t.dict")
    fi

    shopt -s nullglob
    regressions=("$here/regressions/$t"/*)
    shopt -u nullglob
    if [ "${#regressions[@]}" -gt 0 ]; then
        echo "== $t: replaying ${#regressions[@]} regression input(s)"
        bad=0
        for f in "${regressions[@]}"; do
            log="$work/$t.regression.$(basename "$f").log"
            if ! "$bin" "$f" > "$log" 2>&1; then
                echo "fuzz/run.sh: $t: regression input $f fails (log: $log):" >&2
                grep -E 'ERROR:|runtime error|PROPERTY VIOLATED|SUMMARY:' "$log" | head -n 4 >&2
                grep -E '^ +#[0-9]+ ' "$log" | grep -v -E 'libFuzzer|fuzzer::|libc_start|_start' | head -n 6 >&2
                bad=1
            fi
        done
        if [ "$bad" != 0 ]; then
            failed+=("$t (regressions)")
            continue
        fi
    fi

    echo "== $t: fuzzing for ${seconds}s"
    "$bin" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len="$max_len" \
        -print_final_stats=1 -artifact_prefix="$art/" "${dict[@]}" \
        "$corpus" "$here/corpus/$t" > "$work/$t.log" 2>&1
    rc=$?
    grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/$t.log" || true
    if [ "$rc" != 0 ]; then
        tail -n 80 "$work/$t.log"
        echo "fuzz/run.sh: $t exited with $rc (log: $work/$t.log)" >&2
        failed+=("$t")
    fi
done

shopt -s nullglob
artifacts=("$work"/artifacts/*/*)
shopt -u nullglob
if [ "${#failed[@]}" -gt 0 ] || [ "${#artifacts[@]}" -gt 0 ]; then
    echo "fuzz/run.sh: FAILED: ${failed[*]:-(artifacts left)}" >&2
    for a in "${artifacts[@]}"; do
        echo "  crash artifact: $a" >&2
    done
    echo "  reproduce: $work/bin/<target> <artifact>; keep it as fuzz/regressions/<target>/<name>" >&2
    exit 1
fi
echo "fuzz/run.sh: all targets ran ${seconds}s without a crash"
if [ -z "${PCB_FUZZ_WORKDIR:-}" ]; then
    rm -rf "$work"
fi
