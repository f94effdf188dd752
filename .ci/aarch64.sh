#!/usr/bin/env bash
# aarch64 stage (issue 20): cross-build pycipherbench._core for aarch64 and run a subset of
# the suite under qemu-aarch64-static with an aarch64 CPython and aarch64 wheels.
#
# Idempotent: installs what is missing (Debian's arm64 multiarch packages, the cross
# compiler, qemu-user-static; the aarch64 wheels into build/aarch64/site) and reuses it
# on the next run. Nothing is registered with binfmt_misc (the kernel may be shared):
# every aarch64 program is started as `qemu-aarch64-static PROGRAM`, and the interpreter
# that the tests see as sys.executable is a shell script that re-enters qemu, so their
# child processes run under emulation too. No `-L /usr/aarch64-linux-gnu`: the programs
# use libc6:arm64's own loader (/lib/ld-linux-aarch64.so.1); the cross toolchain's copy
# beside it makes every pthread_create hang.
#
# Usage: bash .ci/aarch64.sh [pytest args...]   (default: the CI subset below)
# Environment: PCB_AARCH64_DIR (default build/aarch64) holds everything it makes;
# PCB_AARCH64_BUDGET (s, default 2100) bounds the CI subset (below).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${PCB_AARCH64_DIR:-$ROOT/build/aarch64}
mkdir -p "$DIR"
T0=$(date +%s)

# ---- 1. packages (Debian multiarch)
# The backends' arm64 packages are csrc/crypto/backends.def's: the "multiarch" rows' -dev
# packages through apt (OpenSSL's and Crypto++'s among them; g++ for Crypto++'s C++ shim).
read -r -a BACKEND_ARM <<< "$(python3 csrc/crypto/backends_def.py arm64 multiarch)"
ARM_PKGS=(qemu-user-static gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev:arm64
          libpython3.11-dev:arm64 libpython3.11-stdlib:arm64 "${BACKEND_ARM[@]}"
          libgcrypt20:arm64 libgpg-error0:arm64)
# (The "unpack" row, libgcrypt: its and libgpg-error's -dev packages are not Multi-Arch: same
#  in Debian 12: installing the arm64 ones would remove the amd64 ones the x86-64 build
#  needs. Only their runtime libraries are installed; the -dev parts are unpacked privately
#  below, 1b.)
missing=()
for p in "${ARM_PKGS[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "aarch64: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
    apt-get update -qq
    # arm64 libraries must match the amd64 ones' versions (Multi-Arch: same), so
    # apt may upgrade the amd64 side too; --no-remove: never at the cost of removing one.
    apt-get install -y -qq --no-remove "${missing[@]}"
fi
QEMU=qemu-aarch64-static

