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

if os.environ.get("PCB_SANITIZED"):
    sys.modules["Crypto"] = None  # type: ignore[assignment]  # makes `import Crypto` raise ImportError
    collect_ignore += ["test_resources.py", "test_notebooks.py"]


# -- shared scaffolding (fixtures and helpers several test files used to copy)
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
