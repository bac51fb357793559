"""Text helpers for the guideline rules: sentence splitting, words, normalisation, similarity.

Everything here is a pure function of its string arguments, so the expensive ones are cached:
live feedback revalidates the same criteria on every keystroke, and a cache hit is a dict
lookup. Nothing here knows about rules or configs.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache


def words(text: str) -> frozenset[str]:
    """A word list written as one whitespace-separated string (easier to read and diff)."""
    return frozenset(text.split())


# Spans whose inner punctuation must never end a sentence: URLs, maths, code and quotations.
# Each is masked (its characters replaced) before sentence boundaries are looked for. E-mail
# addresses and domain names need no masking: their dots are never followed by a space.
_URL = r"(?:https?://|www\.)\S+?(?=[.,;:!?)\]]*(?:\s|$))"
_DISPLAY_MATHS = (
    r"\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)|\\begin\{(?P<env>\w+\*?)\}.*?\\end\{(?P=env)\}"
)
# Inline $...$ only counts as maths when it holds TeX syntax, because "$4.1 billion and $3.9
# billion" is two dollar amounts, not a formula.
_INLINE_MATHS = r"\$(?=[^$\s])[^$\n]*?[\\^_{}=][^$\n]*?\$"
_CODE = r"`[^`\n]+`"
_DOUBLE_QUOTED = r"\"[^\"\n]{1,400}\"|“[^”\n]{1,400}”|«[^»\n]{1,400}»"
# A straight single quote opens a quotation only after a non-word character, so the
# apostrophes in "the company's" or "investors' views" are left alone.
_SINGLE_QUOTED = r"(?<![\w'])'(?=\S)[^'\n]{1,400}?(?<=\S)'(?![\w])|\u2018[^\u2019\n]{1,400}\u2019"
_PROTECTED = re.compile(
    # The lookahead lets the engine skip, with one test, every position where no span starts.
    "(?=[hw$\\\\`\"“«'\u2018])(?:"
    + "|".join((_URL, _DISPLAY_MATHS, _INLINE_MATHS, _CODE, _DOUBLE_QUOTED, _SINGLE_QUOTED))
    + ")",
    re.DOTALL,
)

# A candidate boundary: terminal punctuation, optional closing quotes or brackets, whitespace.
_BOUNDARY = re.compile(r"(?P<punct>[.!?]+|…)(?P<close>[\"'”\u2019)\]]*)(?P<space>\s+)")
# The next sentence must start like a sentence: optional opening quote or bracket, then an
# upper-case letter. A lower-case start ("approx. five", "? (e.g. …)") continues the sentence,
# and so does a digit, because "in Q3. 2025" or "approx. 5%" are far more common in criteria
# than a second sentence opening with a figure.
_SENTENCE_START = re.compile(r"[\"'“\u2018(\[]*[A-ZÀ-Ý]")
_WORD_BEFORE = re.compile(r"(\S+)$")

# Abbreviations that end with a period but rarely end a sentence. Lower case, without the
# final period; dotted ones ("u.s", "e.g") are matched as written.
ABBREVIATIONS = words(
    """
    e.g eg i.e ie vs cf etc al approx est ca viz incl excl esp
    inc co corp ltd llc plc bros dept govt intl mgmt assn
    no nos st mt ave rd mr mrs ms dr prof sr jr
    jan feb mar apr jun jul aug sep sept oct nov dec
    fig figs eq eqs ref refs vol vols pp ch sec eds cit ibid
    u.s u.k u.n e.u u.s.a a.m p.m ph.d m.b.a n.a
    bn mn mln yr yrs qtr avg
    """
)

_DOTTED = re.compile(r"^(?:[A-Za-z]\.)+[A-Za-z]$")  # "J.P", "U.S" (final period stripped)
_LETTER = re.compile(r"^[A-Z]$")
_NEXT_INITIAL = re.compile(r"[A-Z]\.")


def _is_initial(masked: str, sentence_start: int, token_start: int, after: int) -> bool:
    """Whether a single capital letter before a period is an initial ("J. P. Morgan").

    "States X. Mentions Y." is two sentences, so a lone letter only counts as an initial
    next to another initial or after a capitalised word that does not start the sentence
    ("John F. Kennedy"); "Plan B. Mentions …" is the price of that.
    """
    if _NEXT_INITIAL.match(masked, after):
        return True
    previous = masked[sentence_start:token_start].split()
    if not previous:
        return False
    word = previous[-1]
    if len(word) == 2 and word[0].isupper() and word[1] == ".":
        return True
    return len(previous) > 1 and word[:1].isupper()


# Characters without which no protected span can start: most criteria skip the big regex.
_PROTECTED_TRIGGER = re.compile(r"[\"“«'\u2018$`\\]|https?:|www\.")


@lru_cache(maxsize=8192)
def _protected_spans(text: str) -> tuple[tuple[int, int], ...]:
    if not _PROTECTED_TRIGGER.search(text):
        return ()
    return tuple(m.span() for m in _PROTECTED.finditer(text))


def _masked(text: str, *, keep_final_punctuation: bool) -> str:
    """Replace protected spans by same-length filler.

    With `keep_final_punctuation`, a quotation keeps its own final ".", "!" or "?": that lets
    'Classifies it as "Unknown." Mentions…' split after the quote (American style puts the
    period inside), while an ellipsis or a full stop inside the quotation stays hidden.
    """
    spans = _protected_spans(text)
    if not spans:
        return text
    parts: list[str] = []
    position = 0
    for start, end in spans:
        span = text[start:end]
        parts.append(text[position:start])
        if (
            keep_final_punctuation
            and span[0] in "\"“«'\u2018"
            and len(span) >= 3
            and span[-2] in ".!?"
            and span[-3] not in ".…"
        ):
            parts.append(span[0] + "x" * (len(span) - 3) + span[-2:])
        else:
            parts.append("x" * len(span))
        position = end
    parts.append(text[position:])
    return "".join(parts)


def _is_boundary(masked: str, match: re.Match[str], sentence_start: int) -> bool:
    """Whether a candidate boundary really ends a sentence."""
    punct = match.group("punct")
    if punct == "…" or "..." in punct:
        return False  # an ellipsis trails off; it does not end a sentence here
    if not _SENTENCE_START.match(masked, match.end()):
        return False
    if not punct.startswith("."):
        return True
    word = _WORD_BEFORE.search(masked, sentence_start, match.start())
    if not word:
        return True
    token = word.group(1).lstrip("\"'“\u2018([")
    if token.lower() in ABBREVIATIONS or _DOTTED.match(token):
        return False
    token_start = word.end(1) - len(token)
    return not (
        _LETTER.match(token) and _is_initial(masked, sentence_start, token_start, match.end())
    )


@lru_cache(maxsize=8192)
def split_sentences(text: str) -> tuple[str, ...]:
    """Split a criterion into sentences; fragments without a letter are dropped.

    Conservative on purpose: it only splits at ".", "!" or "?" followed by whitespace and an
    upper-case letter, never inside URLs, maths, code or quotations, never after a
    known abbreviation or an initial, never at an ellipsis. Line breaks are treated as spaces.
    """
    masked = _masked(text, keep_final_punctuation=True)
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(masked):
        if _is_boundary(masked, match, start):
            end = match.start("space")
            sentences.append(text[start:end].strip())
            start = match.end()
    sentences.append(text[start:].strip())
    # "1. States revenue." has a numbering fragment "1."; it is not a sentence of its own.
    return tuple(s for s in sentences if _has_word(s))


def _has_word(fragment: str) -> bool:
    return any(ch.isalpha() for ch in fragment)


@lru_cache(maxsize=8192)
def mask_protected(text: str) -> str:
    """The text with URLs, maths, code and quotations replaced by filler of the same length.

    Rules that look for punctuation or keywords (semicolons, "and") use this so that a quoted
    example or a formula cannot trigger them.
    """
    return _masked(text, keep_final_punctuation=False)


_LEADING_JUNK = re.compile(r"^[^\w]+|[^\w]+$")


def first_word(text: str) -> str:
    """The first word, stripped of surrounding punctuation and list markers ("- ", "1. ").

    Returns "" for text without any word.
    """
    for token in text.split():
        word = _LEADING_JUNK.sub("", token)
        if word and not word.isdigit():
            return word
    return ""


# Word tokens for normalisation and similarity. A figure keeps its sign, currency, decimals
# and percent sign so that "$4.12" and "$41.2", or "+0.6" and "-0.6", stay different tokens.
_TOKEN = re.compile(
    r"(?:(?<!\w)[+\-\u2212])?[$€£¥]?\d+(?:[.,]\d+)*%?"  # figures
    r"|[^\W_]+(?:['\u2019][^\W_]+)*"  # words, keeping internal apostrophes ("company's")
)
_QUOTES = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "“": '"', "”": '"', "\u2212": "-", "–": "-", "—": "-"}
)


@lru_cache(maxsize=8192)
def tokens(text: str) -> tuple[str, ...]:
    """Lower-cased word and figure tokens, punctuation dropped."""
    if not text.isascii():
        text = text.translate(_QUOTES)
    return tuple(_TOKEN.findall(text.casefold()))


@lru_cache(maxsize=8192)
def normalise(text: str) -> str:
    """Text compared for exact duplicates: case, whitespace and punctuation ignored.

    Figures keep their decimal point, sign and currency, so "Q3 revenue of $4.12 billion"
    and "Q4 revenue of $4.30 billion" never normalise to the same string.
    """
    return " ".join(tokens(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets (1.0 for two empty sets)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


_LETTER_ANYWHERE = re.compile(r"[^\W\d_]")
_NAME = re.compile(r"(?<![\w'\u2019])[A-Z][\w'\u2019&-]*")
# Words that change what a criterion asks for as much as a figure does: "first-order" vs
# "second-order", "renewable" vs "non-renewable", "mentions" vs "does not mention".
_NUMBER_WORDS = words(
    """
    zero one two three four five six seven eight nine ten eleven twelve twenty hundred
    first second third fourth fifth sixth seventh eighth ninth tenth
    """
)
_NEGATIONS = words("not no non never without nor none neither")


@lru_cache(maxsize=8192)
def content_markers(text: str) -> frozenset[str]:
    """What carries a criterion's specific content, beyond its wording.

    Figures (tokens with a digit: "$4.12", "fy2025", "q3"), number words and ordinals,
    negations, names (capitalised words that do not start the text: "Meridian", "Apex") and
    the exact content of quotations, formulas and code. Two criteria whose markers differ are
    about different things however similar their wording.
    """
    words = tokens(text)
    # A token that is not all letters (apostrophes aside) has a digit: "$4.12", "fy2025".
    # Counted, so that "2 * 3 * 3" and "2 * 3" (or "$4.1bn and $4.1bn") differ.
    figures = Counter(t for t in words if not t.replace("'", "").isalpha())
    markers = {f"{figure}*{count}" for figure, count in figures.items()}
    markers |= {t for t in words if t in _NUMBER_WORDS or t in _NEGATIONS}
    # The first word is capitalised because it starts the sentence, not because it is a name.
    first_letter = _LETTER_ANYWHERE.search(text)
    first = first_letter.start() if first_letter else 0
    markers |= {
        t for m in _NAME.finditer(text) if m.start() > first for t in tokens(m.group(0))[:1]
    }
    markers |= {"“" + normalise(text[a:b]) + "”" for a, b in _protected_spans(text)}
    return frozenset(markers)
