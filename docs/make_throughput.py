#!/usr/bin/env python3
"""Make docs/throughput.png, the README's throughput-vs-payload figure, on this machine.

Usage: python docs/make_throughput.py [--rounds 10] [--out docs/throughput.png]

Six transformations, nine payloads (16 B to 1 MiB), one sweep in interleaved rounds.
Prints the machine, how long it took and the run's warnings, which the README's
caption of the committed figure repeats.
"""

from __future__ import annotations

import argparse
import sys
import time

import pycipherbench as pcb
from pycipherbench import plot

TRANSFORMATIONS = ["AES/ECB/NoPadding", "AES/CBC/NoPadding", "AES/GCM/NoPadding",
                   "ChaCha20-Poly1305", "DESede/CBC/NoPadding", "TEA/ECB/NoPadding"]
PAYLOADS = [16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--out", default="docs/throughput.png")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    res = pcb.sweep("cipher", transformation=TRANSFORMATIONS, payload=PAYLOADS,
                    repeats=args.rounds, min_time=0.02)
    fig = plot.plot_throughput(res)
    fig.savefig(args.out, dpi=110)
    m = pcb.machine()
    print(f"{args.out}: {m.get('cpu_model', '?')}, {m.get('cores', '?')} cores, "
          f"{m.get('openssl_version', '?')}; {time.monotonic() - t0:.0f} s")
    for w in res.warnings:
        print("warning:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
