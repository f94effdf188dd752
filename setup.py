"""Build of pycipherbench._core; metadata lives in pyproject.toml.

Environment switches:
  PCB_SANITIZE=1  build with AddressSanitizer + UndefinedBehaviorSanitizer
                  (run with LD_PRELOAD of the compiler's libasan and PYTHONMALLOC=malloc)
  PCB_DEBUG=1     -O0 -g, assertions on
  PCB_NO_BACKENDS=1  build with OpenSSL alone (none of csrc/crypto/backends.def's probed
                  libraries even where pkg-config finds them)
  PCB_FORCE_FALLBACKS=1  compile the portable fallbacks even on Linux (flock for the OFD
                  lock, getentropy, no RUSAGE_THREAD/MADV_HUGEPAGE/O_DIRECTORY/O_CLOEXEC,
                  seconds-only mtimes, no HWCAP probe), so CI runs what other systems get
Cross-compiling for aarch64: .ci/aarch64.sh (the arm64 sysconfig data and pkg-config dir).
"""
import glob
import importlib.util
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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


# Optional crypto libraries: the rows of csrc/crypto/backends.def (the one list of them),
# read through its reader; each is compiled in when its probe program builds and links with
# the flags pkg-config gives (or, for a library without a .pc file, as Debian's Mbed TLS
# 2.x, with its -l libraries), so an old library is left out instead of breaking the build.
# A "probe-c++" row's shim (csrc/crypto/backend_<name>_shim.cpp) is compiled with the C++
# compiler, and libstdc++ linked, only when the row is found.
_spec = importlib.util.spec_from_file_location(
    "backends_def", os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc", "crypto",
                                 "backends_def.py"))
backends_def = importlib.util.module_from_spec(_spec)
sys.modules["backends_def"] = backends_def  # (its NamedTuple looks its module up)
_spec.loader.exec_module(backends_def)  # type: ignore[union-attr]
BACKENDS = [b for b in backends_def.table() if b.probed]


def _compiles(program: str, incs: list[str], libdirs: list[str], libs: list[str],
              cxx: bool = False) -> bool:
    """True if the C (or C++) compiler builds and links the program with these flags."""
    import sysconfig
    import tempfile

    cc = (sysconfig.get_config_var("CXX" if cxx else "CC") or ("c++" if cxx else "cc")).split()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.cpp" if cxx else "probe.c")
        with open(src, "w") as f:
            f.write("#include <stdint.h>\n" + program)
        cmd = [*cc, src, "-o", os.path.join(tmp, "probe"), *(f"-I{d}" for d in incs),
               *(f"-L{d}" for d in libdirs), *(f"-l{lib}" for lib in libs)]
        try:
            return subprocess.run(cmd, capture_output=True).returncode == 0
        except OSError:  # no compiler under that name: the build will say so itself
            return False


def find_backends() -> tuple[list[tuple[str, None]], list[str], list[str], list[str], list[str]]:
    """Defines, include dirs, library dirs, libraries and C++ shims of the optional backends
    found."""
    defines: list[tuple[str, None]] = []
    incs: list[str] = []
    libdirs: list[str] = []
    libs: list[str] = []
    shims: list[str] = []
    if os.environ.get("PCB_NO_BACKENDS"):
        return defines, incs, libdirs, libs, shims
    for b in BACKENDS:
        candidates = []
        for pc in b.pkgconfig.split():
            r = subprocess.run(["pkg-config", "--cflags-only-I", "--libs", pc],
                               capture_output=True, text=True)
            if r.returncode == 0:
                flags = r.stdout.split()
                candidates.append(([f[2:] for f in flags if f.startswith("-I")],
                                   [f[2:] for f in flags if f.startswith("-L")],
                                   [f[2:] for f in flags if f.startswith("-l")]))
                break
        candidates.append(([], [], b.libs.split()))
        for c_incs, c_libdirs, c_libs in candidates:
            if _compiles(b.probe, c_incs, c_libdirs, c_libs, cxx=b.cxx):
                incs += c_incs
                libdirs += c_libdirs
                libs += c_libs
                defines.append((b.define, None))
                if b.cxx:
                    shims.append(f"csrc/crypto/backend_{b.name}_shim.cpp")
                break
        else:
            print(f"pycipherbench: backend {b.name} left out (not found, or too old; "
                  f"Debian: {b.apt})", file=sys.stderr)
    return defines, incs, libdirs, libs, shims


class BuildExt(build_ext):
    """build_ext that compiles a C++ shim with the C++ compiler (sysconfig's CXX: the
    cross one in .ci/aarch64.sh) and C++ flags; the C files keep the C compiler and -std=c11."""

    def build_extensions(self) -> None:
        import sysconfig

        compiler = self.compiler
        c_compile = compiler._compile  # type: ignore[attr-defined]
        cxx = (sysconfig.get_config_var("CXX") or "c++").split()

        def _compile(obj, src, ext, cc_args, extra_postargs, pp_opts):  # type: ignore[no-untyped-def]
            if not src.endswith(".cpp"):
                return c_compile(obj, src, ext, cc_args, extra_postargs, pp_opts)
            post = [a for a in extra_postargs if a != "-std=c11"] + CXX_ARGS
            saved = compiler.compiler_so
            compiler.compiler_so = cxx + saved[1:]  # the C compiler's flags, C++'s driver
            try:
                return c_compile(obj, src, ext, cc_args, post, pp_opts)
            finally:
                compiler.compiler_so = saved

        compiler._compile = _compile  # type: ignore[attr-defined]
        super().build_extensions()


include_dirs, library_dirs, libraries = find_openssl()
backend_defines, backend_incs, backend_libdirs, backend_libs, shims = find_backends()
include_dirs += backend_incs
library_dirs += backend_libdirs
libraries += [lib for lib in backend_libs if lib not in libraries]
# The C core's layers are folders (csrc/README.md); every .c file in them is
# part of the module, so a new file needs no edit here.
SOURCES = sorted(glob.glob("csrc/*/*.c")) + shims
# (the table, its reader and every C++ shim go into an sdist, found here or not)
HEADERS = sorted(glob.glob("csrc/*/*.h") + glob.glob("csrc/*/*.cpp")) + [
    "csrc/crypto/backends.def", "csrc/crypto/backends_def.py"]
# A C++ shim's own flags (BuildExt: the C flags below, -std=c11 replaced by these).
CXX_ARGS = ["-std=c++17"]
if shims:
    libraries.append("stdc++")
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
    cmdclass={"build_ext": BuildExt},
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
