"""S3 Vectors metadata filter evaluation, as documented for QueryVectors.

Operators: $eq (also implicit `{"key": value}`), $ne, $gt, $gte, $lt, $lte (numbers), $in, $nin (non-empty
arrays), $exists (boolean), $and, $or (non-empty arrays of filters). A list-valued metadata field matches
$eq/$in when ANY element matches. Non-filterable keys cannot be filtered on (ValidationException).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
OPERATORS = frozenset({"$eq", "$ne", "$in", "$nin", "$exists", *_COMPARE})


class FilterError(ValueError):
    """An invalid filter (the fake turns it into a ValidationException)."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _scalar(value: Any) -> bool:
    return isinstance(value, str | bool) or _is_number(value)


def _equal(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b  # True is not 1, "1" is not 1


def _values(field_value: Any) -> list[Any]:
    return list(field_value) if isinstance(field_value, list) else [field_value]


def _apply(op: str, operand: Any, present: bool, field_value: Any) -> bool:
    if op == "$exists":
        if not isinstance(operand, bool):
            raise FilterError("$exists takes a boolean")
        return present is operand
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand or not all(_scalar(v) for v in operand):
            raise FilterError(f"{op} takes a non-empty array of strings, numbers or booleans")
        hit = present and any(_equal(v, o) for v in _values(field_value) for o in operand)
        return hit if op == "$in" else not hit
    if op in ("$eq", "$ne"):
        if not _scalar(operand):
            raise FilterError(f"{op} takes a string, number or boolean")
        hit = present and any(_equal(v, operand) for v in _values(field_value))
        return hit if op == "$eq" else not hit
    if op in _COMPARE:
        if not _is_number(operand):
            raise FilterError(f"{op} takes a number")
        return present and any(_is_number(v) and _COMPARE[op](v, operand) for v in _values(field_value))
    raise FilterError(f"unknown operator {op}")


def matches(flt: Any, metadata: dict[str, Any], non_filterable: Collection[str]) -> bool:
    """True when `metadata` satisfies `flt`; raises FilterError on an invalid filter."""
    if not isinstance(flt, dict) or not flt:
        raise FilterError("a filter is a non-empty object")
    result = True
    for key, value in flt.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise FilterError(f"{key} takes a non-empty array of filters")
            parts = [matches(sub, metadata, non_filterable) for sub in value]  # evaluate all: validate all
            ok = all(parts) if key == "$and" else any(parts)
        elif key.startswith("$"):
            raise FilterError(f"unknown logical operator {key}")
        else:
            if key in non_filterable:
                raise FilterError(f"metadata key {key!r} is non-filterable and cannot be used in a filter")
            present = key in metadata
            field_value = metadata.get(key)
            if isinstance(value, dict):
                if not value or not set(value) <= OPERATORS:
                    raise FilterError(f"invalid operators for {key!r}: {sorted(value)}")
                ok = all(_apply(op, operand, present, field_value) for op, operand in value.items())
            else:
                ok = _apply("$eq", value, present, field_value)
        result = result and ok
    return result
