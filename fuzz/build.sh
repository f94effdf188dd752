#!/usr/bin/env bash
# Builds the libFuzzer targets from csrc/ (not the Python extension):
#   bash fuzz/build.sh [OUT_DIR]      (default: fuzz/build/)
# Installs clang (Debian's packages) when it is missing and we are root.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

find_clang() {
    if [ -n "${CC_FUZZ:-}" ]; then echo "$CC_FUZZ"; return; fi
    if command -v clang >/dev/null 2>&1; then echo clang; return; fi
    local v
    for v in 19 18 17 16 15 14 13; do
        if command -v "clang-$v" >/dev/null 2>&1; then echo "clang-$v"; return; fi
    done
}

apt_install() {
    if [ "$(id -u)" != 0 ]; then
        echo "fuzz/build.sh: need to install $*, but not root: run apt-get install -y $*" >&2
        exit 2
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "$@" >/dev/null
}

cc="$(find_clang)"
if [ -z "$cc" ]; then
    echo "fuzz/build.sh: clang not found; installing Debian's clang" >&2
    apt_install clang
    cc="$(find_clang)"
fi
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --atleast-version=3.0 libcrypto 2>/dev/null; then
    apt_install libssl-dev pkg-config
fi

# libFuzzer's runtime ships in libclang-rt-NN-dev (a dependency of clang on
# bookworm); check that -fsanitize=fuzzer links before building for real.
probe="$out/.probe"
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}\n' > "$probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" 2>/dev/null; then
    ver="$("$cc" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)"
    echo "fuzz/build.sh: $cc cannot link -fsanitize=fuzzer; installing libclang-rt-$ver-dev" >&2
    apt_install "libclang-rt-$ver-dev" || apt_install "libclang-common-$ver-dev"
fi
rm -f "$probe" "$probe.c"

flags=(-g -O1 -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -std=c11 -DOPENSSL_API_COMPAT=30000 -DOPENSSL_NO_DEPRECATED
       -Wall -Wextra -Wno-missing-field-initializers -Wno-unused-parameter
       -I"$root/csrc")
# shellcheck disable=SC2207
crypto_cflags=($(pkg-config --cflags libcrypto))
# shellcheck disable=SC2207
crypto_libs=($(pkg-config --libs libcrypto))

# Every layer below py/ (csrc/README.md): the C core links without Python.
core=("$root"/csrc/common/*.c "$root"/csrc/crypto/*.c "$root"/csrc/format/*.c)
store=("${core[@]}" "$root"/csrc/store/*.c)

echo "fuzz/build.sh: $("$cc" --version | head -1) -> $out" >&2
"$cc" "${flags[@]}" "${crypto_cflags[@]}" "$here/fuzz_store_load.c" "${store[@]}" \
    -o "$out/fuzz_store_load" "${crypto_libs[@]}" -lpthread -lm &
pid1=$!
"$cc" "${flags[@]}" "${crypto_cflags[@]}" "$here/fuzz_cipher_args.c" "${core[@]}" \
    -o "$out/fuzz_cipher_args" "${crypto_libs[@]}" -lpthread -lm &
pid2=$!
"$cc" "${flags[@]}" "$here/fuzz_b64.c" "$root/csrc/format/b64.c" "$root/csrc/common/cpu.c" \
    -o "$out/fuzz_b64" &
pid3=$!
"$cc" "${flags[@]}" "${crypto_cflags[@]}" "$here/fuzz_tink_keyset.c" "$root/csrc/format/tinkpb.c" \
    "$root/csrc/common/buf.c" -o "$out/fuzz_tink_keyset" "${crypto_libs[@]}" &
pid4=$!
"$cc" "${flags[@]}" "${crypto_cflags[@]}" "$here/fuzz_floor.c" "$root"/csrc/crypto/floor*.c \
    "$root/csrc/crypto/siv.c" "$root/csrc/crypto/evp.c" "$root/csrc/common/status.c" "$root/csrc/common/cpu.c" -o "$out/fuzz_floor" "${crypto_libs[@]}" &
pid5=$!
rc=0
wait "$pid1" || rc=1
wait "$pid2" || rc=1
wait "$pid3" || rc=1
wait "$pid4" || rc=1
wait "$pid5" || rc=1
if [ "$rc" != 0 ]; then
    echo "fuzz/build.sh: build failed" >&2
    exit 1
fi
echo "fuzz/build.sh: built $out/fuzz_store_load $out/fuzz_cipher_args $out/fuzz_b64 $out/fuzz_tink_keyset $out/fuzz_floor" >&2
