"""Content words for the keyword check: tokens, stop words, and a light stem folding.

The folding is not linguistics: it only has to map the forms an answer and a criterion use
for the same word onto one key ("margins"/"margin", "explained"/"explains",
"companies"/"company", "analyse"/"analyze", "centre"/"center"), and to do so the same way
on both sides.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from annotation.validation.presets import FINANCE_ACTION_VERBS


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Function words, plus the boilerplate of criteria ("the response", "explicitly") that says
# nothing about what an answer must contain.
STOP_WORDS = _words(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    either etc few for from further had has have having he her here hers him his how i if in
    into is it its itself just least less may me might more most must my neither no nor not
    of off on once only or other others our out over own per same she should so some such
    than that the their theirs them then there these they this those through thus to too
    under until up upon us very via was we were what when where whether which while who whom
    why will with within without would yet you your
    answer response criterion explicitly clearly correctly accurately specifically
    """
)

# Verbs that open a criterion ("States …", "Presents …"): the house guideline's list and a
# few generic ones. The verb says how to say it, not what to say, so it is not looked for.
ACTION_VERBS = FINANCE_ACTION_VERBS | _words("contains discusses offers puts writes")

_AUXILIARIES = frozenset({"does", "do", "did"})

_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
_FISCAL_YEAR = re.compile(r"[fc]y[0-9]{2,4}")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\(?[0-9]{1,3}[.)])\s+")
# British -ise/-yse spellings onto -ize/-yze, only after a stem of 4+ letters so that the
# inflections of "raise" or "rise" are left alone.
_ISE = re.compile(r"(?<=[a-z]{4})(is|ys)(e|ed|es|ing|ation|ations)$")
_RE_END = re.compile(r"(?<=[^aeiou])re$")  # "centre" -> "center", "fibre" -> "fiber"
_DOUBLE_END = re.compile(r"([b-df-hj-kmnp-rtv-z])\1$")  # "dropp" -> "drop", not "fall"


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens, accents removed, hyphenated words split."""
    return _TOKEN.findall(_plain(text).casefold())


def _plain(text: str) -> str:
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=65536)
def fold(word: str) -> str:
    """A key shared by the inflections of a word: "explains", "explained" -> "explain"."""
    word = _POSSESSIVE.sub("", word.casefold())
    if len(word) <= 3 or not word.isalpha():
        return word
    word = _ISE.sub(lambda m: ("iz" if m.group(1) == "is" else "yz") + m.group(2), word)
    word = _plural(word)
    word = _inflection(word)
    word = _RE_END.sub("er", word)
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # "state"/"stated", "raise"/"raised" meet at "stat", "rais"
    return _DOUBLE_END.sub(r"\1", word)  # "programme" -> "programm" -> "program"


def _plural(word: str) -> str:
    if word.endswith(("ies", "ied")) and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _inflection(word: str) -> str:
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(criterion: str) -> list[tuple[str, str]]:
    """The words of a criterion an answer should contain: (word as written, folded key).

    Drops a list marker, the leading action verb, stop words, numbers and one-letter tokens;
    one entry per key.
    """
    words = tokens(_LIST_MARKER.sub("", criterion, count=1))
    if words and words[0] in ACTION_VERBS:
        words = words[1:]
    question = bool(words) and words[0] in _AUXILIARIES
    words = [w for w in words if w not in STOP_WORDS and _is_content(w)]
    if question and words and _is_base_verb(words[0]):
        words = words[1:]  # "Does the response explain X?" asks for X, like "Explains X."
    by_key: dict[str, str] = {}
    for word in words:
        by_key.setdefault(fold(word), _POSSESSIVE.sub("", word))
    return [(word, key) for key, word in by_key.items()]


def _is_base_verb(word: str) -> bool:
    return f"{word}s" in ACTION_VERBS or f"{word}es" in ACTION_VERBS


def _is_content(word: str) -> bool:
    # "fy2026" is a figure, checked as one; "q3" stays a word ("Q3" vs "Q4" matters).
    return len(word) > 1 and not word.isdigit() and not _FISCAL_YEAR.fullmatch(word)


def word_keys(text: str) -> frozenset[str]:
    """The folded keys of every word of a text: an answer's vocabulary, built once."""
    return frozenset(fold(w) for w in set(tokens(text)))
