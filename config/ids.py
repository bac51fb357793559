"""Ids from text: ASCII digits only, within a database integer.

`str.isdigit()` accepts "²" and "٣", which `int()` then refuses or turns into a number no
one typed; an id longer than 18 digits overflows a 64-bit column. Every id read from a query
string, a form or an imported file goes through here, so that such input is a 400 or 404
with a message, never a 500.
"""

from __future__ import annotations

MAX_DIGITS = 18  # below 2**63: any id fits a bigint column
MAX_ID = 2**63 - 1  # the largest bigint: `max_value` of an API's id fields (a 400 above)


def is_id(value: object) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_DIGITS
        and value.isascii()
        and value.isdigit()
    )


def parse_id(value: object) -> int | None:
    """The id the text spells, or None when it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < 2**63 else None
    return int(value) if is_id(value) else None
