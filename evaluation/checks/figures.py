"""Figures in free text: "$4.12 billion", "61.5%", "+0.6 percentage points", "4.3–4.45 billion".

A figure is parsed into amounts that survive the many ways one number is written: thousands
separators ("4,120"), magnitude words ("$8.2bn" = "$8.2 billion", "$4,120 million" =
"$4.12 billion"), trailing zeros ("4.30" = "4.3"), "%" vs "percent", "60 bps" vs
"0.6 percentage points", en dash vs hyphen in ranges. Values are Decimals, so equality is
exact: $4.1 billion is never "close enough" to $4.12 billion.

Deliberately *not* figures: quarter and half labels ("Q3", "H1"), ordinals ("3rd"), codes
("10-K", "COVID-19"), version numbers ("1.2.3"), list markers ("1. ") and bare one-digit
counts ("the 3 largest customers"), which answers rarely repeat as digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal

Kind = Literal["number", "percent", "points", "multiple", "date", "time"]

# A number, with thousands separators (comma, thin or no-break space) or without.
_NUMBER = r"[0-9]{1,3}(?:[,\u00a0\u202f\u2009][0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?"
# A number must not continue as digits or as a further decimal part ("1.2.3").
_NUMBER_END = r"(?![0-9]|\.[0-9])"
_CURRENCY = r"(?:US\$|[$€£¥]|USD|EUR|GBP|JPY)\s?"
_SCALE_WORDS = r"thousand|million|billion|trillion|bn|bln|mn|mln|mm|tn|trn"
_PERCENT = r"\s?%|\s?(?:per\s?cent|percent|pct)\b"
_POINTS = r"\s?(?:percentage[\s-]points?|basis[\s-]points?|pp|ppts?|pts|points?|bps?)\b"

_FIGURE = re.compile(
    rf"""
    (?=[0-9+\-\u2212$€£¥UEGJFC])          # cheap first test: most positions fail here
    (?<![\w.])(?<!\w-)                     # not inside a word, a number or "COVID-19"
    (?:
        (?P<date>[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})(?![0-9])
    |
        (?P<hour>[0-9]{{1,2}}):(?P<minute>[0-5][0-9])(?::[0-5][0-9])?(?![0-9]|:[0-9])
        (?:\s?(?P<ampm>[ap])(?:\.m\.|m\b))?  # "6:00 PM", "6:00 p.m."
    |
        (?P<sign>[+\-\u2212])?
        (?P<cur>{_CURRENCY})?
        (?P<sign2>[+\-\u2212])?
        (?P<fy>(?:FY|CY)\s?(?=[0-9]))?
        (?P<low>{_NUMBER}){_NUMBER_END}
        (?P<unit1>\s?%)?                   # "40%–50%"
        (?:
            (?P<dash>\s?[\u2013\u2014]\s?|-)  # spaces only around a real dash, not "5 - 3"
            (?P<cur2>{_CURRENCY})?
            (?:FY|CY)?
            (?P<high>{_NUMBER}){_NUMBER_END}
        )?
        (?P<scale>\s?(?:{_SCALE_WORDS})\b|[kmbt]\b)?  # single letters only when attached
        (?P<unit>{_PERCENT}|{_POINTS}|x\b)?
    )
    (?![^\W_]|-[^\W\d_])                   # not followed by a letter ("3rd") or "-K" ("10-K")
    """,
    re.VERBOSE | re.IGNORECASE,
)

_SEPARATORS = re.compile(r"[,\u00a0\u202f\u2009]")
_SCALES = {
    **dict.fromkeys(("thousand", "k"), 3),
    **dict.fromkeys(("million", "mn", "mln", "mm", "m"), 6),
    **dict.fromkeys(("billion", "bn", "bln", "b"), 9),
    **dict.fromkeys(("trillion", "tn", "trn", "t"), 12),
}
_CURRENCIES = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "€": "EUR",
    "eur": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "¥": "JPY",
    "jpy": "JPY",
}
_BASIS_POINTS = re.compile(r"basis|bps?$", re.IGNORECASE)
# What may precede a list marker on its line: indentation, a heading or quote marker.
_LINE_PREFIX = re.compile(r"[\s#>]*")
_MAX_MARKER_INDENT = 40


@dataclass(frozen=True)
class Amount:
    """One number with its meaning. A range has two (its low and high ends)."""

    kind: Kind
    mantissa: Decimal  # as written, unsigned, without magnitude: "4,120 million" -> 4120
    value: Decimal  # unsigned, with magnitude: 4120 million -> 4.12E+9; 60 bps -> 0.6 points
    scaled: bool  # a magnitude word was written ("million", "bn")
    sign: str = ""  # "+", "-" or "" when none was written
    currency: str = ""  # ISO code when a symbol or code was written

    def same_as(self, other: Amount) -> bool:
        """Whether two amounts name the same figure, as leniently as is still safe.

        A sign or currency that only one side writes is not a conflict ("rose 0.6 points"
        states "+0.6 points"). When only one side writes a magnitude, the numbers as written
        may match: a table headed "$ billion" holds "4.12" for "$4.12 billion".
        """
        if self.kind != other.kind:
            return False
        if self.sign and other.sign and (self.sign == "-") != (other.sign == "-"):
            return False
        if self.currency and other.currency and self.currency != other.currency:
            return False
        if self.value == other.value:
            return True
        return self.scaled != other.scaled and self.mantissa == other.mantissa


@dataclass(frozen=True)
class Figure:
    text: str  # as written
    amounts: tuple[Amount, ...]  # one; or two for a range, low then high

    @property
    def is_range(self) -> bool:
        return len(self.amounts) == 2

    @property
    def is_period(self) -> bool:
        """A year ("2028", "FY2026", "2023–2025"), a date or a time: when, not how much."""
        return all(_is_when(a) for a in self.amounts)


def _is_when(amount: Amount) -> bool:
    if amount.kind in ("date", "time"):
        return True
    return (
        amount.kind == "number"
        and not (amount.scaled or amount.sign or amount.currency)
        and amount.mantissa == amount.mantissa.to_integral_value()
        and 1900 <= amount.mantissa <= 2100
    )


def scan_figures(text: str) -> tuple[Figure, ...]:
    """Every figure named in a text, in order of appearance (repeats included)."""
    if not any(ch.isdigit() for ch in text):
        return ()  # many criteria have no digit at all: skip the regex
    return tuple(_figures(text))


# Cached for criteria, which a run checks against every answer. Answers go through
# scan_figures once per AnswerIndex instead: caching them here would keep thousands of long
# answers alive in a worker.
parse_figures = lru_cache(maxsize=4096)(scan_figures)


def figures_in(text: str) -> list[str]:
    """The figures named in a text, as written, without repeats, in order of appearance."""
    return list(dict.fromkeys(f.text for f in parse_figures(text)))


def _figures(text: str) -> Iterator[Figure]:
    for match in _FIGURE.finditer(text):
        if match.group("date"):
            day = Decimal(match.group("date").replace("-", ""))
            yield Figure(match.group(0), (Amount("date", day, day, False),))
        elif match.group("hour"):
            minutes = Decimal(_minutes(match))
            yield Figure(match.group(0), (Amount("time", minutes, minutes, False),))
        elif not _is_list_marker(text, match) and not _is_bare_digit(match):
            yield from _number_figures(match)


def _minutes(match: re.Match[str]) -> int:
    """Minutes after midnight: "6:00 PM" and "18:00" are the same time."""
    hour = int(match.group("hour")) % 24
    ampm = (match.group("ampm") or "").casefold()
    if ampm == "p" and hour < 12:
        hour += 12
    elif ampm == "a" and hour == 12:
        hour = 0
    return hour * 60 + int(match.group("minute"))


def _number_figures(match: re.Match[str]) -> Iterator[Figure]:
    unit = (match.group("unit") or match.group("unit1") or "").strip()
    kind = _kind(unit)
    scale_word = (match.group("scale") or "").strip().casefold()
    exponent = _SCALES.get(scale_word, 0) - (2 if _BASIS_POINTS.search(unit) else 0)
    sign = (match.group("sign") or match.group("sign2") or "").replace("\u2212", "-")
    currency = _currency(match.group("cur") or match.group("cur2") or "")

    def amount(number: str, *, year_prefix: bool = False) -> Amount:
        mantissa = Decimal(_SEPARATORS.sub("", number))
        if year_prefix and len(number) == 2:
            mantissa += 2000  # "FY26" is fiscal 2026
        value = mantissa.scaleb(exponent) if exponent else mantissa
        return Amount(kind, mantissa, value, bool(scale_word), sign, currency)

    low = amount(match.group("low"), year_prefix=bool(match.group("fy")))
    if not match.group("high"):
        yield Figure(match.group(0), (low,))
        return
    high = amount(_expand_year(match.group("low"), match.group("high")))
    if high.value > low.value:
        yield Figure(match.group(0), (low, high))
        return
    # "2026-10" or "5-3" is not a range: two figures, the first without the shared unit.
    first = match.group(0)[: match.start("dash") - match.start()]
    yield Figure(first, (amount(match.group("low")),))
    second = match.group(0)[match.start("high") - match.start() :]
    yield Figure(second, (amount(match.group("high")),))


def _kind(unit: str) -> Kind:
    unit = unit.casefold()
    if not unit:
        return "number"
    if unit == "x":
        return "multiple"
    # "percentage points" names points, not a percent, although it starts like one.
    if "%" in unit or unit == "pct" or (unit.endswith("cent") and "point" not in unit):
        return "percent"
    return "points"


def _currency(written: str) -> str:
    return _CURRENCIES.get(written.strip().casefold(), "")


def _expand_year(low: str, high: str) -> str:
    """ "2023-24" means 2023 to 2024."""
    if len(low) == 4 and len(high) == 2 and low[:2] in ("19", "20"):
        return low[:2] + high
    return high


def _is_list_marker(text: str, match: re.Match[str]) -> bool:
    """A "1." or "2)" that opens a line of a numbered list, not a figure of the text."""
    if match.group(0) != match.group("low") or not match.group("low").isdigit():
        return False
    after = text[match.end() : match.end() + 2]
    if not after or after[0] not in ".)" or not (len(after) == 1 or after[1].isspace()):
        return False
    # Look back a bounded distance: a long line of "10. 11. 12." must stay linear.
    window = max(0, match.start() - _MAX_MARKER_INDENT)
    newline = text.rfind("\n", window, match.start())
    if newline < 0 and window > 0:
        return False
    return _LINE_PREFIX.fullmatch(text, newline + 1, match.start()) is not None


def _is_bare_digit(match: re.Match[str]) -> bool:
    # "the 3 largest customers": a count, seldom repeated as a digit by an answer.
    return match.group(0) == match.group("low") and len(match.group("low")) == 1


class FigureIndex:
    """The amounts of one text, looked up by value: built once per answer."""

    __slots__ = ("_by_number",)

    def __init__(self, figures: Iterable[Figure]) -> None:
        self._by_number: dict[tuple[str, Decimal], list[Amount]] = {}
        for figure in figures:
            # A range's ends count on their own: "$4.3–4.45 billion" names $4.45 billion.
            for amount in figure.amounts:
                for number in {amount.value, amount.mantissa}:
                    self._by_number.setdefault((amount.kind, number), []).append(amount)

    def has_amount(self, wanted: Amount) -> bool:
        candidates = self._by_number.get((wanted.kind, wanted.value), [])
        if wanted.mantissa != wanted.value:
            candidates = candidates + self._by_number.get((wanted.kind, wanted.mantissa), [])
        return any(wanted.same_as(found) for found in candidates)

    def has_figure(self, wanted: Figure) -> bool:
        """A range is found when both its ends are, written as a range or apart."""
        return all(self.has_amount(amount) for amount in wanted.amounts)
