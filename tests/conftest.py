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
