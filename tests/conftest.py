"""Shared test set-up.

PCB_SANITIZED=1 marks the run against an AddressSanitizer build (.ci/run's
second stage). pycryptodome dlopens its modules with RTLD_DEEPBIND, which
ASan cannot run, so there it is blocked from importing and the comparisons
that need it skip; everywhere else it is required.
"""

import os
import sys

if os.environ.get("PCB_SANITIZED"):
    sys.modules["Crypto"] = None  # type: ignore[assignment]  # makes `import Crypto` raise ImportError
