"""The reader of csrc/crypto/backends.def (the one declaration of the C backends) for the
tools that are not C: setup.py's discovery, .ci/run's install line, .ci/aarch64.sh's arm64
packages, bench/bench_backends.py's reference builds and the tests.

Standalone (the standard library only; not part of the installed package): setup.py and the
scripts load it by path. As a program it prints one field list for the shell scripts:

    python csrc/crypto/backends_def.py apt            # Debian packages of the probed backends
    python csrc/crypto/backends_def.py arm64 multiarch  # their arm64 packages got through apt
    python csrc/crypto/backends_def.py names          # every backend's name
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import NamedTuple

DEF = Path(__file__).with_name("backends.def")
FIELDS = ("id", "name", "label", "build", "pkgconfig", "libs", "apt", "arm64", "probe")


class Backend(NamedTuple):
    id: str
    name: str
    label: str
    build: str       # "required", "builtin", "probe" or "probe-c++"
    pkgconfig: str   # modules to try, space-separated
    libs: str        # -l libraries when pkg-config knows none
    apt: str
    arm64: str       # "multiarch", "unpack" or ""
    probe: str

    @property
    def define(self) -> str:
        return f"PCB_HAVE_{self.id}"

    @property
    def probed(self) -> bool:
        return self.build.startswith("probe")

    @property
    def cxx(self) -> bool:
        return self.build == "probe-c++"


def _rows(text: str) -> list[str]:
    """The argument text of every PCB_BACKEND(...) row (comments stripped first)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    rows, i = [], 0
    while (i := text.find("PCB_BACKEND(", i)) >= 0:
        depth, j, quoted = 0, i + len("PCB_BACKEND"), False
        while True:  # to the parenthesis that closes the row, strings skipped
            ch = text[j]
            if quoted:
                if ch == "\\":
                    j += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        rows.append(text[i + len("PCB_BACKEND("):j])
        i = j
    return rows


def table(path: Path = DEF) -> list[Backend]:
    """Every row of backends.def, in its order (the C enum's)."""
    out = []
    for row in _rows(path.read_text()):
        ident, rest = row.split(",", 1)
        values = ast.literal_eval(f"({rest.strip()},)")  # adjacent literals concatenate
        if len(values) != len(FIELDS) - 1 or not all(isinstance(v, str) for v in values):
            raise ValueError(f"{path}: row {ident.strip()} needs {len(FIELDS) - 1} strings")
        out.append(Backend(ident.strip(), *values))
    return out


def main(argv: list[str]) -> int:
    rows = table()
    if argv[:1] == ["apt"]:
        print(" ".join(b.apt for b in rows if b.probed and b.apt))
    elif argv[:1] == ["arm64"] and len(argv) == 2:
        print(" ".join(f"{b.apt}:arm64" for b in rows if b.arm64 == argv[1] and b.apt))
    elif argv[:1] == ["names"]:
        print(" ".join(b.name for b in rows))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
