"""Numbers, times and cells formatted for people: thousands separators, percentages for rates,
a few significant digits for small values, and time labels whose precision follows the span shown."""

from __future__ import annotations

import math
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

from pipelines.dashboard.lvdash import NumberFormat

MISSING = "—"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def format_number(value: Any, fmt: NumberFormat | None = None) -> str:
    """A number as a dashboard shows it: `12,345`, `3.14`, `0.0123`, `89.4%`, `1.2M` (compact).

    Decimal places follow the format: "exact" keeps them, "max" (and no format) drops trailing zeros.
    """
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return MISSING
    v = float(value)
    kind = fmt.kind if fmt else "number"
    places = fmt.decimal_places if fmt else None
    exact = bool(fmt and fmt.exact)
    if kind == "number-percent":
        pct = v * 100
        if places is None:
            places = 1 if abs(pct) >= 1 or pct == 0 else 2
        return _fixed(pct, places, exact, separators=True) + "%"
    if fmt and fmt.compact and abs(v) >= 1000:
        return _compact(v, places, exact)
    prefix = f"{fmt.currency} " if kind == "number-currency" and fmt and fmt.currency else ""
    if places is not None:
        return prefix + _fixed(v, places, exact, separators=kind != "number-plain")
    if v == int(v) and abs(v) < 1e15:
        return prefix + (f"{int(v):,}" if kind != "number-plain" else str(int(v)))
    if abs(v) >= 1000:
        return prefix + f"{v:,.0f}"
    if abs(v) >= 100:
        return prefix + _fixed(v, 1, False, True)
    if abs(v) >= 1:
        return prefix + _fixed(v, 2, False, True)
    return prefix + f"{v:.3g}"


def _fixed(v: float, places: int, exact: bool, separators: bool) -> str:
    text = f"{v:,.{places}f}" if separators else f"{v:.{places}f}"
    if not exact and "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _compact(v: float, places: int | None, exact: bool) -> str:
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= size:
            scaled = v / size
            digits = places if places is not None else (0 if abs(scaled) >= 100 else 1)
            return _fixed(scaled, digits, exact and places is not None, separators=False) + suffix
    return _fixed(v, places or 0, exact, separators=False)


def is_midnight(value: Any) -> bool:
    """A date, or a timestamp at 00:00:00 (what DATE_TRUNC("DAY", ...) returns)."""
    if isinstance(value, datetime):
        return value.hour == value.minute == value.second == value.microsecond == 0
    return isinstance(value, date)


def to_epoch(value: Any) -> float:
    """Seconds since the epoch for a date or (naive = as shown) datetime; charts place time on a line."""
    if isinstance(value, datetime):
        return (value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value).timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=timezone.utc).timestamp()
    raise TypeError(f"not a date or time: {value!r}")


def is_temporal(value: Any) -> bool:
    return isinstance(value, (date, datetime))


def time_label_format(span_seconds: float, step_seconds: float, all_dates: bool) -> str:
    """strftime pattern for time labels: days when the data are dates, seconds only when needed."""
    if all_dates or step_seconds >= 86400:
        return "%Y-%m-%d" if span_seconds >= 180 * 86400 else "%b %d"
    if step_seconds < 60:
        return "%H:%M:%S"
    return "%b %d %H:%M" if span_seconds >= 86400 else "%H:%M"


def format_time(value: Any, pattern: str | None = None) -> str:
    if value is None:
        return MISSING
    if isinstance(value, datetime):
        if pattern is None and is_midnight(value):
            pattern = "%Y-%m-%d"
        return value.strftime(pattern or "%Y-%m-%d %H:%M:%S")
    if isinstance(value, date):
        return value.strftime(pattern if pattern and "%H" not in pattern else "%Y-%m-%d")
    return str(value)


def format_value(value: Any, fmt: NumberFormat | None = None) -> str:
    """Any cell value: numbers and times as above, lists joined, booleans as yes/no."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_number(value):
        return format_number(value, fmt)
    if is_temporal(value):
        return format_time(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {format_value(v)}" for k, v in value.items())
    return str(value)


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
