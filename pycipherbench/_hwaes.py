"""Worker processes: fresh child processes that hold the timed kernels of a run.

A run's rounds may be spread over W fresh worker processes, one after another
(:class:`~._rounds.Workers`): the next process differs from this one in its memory
layout (ASLR, allocator, page placement, huge pages), hash seeds and the frequency
state it starts in, so the spread between processes is part of what a user sees
when acting on a number later. A :class:`WorkerProcess` holds the kernels (C ones,
and points timed at the Python call, which the parent hands over pickled: it is
this package's own parent, over a pipe only the two hold); the parent's rounds drive
them (one JSON line per call), and only samples cross the pipe, after the clock has
stopped. A worker whose stdin closes closes what it still holds (their scratch stores).

The same mechanism runs measurements with the CPU's AES and carry-less-multiply
instructions hidden: OpenSSL reads its CPU capability mask once, when libcrypto
starts, from ``OPENSSL_ia32cap`` (x86) or ``OPENSSL_armcap`` (ARM). So the only
honest way to measure "this machine without AES instructions" is a worker started
with that variable set (``masked=True``). ``python -m pycipherbench._hwaes`` is
the child's entry point.
"""

from __future__ import annotations

import itertools
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
# The AES bit of the (first) word OpenSSL reports: AES-NI; ARMV8_AES (crypto/arm_arch.h).
AES_BIT = {"OPENSSL_ia32cap": 57, "OPENSSL_armcap": 2}


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


def check_mask_reached(mask: str, report: str) -> str:
    """``report`` (OpenSSL's CPU_SETTINGS line in the child) if it shows OpenSSL read
    ``mask`` ("VAR=VALUE") from its environment, else RuntimeError: a child whose
    OpenSSL never saw the mask would measure hardware AES under the name of its absence."""
    var, _, value = mask.partition("=")
    if not report:  # an OpenSSL that reports nothing for this CPU: the mask cannot be checked
        return report
    words = report.split()
    if not report.startswith(var + "=") or f"env:{value}" not in words:
        raise RuntimeError(f"hw_aes=False: the child's OpenSSL does not report {mask!r} "
                           f"(it reports {report!r}); AES may not be masked")
    # and the word OpenSSL uses has the AES bit clear
    word = int(words[0].partition("=")[2].split(":")[0], 16)
    if word & (1 << AES_BIT[var]):
        raise RuntimeError(f"hw_aes=False: the child's OpenSSL still has AES ({report!r})")
    return report


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


#: Types a worker builds for the parent (``WorkerProcess.new(name, ...)``).
TYPES = ("Kernel", "StoreKernel", "PyKernel")


