"""Points as parameter dicts: their identity, and their columns in a NumPy structured array.

A parameter that does not apply to a point is absent from its dict. As a
column it is filled with a sentinel that depends on the column's type: ``""``
for strings, ``-1`` for integers (every integer parameter is non-negative),
NaN for floats; a boolean column that has missing values becomes ``int8`` with
1/0 and -1 where it does not apply (one without missing values stays ``bool``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

MISSING_INT = -1
_MISSING = object()

#: One column of a structured array: name, NumPy dtype, values.
Column = tuple[str, Any, Sequence[Any]]


def point_key(params: dict[str, Any]) -> tuple[tuple[str, str, Any], ...]:
    """A hashable identity of a point: its parameters, order-free and type-aware (1 != True)."""
    return tuple(sorted((k, type(v).__name__, v) for k, v in params.items()))


def same_value(a: Any, b: Any) -> bool:
    """Equal values, with bools kept apart from ints (True is not the payload 1)."""
    return bool(a == b) and isinstance(a, bool) == isinstance(b, bool)


def param_names(points: Iterable[dict[str, Any]]) -> list[str]:
    """Every parameter name any point has, in order of first appearance."""
    names: dict[str, None] = {}
    for p in points:
        names.update(dict.fromkeys(p))
    return list(names)


def _param_dtype(values: list[Any]) -> tuple[Any, Any]:
    """(dtype, fill value for missing) of one parameter column; see the module docstring."""
    present = [v for v in values if v is not _MISSING]
    missing = len(present) < len(values)
    if present and all(isinstance(v, (bool, np.bool_)) for v in present):
        return (np.int8, MISSING_INT) if missing else (np.bool_, False)
    if present and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in present):
        return np.int64, MISSING_INT
    if present and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool) for v in present):
        return np.float64, math.nan
    width = max([len(str(v)) for v in present] + [1])
    return f"U{width}", ""


def param_columns(points: Sequence[dict[str, Any]]) -> list[Column]:
    """One column per parameter (:func:`param_names` order), missing values filled."""
    columns: list[Column] = []
    for name in param_names(points):
        dtype, fill = _param_dtype([p.get(name, _MISSING) for p in points])
        columns.append((name, dtype, [p.get(name, fill) for p in points]))
    return columns


def structured_array(columns: Sequence[Column], n_rows: int) -> np.ndarray:
    """A structured array with these columns, in order."""
    arr = np.zeros(n_rows, dtype=[(name, dtype) for name, dtype, _ in columns])
    for name, _, values in columns:
        arr[name] = values
    return arr


# Options that shape how a point is timed, not what it measures.
RUN_OPTIONS: dict[str, tuple[str, ...]] = {
    "cipher": ("min_time", "repeats", "warmup"),
    "store": ("min_time", "repeats", "warmup", "stages", "directory"),
}
#: Every run setting of either target (never a label of a plotted point).
RUN_SETTINGS = frozenset(name for names in RUN_OPTIONS.values() for name in names)
