"""Shared test set-up.

PCB_SANITIZED=1 marks the run against an AddressSanitizer build (.ci/run's
second stage). There:
- pycryptodome is blocked from importing (it dlopens its modules with
  RTLD_DEEPBIND, which ASan cannot run) and the comparisons that need it
  skip; everywhere else it is required;
- the RSS/tracemalloc leak tests are left out (ASan's allocator and
  quarantine make process memory meaningless as a leak signal; ASan itself
  checks the C side), and so are the notebooks (pure Python over the same
  API, and many times slower under ASan).
"""

import os
import sys

collect_ignore = []

# No test reads or writes the user's history of this machine's speed (pycipherbench._levels):
# an interval's width and words would then depend on the runs before it. The tests of that
# history point PYCIPHERBENCH_LEVELS at files of their own.
os.environ["PYCIPHERBENCH_LEVELS"] = ""

if os.environ.get("PCB_SANITIZED"):
    sys.modules["Crypto"] = None  # type: ignore[assignment]  # makes `import Crypto` raise ImportError
    collect_ignore += ["test_resources.py", "test_notebooks.py"]


# -- shared scaffolding (fixtures and helpers several test files used to copy)
import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

import pycipherbench  # noqa: E402

#: The directory holding the pycipherbench these tests import (installed, or built in
#: place in a checkout): child processes put it first on sys.path, so that a
#: checkout's uncompiled copy never shadows the build under test.
PACKAGE_ROOT = str(Path(pycipherbench.__file__).resolve().parent.parent)
#: The tests' own directory (helpers such as esp_reference.py and synthetic.py).
TESTS_DIR = str(Path(__file__).resolve().parent)
if TESTS_DIR not in sys.path:  # the helpers import as top-level modules in every test file
    sys.path.insert(0, TESTS_DIR)


def child_env(**extra: str) -> dict[str, str]:
    """os.environ for a child interpreter that imports this very pycipherbench."""
    path = os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return dict(os.environ, PYTHONPATH=path, **extra)


@pytest.fixture
def package_root() -> str:
    """:data:`PACKAGE_ROOT`, for tests that write child scripts."""
    return PACKAGE_ROOT


@pytest.fixture
def mk(tmp_path: Path) -> Path:
    """Where a store's master key file goes (not created)."""
    return tmp_path / "master.key"


@pytest.fixture
def master(tmp_path: Path) -> tuple[Path, bytes]:
    """An existing 0600 master key file: (its path, the 32 key bytes)."""
    key = os.urandom(32)
    kf = tmp_path / "master.key"
    fd = os.open(kf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, key)
    os.close(fd)
    return kf, key


#: Seconds after which a child process of a test counts as hung (a generous bound, never a
#: timing assertion: a correct child finishes in a fraction of it).
CHILD_TIMEOUT = 120


def signals_as_a_shell_leaves_them() -> None:
    """In a child before exec: SIGINT, SIGHUP and SIGTERM at their defaults, as an
    interactive shell starts a program. A runner started in the background (``cmd &``,
    nohup) hands its children SIGINT/SIGHUP ignored, and Python rightly keeps an ignored
    SIGINT ignored, so a test that interrupts its child would wait for ever."""
    import signal

    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def spawn_child(code: str, *args: str, stdin: bool = True) -> "subprocess.Popen[str]":
    """``python -c code args...`` importing this very pycipherbench (:func:`child_env`),
    from a neutral directory (so that ``-c`` never imports a checkout's sources without
    their extension); text pipes for stdout and stderr, and stdin unless ``stdin=False``."""
    import tempfile
    import textwrap

    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=child_env(),
                            cwd=tempfile.gettempdir(), preexec_fn=signals_as_a_shell_leaves_them,
                            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_child(p: "subprocess.Popen[str]", timeout: float = CHILD_TIMEOUT) -> str:
    """The child's stdout once it exits 0; a test failure if it hangs past ``timeout``
    (killed, its output shown) or fails."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"child hung; stdout={out!r} stderr={err[-2000:]!r}")
    assert p.returncode == 0, f"child failed ({p.returncode}): {out[-2000:]} {err[-3000:]}"
    return out


#: A child that holds a store's writer lock file (argv[1]) until a file (argv[2]) appears:
#: the OFD lock the store takes, and flock, the store's fallback (PCB_FORCE_FALLBACKS=1
#: builds, systems without OFD locks), which on Linux neither sees nor is seen by an OFD lock.
LOCK_HOLDER = """
    import fcntl, os, struct, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    if hasattr(fcntl, "F_OFD_SETLKW"):  # struct flock: type, whence, start, len, pid (0: OFD)
        fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    print("released", flush=True)
"""


def hold_lock(lock_file: "Path | str", release: "Path | str") -> "subprocess.Popen[str]":
    """A :data:`LOCK_HOLDER` child, returned once it holds ``lock_file``; it lets go when
    ``release`` exists (then :func:`finish_child` it)."""
    p = spawn_child(LOCK_HOLDER, str(lock_file), str(release), stdin=False)
    assert p.stdout.readline().strip() == "locked", p.stderr.read()
    return p