class WorkerProcess:
    """A fresh child process that holds timed kernels for the parent (with hardware
    AES masked when ``masked``): ``worker.new("Kernel", ...)`` returns a proxy with the
    kernel's methods, each a round trip of one JSON line. The kernels run in the child;
    only their samples cross the pipe, after the clock has stopped.

    Ctrl-C: the child runs in its own session, so a terminal's SIGINT reaches the
    parent only; the parent, interrupted while it waits for a reply, kills the child
    (its kernels' state is then unknown) and raises one KeyboardInterrupt. The
    proxies' close() is then a no-op, so that clean-up adds no second error."""

    def __init__(self, masked: bool = True) -> None:
        if masked:
            env, mask = masked_environment()
        else:
            env, mask = dict(os.environ), None
        #: What hid hardware AES ("VAR=VALUE"), None for an unmasked worker.
        self.mask: str | None = mask
        self._what = "hw_aes=False child process" if masked else "worker process"
        self._proc = subprocess.Popen(
            python_command("pycipherbench._hwaes"), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, bufsize=1,
            start_new_session=True)
        self._next = 0
        self._abandoned = False
        try:
            #: OpenSSL's own report in the child of the capability word it runs with
            #: (OPENSSL_info CPU_SETTINGS), e.g. "OPENSSL_armcap=0x1 env:0x1"
            settings = str(self.call(None, "cpu_info")["openssl_cpu_settings"])
            self.openssl_cpu_settings = (settings if mask is None
                                         else check_mask_reached(mask, settings))
        except BaseException:
            self.close()
            raise

    def call(self, obj: int | None, method: str, *args: Any, **kwargs: Any) -> Any:
        """Calls ``method`` on kernel ``obj`` (None: a function or type of _core) in the child."""
        proc = self._proc
        if self.abandoned:
            raise RuntimeError(f"the {self._what} was stopped by Ctrl-C")
        if proc.poll() is not None or proc.stdin is None or proc.stdout is None:
            raise RuntimeError(f"the {self._what} is gone"
                               + (f":\n{proc.stderr.read().strip()}" if proc.stderr else ""))
        try:
            proc.stdin.write(json.dumps([obj, method, args, kwargs]) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except KeyboardInterrupt:
            self.abandon()
            raise
        if not line:
            err = proc.stderr.read().strip() if proc.stderr else ""
            raise RuntimeError(f"the {self._what} failed:\n{err}")
        reply = json.loads(line)
        if "error" in reply:
            raise _exception_type(reply["error"]["type"])(reply["error"]["message"])
        return reply["result"]

    @property
    def abandoned(self) -> bool:
        """True once Ctrl-C stopped the child (see the class)."""
        return self._abandoned

    def abandon(self) -> None:
        """Kills the child (a request was cut short: its state is unknown)."""
        self._abandoned = True
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()

    @property
    def running(self) -> bool:
        """True while the child runs (not yet closed, killed or gone)."""
        return self._proc.poll() is None and self._proc.stdin is not None \
            and not self._proc.stdin.closed

    @property
    def pid(self) -> int:
        return self._proc.pid

    def new(self, type_name: str, *args: Any, **kwargs: Any) -> MaskedKernel:
        """A kernel of ``type_name`` (one of :data:`TYPES`) built in the child."""
        if type_name not in TYPES:
            raise ValueError(f"a worker builds {', '.join(TYPES)}, not {type_name!r}")
        return MaskedKernel(self, self.call(None, type_name, *args, **kwargs))

    def close(self) -> None:
        if self._proc.poll() is None and self._proc.stdin is not None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> WorkerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def MaskedWorker() -> WorkerProcess:
    """A worker process with hardware AES masked (``hw_aes=False``)."""
    return WorkerProcess(masked=True)


class MaskedKernel:
    """A kernel living in a :class:`WorkerProcess` (the methods of ``_core.Kernel``)."""

    def __init__(self, worker: WorkerProcess, handle: int) -> None:
        self._worker, self._handle = worker, handle

    def calibrate(self, min_time: float, warmup: float = -1.0) -> int:
        return int(self._worker.call(self._handle, "calibrate", min_time, warmup))

    def sample(self, iterations: int) -> tuple[int, int, int, int, int]:
        a, b, c, d, e = self._worker.call(self._handle, "sample", iterations)
        return a, b, c, d, e

    def stages(self, iterations: int) -> dict[str, int]:
        return dict(self._worker.call(self._handle, "stages", iterations))

    @property
    def info(self) -> dict[str, Any]:
        return dict(self._worker.call(self._handle, "info"))

    @property
    def thread_ns(self) -> tuple[int, ...]:
        return tuple(self._worker.call(self._handle, "thread_ns"))

    @property
    def thread_stagger_ns(self) -> int:
        return int(self._worker.call(self._handle, "thread_stagger_ns"))

    @property
    def last_sample(self) -> Any:
        return self._worker.call(self._handle, "last_sample")

    def close(self) -> None:
        if not self._worker.abandoned:  # a killed child took its kernels with it
            self._worker.call(self._handle, "close")


def _exception_type(name: str) -> type[Exception]:
    import builtins

    from . import _core

    found = getattr(_core, name, None) or getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, Exception) else RuntimeError


def _child() -> None:
    """Serves a WorkerProcess: one JSON request per line, one reply per line."""
    import signal

    from . import _core

    # Its own session keeps a terminal's Ctrl-C away; a SIGINT sent to it alone is
    # ignored too: the parent decides (and kills this process when interrupted).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    objects: dict[int, Any] = {}
    handles = itertools.count(1)  # never reused: a closed kernel's handle stays closed
    for line in sys.stdin:
        obj, method, args, kwargs = json.loads(line)
        try:
            result: Any
            if obj is None:  # a type (returns a handle) or a function of _core
                if method == "PyKernel":
                    from ._pybackends import PyKernel

                    result = PyKernel(*args, **kwargs)
                elif method == "Point":  # a point timed at the Python call, from our parent
                    import base64
                    import pickle

                    result = pickle.loads(base64.b64decode(args[0]))
                else:
                    result = getattr(_core, method)(*args, **kwargs)
                if not isinstance(result, (type(None), int, float, str, list, dict, tuple)):
                    handle = next(handles)
                    objects[handle] = result
                    result = handle
            elif method in ("info", "thread_ns", "thread_stagger_ns", "last_sample",
                            "last_call"):  # properties
                result = getattr(objects[obj], method)
            else:
                result = getattr(objects[obj], method)(*args, **kwargs)
                if method == "close":
                    del objects[obj]
        except Exception as exc:  # reported to the parent, which re-raises it
            reply: dict[str, Any] = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        else:
            reply = {"result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    for leftover in objects.values():  # the parent moved on to a fresh worker: no scratch left
        try:
            leftover.close()
        except Exception:  # noqa: BLE001 (best effort: the process ends now)
            pass


if __name__ == "__main__":
    _child()
