"""Vague wording and missing anchors: what the `vague-wording` and `fact-anchor` rules see.

Plain functions, no Django. A grader who sees only the criterion and an answer must be able to
say yes or no; "Provides a good and comprehensive overview of the relevant information" leaves
every word of that judgement to the grader. Two checks:

- `vague_terms`: evaluatives ("good", "comprehensive", "appropriate") and quantifiers
  ("some", "various", "etc.") that leave the bar undefined. Quoted text is not read, so a
  criterion may quote a vague phrase it expects in the answer.
- `has_anchor`: a fact criterion must name something a grader can check against: a figure,
  a date or period, a named entity or a quoted term.

Both were tuned on the BiGGen-Bench atomic checklists and the K-QA statements (counts and
judged samples in docs/guidelines.md; tests/domain/test_vagueness_corpus.py recomputes them).

An author who means a flagged word precisely overrides the rule with a line in the criterion's
notes, `override vague-wording: <why>` (or `override fact-anchor: <why>`), giving a reason
of at least `MIN_JUSTIFICATION_WORDS` words. The override is recorded in the notes, so
reviewers read it beside the criterion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from annotation.validation import text as tx

MIN_JUSTIFICATION_WORDS = 3
OVERRIDABLE = ("vague-wording", "fact-anchor")  # the only rules a note may override

# Evaluatives: they grade without saying against what. Adverbs count too ("adequately
# explains"). Deliberately absent: "clear(ly)", "accurate(ly)", "correct(ly)", "key",
# "main", "important", "detailed", "specific" and "significant": in the corpora they mostly
# qualify a named thing ("the key risk factors of Apple", "statistically significant") and
# flagging them raised the false alarms above one in four (docs/guidelines.md).
_EVALUATIVES = (
    "good|great|nice|excellent|proper|properly|appropriate|appropriately"
    "|adequate|adequately|sufficient|sufficiently|reasonable|reasonably|satisfactory"
    "|satisfactorily|suitable|suitably|comprehensive|comprehensively|thorough|thoroughly"
    "|relevant|meaningful|meaningfully|insightful|well-rounded|in-depth|robust|solid"
)
# Quantifiers that leave "how many" open. "Some" and "certain" only count before a noun of
# content ("some details", "certain aspects"): "some patients" in a medical fact is the fact.
_CONTENT_NOUNS = (
    r"(?:details?|information|aspects?|points?|examples?|facts?|figures?|data|context"
    r"|background|factors?|elements?|items?|ways?|things?|insights?|discussion|analysis"
    r"|explanation|mention|reference|description|overview|numbers?|metrics?|sources?"
    r"|evidence|reasons?|issues?|considerations?|steps?|kind|sort|extent|degree)\b"
)
# Open-ended lists: they leave the list to the grader whatever the framing.
_OPEN_LIST = (
    r"etc\.?|et\s+cetera|and\s+so\s+(?:on|forth)|and\s+the\s+like"
    r"|and\s+more(?=\s*[.,;:?!)]|\s*$)"  # "… and more." but not "and more severe"
)
_QUANTIFIERS = (
    r"as\s+(?:needed|necessary|appropriate|applicable|relevant|required)"
    r"|if\s+(?:needed|necessary|appropriate|applicable|relevant|required)"
    r"|where\s+(?:needed|necessary|appropriate|applicable|relevant|possible)"
    r"|when\s+(?:needed|necessary|appropriate|applicable|relevant)"
    r"|to\s+some\s+extent|in\s+some\s+way|a\s+lot\s+of|lots\s+of|a\s+number\s+of"
    r"|various|several|numerous|(?:some|certain|any|many|a\s+few|few)\s+" + _CONTENT_NOUNS
)
_OPEN_LIST_RE = re.compile(rf"(?<![\w-])(?:{_OPEN_LIST})", re.IGNORECASE)
_JUDGEMENT_RE = re.compile(
    rf"(?<![\w-])(?:(?:{_EVALUATIVES})(?![\w-])|(?:{_QUANTIFIERS}))", re.IGNORECASE
)
# Fixed phrases that are not judgements at all.
_NOT_VAGUE = re.compile(
    r"\bgood\s+(?:faith|will)\b|\b(?:greater|common)\s+good\b"
    r"|\bproper\s+nouns?\b|\bsolid\s+(?:state|tumou?rs?|foods?)\b"
    r"|\bnecessary\s+(?:and|or)\s+sufficient\b|\bas\s+(?:required|needed|specified)\s+by\b"
    # "relevant to AI", "appropriate for children under 12": the phrase names its yardstick;
    # "relevant to the user" or "to the context" does not.
    r"|\b(?:relevant|appropriate|suitable)\s+(?:to|for)\s+(?!the\s+(?:user|reader|question"
    r"|task|context|audience|situation)\b)\w",
    re.IGNORECASE,
)
# A quantifier whose items follow ("various factors such as GERD, infections …") is anchored.
_EXAMPLES_FOLLOW = re.compile(r"[^.;?]*?(?:such\s+as|including|e\.g\.|for\s+example|like\s|:|\()")
# How a requirement on the answer is framed: a question ("Does the response …?", "Is the
# plan …?") or a sentence about the answer. A plain statement of fact ("Metformin is a good
# first-line drug", K-QA's style) describes the world: its "good" is the fact to find, not
# a bar left to the grader, so only open lists count there.
_QUESTION_START = tx.words("does do did is are was were has have had can could will would should")
_ABOUT_THE_ANSWER = re.compile(
    r"\b(?:the|this|that|its|their)\s+(?:response|answer|reply|model|output|assistant|essay"
    r"|explanation|summary|report|feedback|critique|solution|text|story|plan|analysis)\b",
    re.IGNORECASE,
)


# Where a vague word does not set the bar (tuned on BiGGen, docs/guidelines.md):
# - it describes someone's work by name ("Model A's in-depth focus", "Apple's comprehensive
#   guidance"): the criterion asks about that description, not for a quality;
# - it sits in a purpose clause ("…, ensuring a comprehensive coverage"): the requirement
#   before it is the check, the clause its reason;
# - the criterion names the yardstick ("a comprehensive analysis as stipulated by the rubric").
_NAMED_WORK = re.compile(
    r"(?:[A-Z][\w-]*(?:\s+[A-Z0-9][\w-]*)?['\u2019]s|\b(?:its|their|his|her))"
    r"(?:\s+[\w-]+,?){0,3}\s*$"
)
# - the words right after it define it ("comprehensive, considering both the validity and
#   the truth of the premises"), or an adverb's clause gives the figures ("properly sets the
#   limits from 0 to 5").
_DEFINED_AFTER = re.compile(
    r"\s*[,:(]?\s*(?:considering|covering|including|i\.e\.|namely|that\s+is)\b", re.IGNORECASE
)
_FIGURE_IN_CLAUSE = re.compile(r"[^.;?,]*\d")
_PURPOSE = re.compile(
    r"(?:\bto\s+(?:ensure|offer|provide|give|allow|enable|reflect|support)|\bensuring"
    r"|\bso\s+that|\bin\s+order\s+to|\bfor\s+an?\s+more)\b[^.;?]*$",
    re.IGNORECASE,
)
# - it is part of what is said ("States that the guidance is comprehensive", "notes that the
#   response lacks a thorough analysis"): the words are the content to find in the answer;
# - it compares ("its more comprehensive response"): a relative claim about named work.
_REPORTED = re.compile(
    r"(?:\b(?:states?|notes?|says?|mentions?|indicates?|indication|explains?|acknowledges?"
    r"|recogni[sz]es?|argues?|claims?|concludes?|suggests?)\b(?:\s+[\w'\u2019-]+){0,3}?\s+that"
    r"|\b(?:lacks?|lacking|without|omission|absence|lack))\b[^.;?]*$",
    re.IGNORECASE,
)
_COMPARATIVE = re.compile(
    r"\b(?:more|less|most|least)\s+(?:[\w-]+,?\s+(?:(?:and|or)\s+)?){0,3}$", re.IGNORECASE
)
# A statement of fact has a finite verb; a short fragment ("Good answer.") is a requirement.
_FINITE_VERB = re.compile(
    r"\b(?:is|are|was|were|be|been|can|could|may|might|should|must|will|would|has|have|had"
    r"|include|includes|consists?|causes?|helps?|reduces?|affects?|increases?|requires?"
    r"|leads?|occurs?|presents?|involves?)\b",
    re.IGNORECASE,
)
_YARDSTICK = re.compile(
    r"[^.;?]*?\b(?:as\s+(?:stipulated|defined|specified|described|set\s+out|required)\s+"
    r"(?:by|in)|according\s+to\s+the|per\s+the)\b",
    re.IGNORECASE,
)


def _inside_brackets(masked: str, start: int) -> bool:
    """Inside an example in brackets ("(like secure data recording in various industries)")."""
    return masked.rfind("(", 0, start) > masked.rfind(")", 0, start)


def _sets_no_bar(masked: str, match: re.Match[str]) -> bool:
    before = masked[: match.start()]
    return bool(
        _NAMED_WORK.search(before)
        or _PURPOSE.search(before)
        or _REPORTED.search(before)
        or _COMPARATIVE.search(before)
        or _inside_brackets(masked, match.start())
        or _YARDSTICK.match(masked, match.end())
        or _DEFINED_AFTER.match(masked, match.end())
        or (
            match.group(0).casefold().endswith("ly")
            and _FIGURE_IN_CLAUSE.match(masked, match.end())
        )
    )


def _is_requirement(masked: str, verbs: frozenset[str]) -> bool:
    words = masked.split()
    first = tx.first_word(masked).casefold()
    if first.endswith("ly") and len(words) > 1:
        first = tx.first_word(words[1]).casefold()  # "Adequately explains …"
    if first in verbs or first + "s" in verbs or first + "es" in verbs:
        return True  # "States …", or the imperative "Provide …"
    if first.endswith("y") and first[:-1] + "ies" in verbs:
        return True  # "Identify …"
    return (
        first in _QUESTION_START
        or bool(_ABOUT_THE_ANSWER.search(masked))
        or (len(masked.split()) <= 6 and not _FINITE_VERB.search(masked))
    )


def _is_name_part(masked: str, start: int) -> bool:
    """A capitalised word after the first one is part of a name ("Comprehensive Metabolic
    Panel", "Great Lakes"), not a judgement."""
    return masked[start].isupper() and bool(masked[:start].strip())


@lru_cache(maxsize=8192)
def vague_terms(text: str, verbs: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The vague words and phrases of a criterion, in order, quoted text left out.

    Evaluatives and quantifiers count in a requirement on the answer (see `_is_requirement`;
    `verbs` are the guideline's action verbs); open lists ("etc.") count everywhere."""
    masked = tx.mask_protected(text)
    excluded = [m.span() for m in _NOT_VAGUE.finditer(masked)]
    matches = list(_OPEN_LIST_RE.finditer(masked))
    if _is_requirement(masked, verbs):
        matches += [
            m
            for m in _JUDGEMENT_RE.finditer(masked)
            if not _is_name_part(masked, m.start())
            and not (_is_quantifier(m.group(0)) and _EXAMPLES_FOLLOW.match(masked, m.end()))
            and not _sets_no_bar(masked, m)
        ]
    found: list[str] = []
    for match in sorted(matches, key=lambda m: m.start()):
        if any(start <= match.start() < end for start, end in excluded):
            continue
        term = " ".join(text[match.start() : match.end()].split())
        if term.casefold() not in (t.casefold() for t in found):
            found.append(term)
    return tuple(found)


def _is_quantifier(term: str) -> bool:
    return not re.fullmatch(_EVALUATIVES, term, re.IGNORECASE)


# -- anchors ---------------------------------------------------------------------------------

_DIGIT = re.compile(r"\d")
# Month names count when capitalised ("May 2024", "in March"), never the modal "may".
_PERIOD = re.compile(
    r"\b(?:January|February|March|April|May|June|July|August|September|October|November"
    r"|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\b"
    r"|\b(?i:fiscal|calendar|financial)\s+(?i:year)\b",
)
_QUOTED = re.compile(
    r"\"[^\"\n]{2,}\"|“[^”\n]{2,}”|«[^»\n]{2,}»|`[^`\n]+`|\u2018[^\u2019\n]{2,}\u2019"
)
_TOKEN = re.compile(r"[A-Za-z][\w&'\u2019.-]*")
# Capitalised words that start sentences or questions without naming anything.
_SENTENCE_STARTERS = tx.words(
    """
    the a an this that these those it its there their they he she we you i does do did is
    are was were has have had can could should would will may might must if when where why
    how what which who whom whose in on at for of to by with from as and or but not no
    all any each every some both either neither
    """
)
_WORD_CHARS = re.compile(r"[^\w]+$")


def _is_name(token: str, first: bool, verbs: frozenset[str]) -> bool:
    """A capitalised word that names something: "Apple", "SSRI", "iPhone", "Q3"."""
    word = _WORD_CHARS.sub("", token)
    if len(word) < 2:
        return False
    if sum(ch.isupper() for ch in word) >= 2:
        return True  # "SSRI", "EBITDA", "iPhone", "McDonald's"
    if not word[0].isupper():
        return False
    folded = word.casefold()
    if first:
        # The first word is the action verb ("States …") or a sentence starter; a name there
        # ("Escitalopram is …") counts when it is neither.
        return (
            folded not in verbs
            and folded not in _SENTENCE_STARTERS
            and not folded.endswith(("s", "ed", "ing"))
        )
    return folded not in _SENTENCE_STARTERS


@lru_cache(maxsize=8192)
def has_anchor(text: str, verbs: frozenset[str]) -> bool:
    """Whether a criterion names something concrete: a figure, a date or period, a named
    entity (a capitalised word that is not the first word, an acronym) or a quoted term."""
    if _DIGIT.search(text) or _QUOTED.search(text) or _PERIOD.search(text):
        return True
    for sentence in tx.split_sentences(text) or (text,):
        tokens = _TOKEN.findall(sentence)
        if any(_is_name(token, index == 0, verbs) for index, token in enumerate(tokens)):
            return True
    return False


# -- the override ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Override:
    rule_id: str
    justification: str

    @property
    def justified(self) -> bool:
        return len(self.justification.split()) >= MIN_JUSTIFICATION_WORDS


_OVERRIDE = re.compile(r"^\s*override\s+(?P<rule>[a-z-]+)\s*:\s*(?P<why>.*?)\s*$", re.IGNORECASE)


def find_override(notes: str, rule_id: str) -> Override | None:
    """The `override <rule-id>: <why>` line of the notes for this rule, if any."""
    for line in notes.splitlines():
        match = _OVERRIDE.match(line)
        if match and match.group("rule").casefold() == rule_id:
            return Override(rule_id, match.group("why"))
    return None


def override_line(rule_id: str) -> str:
    return f"override {rule_id}: <why the wording is precise here>"
