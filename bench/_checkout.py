"""Which pycipherbench a bench script measures: imported first by every script in bench/.

Run as ``python bench/SCRIPT.py``, Python puts ``bench/`` (not the repository) first on
``sys.path``, so a plain ``import pycipherbench`` takes an *installed* copy whenever one
exists, even when the checkout holds a newer in-place build: a benchmark of the wrong
code. This module puts the checkout first when it has a built extension for this
interpreter (``python setup.py build_ext --inplace``), and :func:`which` says what was
imported, for the script's header. Set ``PCB_BENCH_INSTALLED=1`` to measure the installed
package even beside a built checkout.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _built(root: str) -> bool:
    pkg = os.path.join(root, "pycipherbench")
    return any(os.path.exists(os.path.join(pkg, "_core" + suffix))
               for suffix in importlib.machinery.EXTENSION_SUFFIXES)


if not os.environ.get("PCB_BENCH_INSTALLED") and _built(ROOT) and ROOT not in sys.path[:1]:
    sys.path.insert(0, ROOT)
elif not _built(ROOT) and ROOT not in sys.path:
    sys.path.append(ROOT)  # no build here: an installed copy, else this checkout's sources


def which() -> str:
    """``pycipherbench X.Y.Z from PATH`` (the checkout or site-packages) for a header line."""
    import pycipherbench

    return f"pycipherbench {pycipherbench.__version__} from {os.path.dirname(pycipherbench.__file__)}"
