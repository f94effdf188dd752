"""Build of pycipherbench._core; metadata lives in pyproject.toml.

Environment switches:
  PCB_SANITIZE=1  build with AddressSanitizer + UndefinedBehaviorSanitizer
                  (run with LD_PRELOAD of the compiler's libasan and PYTHONMALLOC=malloc)
  PCB_DEBUG=1     -O0 -g, assertions on
  PCB_NO_BACKENDS=1  build with OpenSSL alone (no libsodium/Nettle/libgcrypt/Mbed TLS
                  even where pkg-config finds them)
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup

DEBIAN_HINT = (
    "pycipherbench needs OpenSSL >= 3.0 with its development files, found through "
    "pkg-config. On Debian/Ubuntu: apt-get install libssl-dev pkg-config"
)


def pkg_config(*args: str) -> str:
    return subprocess.run(
        ["pkg-config", *args, "libcrypto"], check=True, capture_output=True, text=True
    ).stdout.strip()


def find_openssl() -> tuple[list[str], list[str], list[str]]:
    """Include dirs, library dirs and libraries of libcrypto >= 3.0, or exit with a hint."""
    if shutil.which("pkg-config") is None:
        sys.exit(f"error: pkg-config not found. {DEBIAN_HINT}")
    try:
        version = pkg_config("--modversion")
        cflags = pkg_config("--cflags-only-I").split()
        libs_l = pkg_config("--libs-only-L").split()
        libs = pkg_config("--libs-only-l").split()
    except subprocess.CalledProcessError:
        sys.exit(f"error: pkg-config does not know libcrypto. {DEBIAN_HINT}")
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 0
    if major < 3:
        sys.exit(f"error: found OpenSSL {version}, need >= 3.0. {DEBIAN_HINT}")
    return [f[2:] for f in cflags], [f[2:] for f in libs_l], [f[2:] for f in libs]


# Optional crypto libraries (csrc/crypto/backend_*.c): compiled in when found.
# (define, pkg-config names to try, fallback header and library when the
# library ships no .pc file, as Debian's Mbed TLS 2.x does)
BACKENDS = {
    "sodium": ("PCB_HAVE_SODIUM", ["libsodium"], "sodium.h", ["sodium"]),
    "nettle": ("PCB_HAVE_NETTLE", ["nettle"], "nettle/siv-cmac.h", ["nettle"]),
    "gcrypt": ("PCB_HAVE_GCRYPT", ["libgcrypt"], "gcrypt.h", ["gcrypt"]),
    "mbedtls": ("PCB_HAVE_MBEDTLS", ["mbedcrypto", "mbedtls"], "mbedtls/chachapoly.h", ["mbedcrypto"]),
}


def _probe_fallback(header: str, libs: list[str]) -> bool:
    """True if the C compiler finds the header and links the libraries."""
    import sysconfig
    import tempfile

    cc = (sysconfig.get_config_var("CC") or "cc").split()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write(f"#include <{header}>\nint main(void) {{ return 0; }}\n")
        cmd = [*cc, src, "-o", os.path.join(tmp, "probe"), *(f"-l{lib}" for lib in libs)]
        return subprocess.run(cmd, capture_output=True).returncode == 0


def find_backends() -> tuple[list[tuple[str, None]], list[str], list[str], list[str]]:
    """Defines, include dirs, library dirs and libraries of the optional backends found."""
    defines: list[tuple[str, None]] = []
    incs: list[str] = []
    libdirs: list[str] = []
    libs: list[str] = []
    if os.environ.get("PCB_NO_BACKENDS"):
        return defines, incs, libdirs, libs
    for name, (define, pcs, header, fallback) in BACKENDS.items():
        found = False
        for pc in pcs:
            r = subprocess.run(["pkg-config", "--cflags-only-I", "--libs", pc],
                               capture_output=True, text=True)
            if r.returncode == 0:
                flags = r.stdout.split()
                incs += [f[2:] for f in flags if f.startswith("-I")]
                libdirs += [f[2:] for f in flags if f.startswith("-L")]
                libs += [f[2:] for f in flags if f.startswith("-l")]
                found = True
                break
        if not found and _probe_fallback(header, fallback):
            libs += fallback
            found = True
        if found:
            defines.append((define, None))
    return defines, incs, libdirs, libs


include_dirs, library_dirs, libraries = find_openssl()
backend_defines, backend_incs, backend_libdirs, backend_libs = find_backends()
include_dirs += backend_incs
library_dirs += backend_libdirs
libraries += [lib for lib in backend_libs if lib not in libraries]
# The C core's layers are folders (csrc/README.md); every .c file in them is
# part of the module, so a new file needs no edit here.
SOURCES = sorted(glob.glob("csrc/*/*.c"))
HEADERS = sorted(glob.glob("csrc/*/*.h"))
include_dirs = ["csrc", *include_dirs]
extra_compile_args = ["-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                      "-fvisibility=hidden"]
extra_link_args: list[str] = []
define_macros = [("OPENSSL_API_COMPAT", "30000"), ("OPENSSL_NO_DEPRECATED", None), *backend_defines]

if os.environ.get("PCB_DEBUG"):
    extra_compile_args += ["-O0", "-g", "-UNDEBUG"]
else:
    extra_compile_args += ["-O2"]
if os.environ.get("PCB_SANITIZE"):
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
    extra_compile_args += flags + ["-g"]
    extra_link_args += flags

setup(
    ext_modules=[
        Extension(
            "pycipherbench._core",
            sources=SOURCES,
            depends=HEADERS,
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            libraries=libraries,
            define_macros=define_macros,
            extra_compile_args=extra_compile_args,
            extra_link_args=extra_link_args,
        )
    ],
)