# ---- 1b. the arm64 -dev parts of libgcrypt and libgpg-error (gcrypt.h, gpg-error.h, the
# libgcrypt.so link, the .pc files), unpacked from their .deb into $GDEV, nothing installed:
# the .pc prefixes point there, the .so links at the runtime libraries apt installed, and
# gpg-error.pc names the multiarch include dir its header sits in. Keyed by the runtime's
# version, so an upgraded libgcrypt20:arm64 gets matching headers.
GDEV=$DIR/gcrypt-dev
gver="$(dpkg-query -W -f='${Version}' libgcrypt20:arm64) $(dpkg-query -W -f='${Version}' libgpg-error0:arm64)"
if [ "$(cat "$GDEV/.complete" 2>/dev/null)" != "$gver" ]; then
    rm -rf "$GDEV"
    mkdir -p "$GDEV/debs"
    devs=("libgcrypt20-dev:arm64=${gver% *}" "libgpg-error-dev:arm64=${gver#* }")
    # (as root, apt's download sandbox user cannot write here: download as root)
    (cd "$GDEV/debs" && apt-get download -qq -o APT::Sandbox::User=root "${devs[@]}")
    for d in "$GDEV"/debs/*.deb; do dpkg -x "$d" "$GDEV/root"; done
    rm -rf "$GDEV/root/usr/share" "$GDEV/root/usr/bin" "$GDEV"/root/usr/lib/aarch64-linux-gnu/*.a
    for l in "$GDEV"/root/usr/lib/aarch64-linux-gnu/*.so; do
        t=$(readlink "$l")
        case $t in /*) ;; *) ln -sfn "/usr/lib/aarch64-linux-gnu/$t" "$l" ;; esac
        [ -e "$l" ] || { echo "aarch64: $l -> $(readlink "$l"): no such runtime library"; exit 1; }
    done
    pcdir=$GDEV/root/usr/lib/aarch64-linux-gnu/pkgconfig
    sed -i "s|^prefix=/usr\$|prefix=$GDEV/root/usr|" "$pcdir"/*.pc
    sed -i 's|^Cflags: *$|Cflags: -I${includedir}/aarch64-linux-gnu|' "$pcdir/gpg-error.pc"
    echo "$gver" > "$GDEV/.complete"
fi

# ---- 2. an aarch64 CPython: Py_BytesMain linked against Debian's arm64 libpython3.11
PY=$DIR/bin/python3
if [ ! -x "$DIR/bin/python3.11-aarch64" ]; then
    mkdir -p "$DIR/bin"
    printf '#include <Python.h>\nint main(int argc, char **argv) { return Py_BytesMain(argc, argv); }\n' \
        > "$DIR/pymain.c"
    aarch64-linux-gnu-gcc -O1 "$DIR/pymain.c" -I/usr/include/python3.11 \
        -I/usr/include/aarch64-linux-gnu/python3.11 -L/usr/lib/aarch64-linux-gnu -lpython3.11 \
        -o "$DIR/bin/python3.11-aarch64"
fi
# The wrapper is sys.executable (qemu's -0 sets argv[0]): children re-enter qemu.
# -S: no site-packages, so the host's x86-64 packages are never imported; PYTHONPATH
# carries the aarch64 wheels.
cat > "$PY" <<EOF
#!/bin/sh
exec $QEMU -0 "\$0" "$DIR/bin/python3.11-aarch64" -S "\$@"
EOF
chmod +x "$PY"

# ---- 3. aarch64 wheels of what the tests import (unpacked: a wheel is a zip)
SITE=$DIR/site
WHEELS=(numpy scipy tqdm pytest hypothesis cryptography tink pycryptodome pynacl)
if [ "$(cat "$SITE/.complete" 2>/dev/null)" != "${WHEELS[*]}" ]; then  # a new list: fetch again
    rm -rf "$SITE" "$DIR/wheels"
    mkdir -p "$SITE" "$DIR/wheels"
    pip download -q --disable-pip-version-check --only-binary=:all: --implementation cp \
        --python-version 3.11 --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
        --platform manylinux_2_28_aarch64 -d "$DIR/wheels" "${WHEELS[@]}" 2>&1 \
        | grep -v "is ignored: it is neither a file nor a directory" || true
    for w in "$DIR"/wheels/*.whl; do
        python -m zipfile -e "$w" "$SITE"
    done
    echo "${WHEELS[*]}" > "$SITE/.complete"
fi

# ---- 4. cross-build the extension in place (pycipherbench/_core.cpython-311-aarch64-linux-gnu.so;
# the x86-64 interpreter ignores it). The host Python runs setup.py with the arm64
# sysconfig data (compiler aarch64-linux-gnu-gcc, the aarch64 extension suffix) and
# pkg-config looking at the arm64 .pc files only. Warnings are errors here, as
# -Wall -Wextra clean is the rule.
mkdir -p "$DIR/sysconfig"
cp /usr/lib/python3.11/_sysconfigdata__aarch64-linux-gnu.py "$DIR/sysconfig/"
echo "=== aarch64: cross build ==="
PYTHONPATH=$DIR/sysconfig _PYTHON_HOST_PLATFORM=linux-aarch64 \
    _PYTHON_SYSCONFIGDATA_NAME=_sysconfigdata__aarch64-linux-gnu \
    PKG_CONFIG_LIBDIR=$GDEV/root/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig \
    python setup.py -q build_ext --inplace --force --build-temp "$DIR/tmp" 2> "$DIR/build.log" \
    || { cat "$DIR/build.log"; exit 1; }
if grep -E "warning:|error:" "$DIR/build.log"; then
    echo "aarch64: the cross build is not warning-free"; exit 1
fi
if grep "left out" "$DIR/build.log"; then  # every optional backend, gcrypt and Crypto++ included
    echo "aarch64: the cross build lacks a backend"; exit 1
fi

# ---- 5. the tests under emulation
export PYTHONPATH=$SITE:$ROOT
export OPENBLAS_NUM_THREADS=1   # NumPy's import spins its BLAS threads under qemu otherwise
export PCB_AARCH64_EMULATED=1   # tests that need a real ARM core (timings) say so and skip
"$PY" -c "import platform, pycipherbench as p; m = p.machine(); \
print('aarch64:', platform.machine(), m['cpu_model'], m['cpu_flags'], 'TEA', m['tea_impl'], \
[b['name'] for b in p.backends() if b['available']])"
have_paths=0
for a in "$@"; do case $a in -*) ;; *) have_paths=1 ;; esac; done
if [ $have_paths -eq 1 ]; then  # test files given: one pytest run of exactly them
    echo "=== aarch64: pytest $* (under $QEMU) ==="
    rc=0
    "$PY" -m pytest -q -p no:cacheprovider "$@" || rc=$?
    echo "aarch64 stage: pytest exit $rc, $(( $(date +%s) - T0 )) s in all"
    exit $rc
fi
# The CI subset, most telling first, one pytest run per file (options given are passed on):
# the ARM tests (NEON vs the reference and the vectors, fingerprint, hw_aes=False), the
# published vectors, interop with the other libraries' aarch64 wheels, every backend
# (gcrypt included), the store and Tink formats, the store itself (locks, I/O, round
# trips; the slowest file), bad input. Each file has its expected seconds (a run on CI's
# 2-core x86-64 shared with other builds, load average about 3, 2026-12-02: 9 to 11 min
# in all with the installs cached): a file is started only if the time so far plus its
# expectation, scaled by how much slower than expected the files so far ran (the
# machine's load), stays inside PCB_AARCH64_BUDGET s (default 2100: what CI's 90 minutes
# leave this stage). Files left out are named, never silently dropped.
FILES=(test_arm:55 test_vectors:20 test_interop:35 test_backends:115 test_store_format:15
       test_tink_format:35 test_store:195 test_bad_input:50)
BUDGET=${PCB_AARCH64_BUDGET:-2100}
passed=0 failed=0 skipped=0 rc=0 left=() spent=0 expected=0
for fe in "${FILES[@]}"; do
    f=${fe%:*} est=${fe#*:}
    slow100=$(( expected > 0 && spent > expected ? spent * 100 / expected : 100 ))
    if [ $(( $(date +%s) - T0 + est * slow100 / 100 )) -gt "$BUDGET" ]; then
        left+=("$f"); continue
    fi
    t1=$(date +%s)
    echo "=== aarch64: tests/$f.py (under $QEMU) ==="
    set +e
    "$PY" -m pytest -q -rs -p no:cacheprovider "$@" "tests/$f.py" 2>&1 | tee "$DIR/$f.log"
    frc=${PIPESTATUS[0]}
    set -e
    last=$(tail -1 "$DIR/$f.log")
    n() { echo "$last" | grep -oE "[0-9]+ $1" | grep -oE "^[0-9]+" || echo 0; }
    passed=$(( passed + $(n passed) )); failed=$(( failed + $(n failed) + $(n error) ))
    skipped=$(( skipped + $(n skipped) ))
    [ "$frc" -eq 0 ] || rc=1
    took=$(( $(date +%s) - t1 ))
    spent=$(( spent + took )) expected=$(( expected + est ))
    echo "aarch64: $f: exit $frc, $took s (expected $est s)"
done
echo "aarch64 stage: $(( $(date +%s) - T0 )) s; files left out by the ${BUDGET} s budget: ${left[*]:-none}"
echo "aarch64: $passed passed, $failed failed, $skipped skipped"
exit $rc
