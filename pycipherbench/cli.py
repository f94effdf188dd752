"""The ``pycipherbench`` command line."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from ._machine import machine
from ._measure import Measurement, Op, measure

# The seed article's table, in its order (003: "Speed Test of 10MB Data Enc/Decryption").
SPEED_GROUPS: list[tuple[str, list[str]]] = [
    ("AES", ["AES/CBC/PKCS5Padding", "AES/CBC/NoPadding", "AES/ECB/PKCS5Padding",
             "AES/ECB/NoPadding", "AES/GCM/NoPadding"]),
    ("DES", ["DES/CBC/PKCS5Padding", "DES/CBC/NoPadding", "DES/ECB/PKCS5Padding",
             "DES/ECB/NoPadding"]),
    ("3DES", ["DESede/CBC/PKCS5Padding", "DESede/CBC/NoPadding", "DESede/ECB/PKCS5Padding",
              "DESede/ECB/NoPadding"]),
    # Our vectorized TEA, and the one-block-at-a-time reference code like the seed's port.
    ("TEA", ["TEA/ECB/NoPadding", "TEA-ref/ECB/NoPadding"]),
]
# The seed's ratio compared TEA with AES/ECB/PKCS5Padding encryption ("TEA:AES=16:990").
RATIO_AES = "AES/ECB/PKCS5Padding"
RATIO_TEAS = ("TEA-ref/ECB/NoPadding", "TEA/ECB/NoPadding")
HIDDEN_MASKED_FLAG = "--hw-masked-child"


class _Progress:
    """A status line on stderr, shown only once a run has taken a few seconds."""

    def __init__(self, total: int, delay: float = 2.0) -> None:
        self.total, self.delay, self.start = total, delay, time.monotonic()
        self.tty = sys.stderr.isatty()
        self.shown = False

    def update(self, done: int, label: str) -> None:
        elapsed = time.monotonic() - self.start
        if elapsed < self.delay:
            return
        eta = elapsed / done * (self.total - done) if done else float("nan")
        line = f"[{done}/{self.total}] {label}  elapsed {elapsed:.0f} s, ETA {eta:.0f} s"
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def _payload_label(n: int) -> str:
    return f"{n >> 20}MB" if n % (1 << 20) == 0 else f"{n}B"


def run_speed(payload: int, quick: bool, hw_aes: bool) -> list[Measurement]:
    names = [n for _, group in SPEED_GROUPS for n in group]
    jobs: list[tuple[str, Op]] = [(n, op) for n in names for op in ("enc", "dec")]
    timing: dict[str, Any] = (
        dict(min_time=0.01, repeats=3, warmup=0.0) if quick else dict(min_time=0.1, repeats=7)
    )
    progress = _Progress(len(jobs))
    results = []
    try:
        for i, (name, op) in enumerate(jobs):
            progress.update(i, f"{name} {op.upper()}")
            m = measure(name, op=op, payload=payload, **timing)
            if not hw_aes:  # measured in-process under a masked environment
                m = _mark_masked(m)
            results.append(m)
    finally:
        progress.close()
    return results


def _mark_masked(m: Measurement) -> Measurement:
    from dataclasses import replace

    from ._hwaes import masked_environment

    _, mask = masked_environment()
    return replace(m, hw_aes=False, hw_mask=mask)


def format_speed(results: list[Measurement], payload: int) -> str:
    by_key = {(m.transformation, m.op): m for m in results}
    lines = [f"# Speed Test of {_payload_label(payload)} Data Enc/Decryption #"]
    for title, group in SPEED_GROUPS:
        lines.append(f"# {title}:")
        for name in group:
            for op in ("enc", "dec"):
                m = by_key[(name, op)]
                lines.append(f"* [{name}] {op.upper()}: {m.kb_per_ms:.1f} KB/ms")
    aes = by_key[(RATIO_AES, "enc")]
    for tea_name in RATIO_TEAS:
        tea = by_key[(tea_name, "enc")]
        ratio = aes.kb_per_ms / tea.kb_per_ms
        verdict = f"AES is {ratio:.1f}x faster" if ratio >= 1 else f"TEA is {1 / ratio:.1f}x faster"
        lines.append(
            f"# TEA:AES = {tea.kb_per_ms:.1f}:{aes.kb_per_ms:.1f} -> {verdict} "
            f"({RATIO_AES} vs {tea_name}, ENC, {tea.rounds} cycles)"
        )
    fp = results[0].machine
    hw = "on" if results[0].hw_aes else f"OFF ({results[0].hw_mask})"
    lines += [
        f"# Machine: {fp['cpu_model']}, {fp['cores']} cores, {fp['arch']}; "
        f"crypto flags: {' '.join(fp['cpu_flags']) or 'none'}",
        f"# {fp['openssl_version']}; compiled by {fp['compiler']}; TEA kernel {fp['tea_impl']}; "
        f"Python {fp['python']}; pycipherbench {fp['package_version']}",
        f"# Hardware AES: {hw}. Median of {results[0].repeats} samples, message scope "
        f"(each operation one whole {_payload_label(payload)} message, padding and tag included).",
    ]
    return "\n".join(lines)


def cmd_speed(args: argparse.Namespace) -> int:
    payload = args.payload if args.payload is not None else (1 << 20 if args.quick else 10 << 20)
    if payload <= 0 or payload % 16:
        sys.exit("error: --payload must be a positive multiple of 16 bytes (the NoPadding rows need whole blocks)")
    hw_masked = getattr(args, "hw_masked_child", False)
    if args.no_hw_aes and not hw_masked:
        # OpenSSL reads its CPU mask at start-up: rerun this command in a masked child.
        from ._hwaes import masked_environment, python_command

        env, _ = masked_environment()
        argv = python_command("pycipherbench.cli", *sys.argv[1:], HIDDEN_MASKED_FLAG)
        return subprocess.run(argv, env=env, check=False).returncode
    results = run_speed(payload, args.quick, hw_aes=not hw_masked)
    print(format_speed(results, payload))
    if args.json:
        doc = {"machine": machine(), "payload": payload, "hw_aes": not hw_masked,
               "results": [m.to_dict() for m in results]}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"# Raw samples written to {os.fspath(args.json)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pycipherbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    speed = sub.add_parser(
        "speed", help="the seed article's cipher speed table, measured on this machine",
        description="Encrypt and decrypt a payload with every transformation of the seed "
                    "article's table; print KB/ms per line, the TEA:AES ratio and the machine.")
    speed.add_argument("--payload", type=int, default=None,
                       help="bytes per message (default 10 MiB; 1 MiB with --quick)")
    speed.add_argument("--quick", action="store_true", help="short samples: done in well under a minute")
    speed.add_argument("--no-hw-aes", action="store_true",
                       help="hide AES-NI/PCLMULQDQ (ARM: AES/PMULL) from OpenSSL, as on a CPU without them")
    speed.add_argument("--json", metavar="FILE", help="also write every measurement with raw samples")
    speed.add_argument(HIDDEN_MASKED_FLAG, action="store_true", help=argparse.SUPPRESS)
    speed.set_defaults(func=cmd_speed)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
