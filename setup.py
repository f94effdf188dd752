"""Build of pycipherbench._core; metadata lives in pyproject.toml.

Environment switches:
  PCB_SANITIZE=1  build with AddressSanitizer + UndefinedBehaviorSanitizer
                  (run with LD_PRELOAD of the compiler's libasan and PYTHONMALLOC=malloc)
  PCB_DEBUG=1     -O0 -g, assertions on
  PCB_NO_BACKENDS=1  build with OpenSSL alone (no libsodium/Nettle/libgcrypt/Mbed TLS
                  even where pkg-config finds them)
  PCB_FORCE_FALLBACKS=1  compile the portable fallbacks even on Linux (flock for the OFD
                  lock, getentropy, no RUSAGE_THREAD/MADV_HUGEPAGE/O_DIRECTORY/O_CLOEXEC,
                  seconds-only mtimes, no HWCAP probe), so CI runs what other systems get
Cross-compiling for aarch64: .ci/aarch64.sh (the arm64 sysconfig data and pkg-config dir).
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


# Optional crypto libraries (csrc/crypto/backend_*.c): compiled in when found and new
# enough. (define, pkg-config names to try, the -l flags to try when the library ships no
# .pc file, as Debian's Mbed TLS 2.x does, and a program that must compile and link: it
# uses what the backend needs, so an old library is left out instead of breaking the build)
BACKENDS = {
    "sodium": ("PCB_HAVE_SODIUM", ["libsodium"], ["sodium"],
               "#include <sodium.h>\nint main(void) { return (int)crypto_aead_aes256gcm_statebytes()"
               " + crypto_aead_xchacha20poly1305_ietf_KEYBYTES; }\n"),
    "nettle": ("PCB_HAVE_NETTLE", ["nettle"], ["nettle"],
               "#include <nettle/siv-cmac.h>\n#include <nettle/chacha-poly1305.h>\n"
               "#include <nettle/gcm.h>\n#include <nettle/des.h>\n#include <nettle/version.h>\n"
               "int main(void) { struct siv_cmac_aes128_ctx s; struct gcm_aes192_ctx g;\n"
               "  siv_cmac_aes128_set_key(&s, (const uint8_t *)\"0123456789abcdef0123456789abcdef\");\n"
               "  gcm_aes192_set_key(&g, (const uint8_t *)\"0123456789abcdef01234567\");\n"
               "  return nettle_version_major(); }\n"),
    "gcrypt": ("PCB_HAVE_GCRYPT", ["libgcrypt"], ["gcrypt"],
               "#include <gcrypt.h>\nint main(void) { gcry_cipher_hd_t h = 0; (void)h;\n"
               "  return GCRY_CIPHER_MODE_SIV + GCRY_CIPHER_MODE_POLY1305 + GCRYCTL_SET_ALLOW_WEAK_KEY"
               " + (gcry_check_version(0) != 0); }\n"),
    "mbedtls": ("PCB_HAVE_MBEDTLS", ["mbedcrypto", "mbedtls"], ["mbedcrypto"],
                "#include <mbedtls/chachapoly.h>\n#include <mbedtls/gcm.h>\n#include <mbedtls/des.h>\n"
                "#include <mbedtls/aes.h>\n#include <mbedtls/version.h>\n"
                "int main(void) { mbedtls_chachapoly_context c; mbedtls_des3_context d;\n"
                "  mbedtls_chachapoly_init(&c); mbedtls_des3_init(&d); mbedtls_chachapoly_free(&c);\n"
                "  mbedtls_des3_free(&d); return MBEDTLS_VERSION_MAJOR; }\n"),
}


def _compiles(program: str, incs: list[str], libdirs: list[str], libs: list[str]) -> bool:
    """True if the C compiler builds and links the program with these flags."""
    import sysconfig
    import tempfile

    cc = (sysconfig.get_config_var("CC") or "cc").split()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as f:
            f.write("#include <stdint.h>\n" + program)
        cmd = [*cc, src, "-o", os.path.join(tmp, "probe"), *(f"-I{d}" for d in incs),
               *(f"-L{d}" for d in libdirs), *(f"-l{lib}" for lib in libs)]
        try:
            return subprocess.run(cmd, capture_output=True).returncode == 0
        except OSError:  # no compiler under that name: the build will say so itself
            return False


def find_backends() -> tuple[list[tuple[str, None]], list[str], list[str], list[str]]:
    """Defines, include dirs, library dirs and libraries of the optional backends found."""
    defines: list[tuple[str, None]] = []
    incs: list[str] = []
    libdirs: list[str] = []
    libs: list[str] = []
    if os.environ.get("PCB_NO_BACKENDS"):
        return defines, incs, libdirs, libs
    for name, (define, pcs, fallback, program) in BACKENDS.items():
        candidates = []
        for pc in pcs:
            r = subprocess.run(["pkg-config", "--cflags-only-I", "--libs", pc],
                               capture_output=True, text=True)
            if r.returncode == 0:
                flags = r.stdout.split()
                candidates.append(([f[2:] for f in flags if f.startswith("-I")],
                                   [f[2:] for f in flags if f.startswith("-L")],
                                   [f[2:] for f in flags if f.startswith("-l")]))
                break
        candidates.append(([], [], fallback))
        for c_incs, c_libdirs, c_libs in candidates:
            if _compiles(program, c_incs, c_libdirs, c_libs):
                incs += c_incs
                libdirs += c_libdirs
                libs += c_libs
                defines.append((define, None))
                break
        else:
            print(f"pycipherbench: backend {name} left out (not found, or too old)", file=sys.stderr)
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

if os.environ.get("PCB_FORCE_FALLBACKS"):
    define_macros.append(("PCB_FORCE_FALLBACKS", None))
if os.environ.get("PCB_DEBUG"):
    extra_compile_args += ["-O0", "-g", "-UNDEBUG", "-DPCB_ASSERTS"]
else:
    extra_compile_args += ["-O2"]
if os.environ.get("PCB_SANITIZE"):
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
    extra_compile_args += flags + ["-g", "-UNDEBUG", "-DPCB_ASSERTS"]  # the lock rules asserted
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
