"""Running measurements with the CPU's AES and carry-less-multiply instructions hidden.

OpenSSL reads its CPU capability mask once, when libcrypto starts, from
``OPENSSL_ia32cap`` (x86) or ``OPENSSL_armcap`` (ARM). So the only honest way
to measure "this machine without AES instructions" is a child process started
with that variable set; this module runs such a child and returns its raw
results. ``python -m pycipherbench._hwaes`` is the child's entry point.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from typing import Any

# x86: first word bit 57 = AES-NI, bit 33 = PCLMULQDQ (CPUID.1:ECX bits 25, 1);
# second word bits 41/42 = VAES/VPCLMULQDQ (CPUID.7:ECX bits 9, 10).
X86_MASK = "~0x200000200000000:~0x60000000000"
# ARM: the variable replaces detection; 0x1 keeps NEON only (no AES, PMULL, SHA).
ARM_VALUE = "0x1"


def masked_environment() -> tuple[dict[str, str], str]:
    """A copy of os.environ with hardware AES hidden from OpenSSL, and what was set."""
    env = dict(os.environ)
    arch = platform.machine().lower()
    if arch in ("x86_64", "amd64", "i386", "i686"):
        env["OPENSSL_ia32cap"] = X86_MASK
        return env, f"OPENSSL_ia32cap={X86_MASK}"
    if arch in ("aarch64", "arm64") or arch.startswith("arm"):
        env["OPENSSL_armcap"] = ARM_VALUE
        return env, f"OPENSSL_armcap={ARM_VALUE}"
    raise NotImplementedError(f"hw_aes=False is not supported on {platform.machine()}")


def python_command(module: str, *args: str) -> list[str]:
    """argv for ``python -m module args`` that imports this very pycipherbench.

    Plain ``-m`` puts the current directory first on sys.path, so a child
    started from a source checkout would import the checkout (which has no
    compiled _core) instead of the installed package the parent runs.
    """
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = (f"import runpy, sys; sys.path.insert(0, {root!r}); "
            f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")
    return [sys.executable, "-c", code, *args]


def run_masked(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[dict[str, Any]], str]:
    """Runs each (function name in _core, kwargs) in one masked child; returns results and the mask."""
    env, mask = masked_environment()
    proc = subprocess.run(
        python_command("pycipherbench._hwaes"),
        input=json.dumps(calls), capture_output=True, text=True, env=env, check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the hw_aes=False child process failed:\n{proc.stderr.strip()}")
    reply = json.loads(proc.stdout)
    if "error" in reply:
        # Re-raise the child's exception as the same type where we can.
        raise _exception_type(reply["error"]["type"])(reply["error"]["message"])
    return reply["results"], mask


def _exception_type(name: str) -> type[Exception]:
    import builtins

    from . import _core

    found = getattr(_core, name, None) or getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, Exception) else RuntimeError


def _child() -> None:
    from . import _core

    calls = json.loads(sys.stdin.read())
    try:
        results = [getattr(_core, fn)(**kwargs) for fn, kwargs in calls]
    except Exception as exc:  # reported to the parent, which re-raises it
        json.dump({"error": {"type": type(exc).__name__, "message": str(exc)}}, sys.stdout)
        return
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    _child()
