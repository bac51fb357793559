"""The guideline rules: one function per rule, registered with an id, a severity and a scope.

A criterion-scope rule looks at one criterion (and the query date); a checklist-scope rule
looks at the whole checklist. Rules yield `Issue`s; `validate_criterion`/`validate_checklist`
turn them into `Finding`s with the rule's id and the severity the config asks for. Every
message says how to fix the problem, because experts read them while typing.

Rule ids are stable API: stored configs and the REST API name them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any

from annotation.validation import text as tx
from annotation.validation import vagueness as vz
from annotation.validation.types import (
    ChecklistInput,
    CriterionInput,
    Finding,
    GuidelineConfig,
    Issue,
    Report,
    RuleInfo,
    Scope,
    Severity,
    quote,
)


@dataclass(frozen=True)
class _Registered:
    info: RuleInfo
    check: Callable[..., Iterable[Issue]]


_REGISTRY: dict[str, _Registered] = {}


def rule(
    id: str,  # the name the docs, configs and API use, shadowing the builtin on purpose
    *,
    severity: Severity,
    scope: Scope,
    title: str,
) -> Callable[[Callable[..., Iterable[Issue]]], Callable[..., Iterable[Issue]]]:
    """Register a rule function under a stable id; the order of registration is report order."""

    def register(check: Callable[..., Iterable[Issue]]) -> Callable[..., Iterable[Issue]]:
        if id in _REGISTRY:
            raise ValueError(f"rule {id!r} is registered twice")
        _REGISTRY[id] = _Registered(RuleInfo(id, title, severity, scope), check)
        return check

    return register


_quote = quote


def _examples(config: GuidelineConfig) -> str:
    preferred = [v for v in ("states", "provides", "includes") if v in config.action_verbs]
    verbs = preferred or sorted(config.action_verbs)[:3]
    quoted = [_quote(v.capitalize()) for v in verbs]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1] if len(quoted) > 1 else quoted[0]


# --- criterion scope: the text -------------------------------------------------------------


@rule("text-empty", severity="error", scope="criterion", title="The criterion has text")
def text_empty(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    if not criterion.text.strip():
        yield Issue("Write the criterion: one sentence starting with an action verb.")


@rule(
    "text-too-long",
    severity="error",
    scope="criterion",
    title="The criterion is at most max_length characters",
)
def text_too_long(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    length = len(criterion.text.strip())
    if length > config.max_length:
        yield Issue(
            f"Shorten the criterion to at most {config.max_length} characters (it has "
            f"{length}); if it checks several things, split it into several criteria."
        )


@rule(
    "action-verb",
    severity="error",
    scope="criterion",
    title="The criterion starts with an action verb",
)
def action_verb(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    word = tx.first_word(criterion.text)
    if not word or word.casefold() in config.action_verbs:
        return  # an empty text is text-empty's business
    message = (
        f"Start with an action verb such as {_examples(config)}; "
        f"this criterion starts with {_quote(word)}."
    )
    suggestion = _third_person(word.casefold(), config.action_verbs)
    if suggestion:
        message += f" Did you mean {_quote(suggestion.capitalize())}?"
    yield Issue(message)


def _third_person(word: str, verbs: frozenset[str]) -> str | None:
    """The listed verb an imperative or past-tense first word probably meant.

    "Provide" -> "provides", "Identified" -> "identifies", "Used" -> "uses".
    """
    stems = [word]
    if word.endswith("ed"):
        stems += [word[:-1], word[:-2], word[:-3] + "y" if word.endswith("ied") else word[:-2]]
    for stem in stems:
        for candidate in (stem + "s", stem + "es", stem[:-1] + "ies" if stem.endswith("y") else ""):
            if candidate in verbs:
                return candidate
    return None


@rule(
    "single-sentence",
    severity="error",
    scope="criterion",
    title="The criterion is exactly one sentence",
)
def single_sentence(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    sentences = tx.split_sentences(criterion.text)
    if len(sentences) > 1:
        yield Issue(
            f"Write one sentence; this criterion has {len(sentences)} (the second starts "
            f"{_quote(sentences[1], 30)}). Split it into separate criteria or join the parts."
        )


# --- compound: several claims in one criterion -----------------------------------------------

# Words that follow a verb but rarely a noun: a listed verb after "and" followed by one of these
# starts a second predicate ("and mentions the margin"), whereas "revenue and estimates for
# 2026" keeps "estimates" a noun.
_OBJECT_STARTERS = tx.words(
    """
    the a an this that these those its their his her our your each every all both any some
    how why what whether which when where who it them no not at least more most only
    """
)
# Listed verbs (in their base form) that are also common nouns or adjectives: after a
# coordinator they only count as a verb when an object starter, a figure or a name follows.
_AMBIGUOUS_BASES = tx.words(
    """
    use show cover report state note list group order rank limit detail estimate reference
    structure highlight answer flag present outline address contrast attribute focus break
    mention separate analyse analyze result point figure project forecast name trace
    """
)
_COORDINATOR = re.compile(
    r"(?=[aptw;,])(?P<coordinator>\band(?:\s+then)?|\bas\s+well\s+as|\balong\s+with|\bplus|\bthen"
    r"|\bwhile|;|,)"
    # An adverb may sit between: "and also mentions", "and clearly states" (but "apply" and
    # "rely" are verbs, not adverbs).
    r"\s+(?:(?P<adverb>also|then|further|additionally|(?!(?:ap|re|sup|multi|com)ply\b)\w+ly)\s+)?"
    r"(?P<verb>[A-Za-z]+)\b"
)
# "States that X and that Y": two that-clauses are two claims ("and that of peers" is not one).
_AND_THAT = re.compile(r"\band\s+(?:also\s+)?that\b(?!\s+of\b|['\u2019]s\b)", re.IGNORECASE)
_LAST_WORD = re.compile(r"(\w+)\W*$")
_NEXT_TOKEN = re.compile(r"\s+(\S+)")
_FIGURE = re.compile(
    r"[$€£¥]\s?\d|\d(?:[.,]\d+)?\s?(?:%|percent\b|pp\b|bps\b|bn\b|billion\b|million\b|mn\b"
    r"|thousand\b|trillion\b|basis points\b|percentage points\b|x\b)|\d+\.\d+",
    re.IGNORECASE,
)
_BETWEEN = re.compile(r"\b(between|from)\s+([^,;]*?)\s+(?:and|to)\s+", re.IGNORECASE)
_PARTS = re.compile(r",\s|;|\band\b|\bas well as\b|\balong with\b", re.IGNORECASE)


@lru_cache(maxsize=64)
def _verb_forms(verbs: frozenset[str]) -> dict[str, str]:
    """Every listed verb and its base form ("mentions" and "mention"), mapped to the base.

    The base forms catch question-style criteria ("Does the response explain X and mention
    Y?") under the generic preset.
    """
    forms: dict[str, str] = {}
    for verb in verbs:
        base = _base_form(verb)
        forms[verb] = base
        forms[base] = base
    return forms


def _base_form(verb: str) -> str:
    if verb == "focuses":
        return "focus"
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("sses", "shes", "ches", "xes", "zes")):
        return verb[:-2]
    return verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb


def _starts_object(after: str | None) -> bool:
    if not after:
        return False
    word = after.strip().strip("\"'“\u2018(")
    if not word:
        return False
    return (
        word.casefold().rstrip(".,;:?!") in _OBJECT_STARTERS
        or word[0].isdigit()
        or word[0] in "$€£¥"
        or word[0].isupper()
    )


def _joined_verbs(masked: str, verbs: frozenset[str]) -> str | None:
    """A coordinator followed by a second action verb: "... and mentions the margin"."""
    forms = _verb_forms(verbs)
    for match in _COORDINATOR.finditer(masked):
        word = match.group("verb")
        base = forms.get(word.casefold())
        if base is None or word[0].isupper():
            continue  # not a listed verb, or a name ("between Answer A and Answer B")
        after = _NEXT_TOKEN.match(masked, match.end())
        needs_object = base in _AMBIGUOUS_BASES or match.group("coordinator") == ","
        if needs_object and not _starts_object(after.group(1) if after else None):
            continue  # "revenue and estimates for 2026": a noun; ", uses" in a list of nouns
        before = _LAST_WORD.search(masked, 0, match.start())
        if before and _shares_object(before.group(1), match.group("adverb"), forms):
            continue
        return f"{match.group('coordinator')} {word}"
    that = _AND_THAT.search(masked)
    return " ".join(that.group(0).split()) if that else None


def _shares_object(before: str, adverb: str | None, forms: dict[str, str]) -> bool:
    """Whether the coordinator joins two verbs or adverbs around one object.

    "Compares and contrasts the two segments" and "accurately and thoroughly addresses the
    task" check one thing, so they are not compound; an ambiguous word before the coordinator
    ("the annual report and explains …") is taken as a noun.
    """
    word = before.casefold()
    if word.endswith("ly") and adverb:
        return True
    base = forms.get(word)
    return base is not None and base not in _AMBIGUOUS_BASES


def _joining_semicolon(masked: str) -> bool:
    """A semicolon between two clauses; one inside brackets or after a colon is a list."""
    if ";" not in masked:
        return False
    depth = 0
    for index, ch in enumerate(masked):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch == ":" and depth == 0:
            return False  # "Lists the risks: A; B; C" is a list, which the figures check covers
        elif ch == ";" and depth == 0:
            before, after = masked[:index].split(), masked[index + 1 :].split()
            if len(before) >= 2 and len(after) >= 2:
                return True
    return False


def _figure_parts(masked: str) -> int:
    """How many comma/"and"-separated parts of the text carry a figure (0 if under three)."""
    if len(_FIGURE.findall(masked)) < 3:
        return 0  # the common case, settled in one pass
    lowered = masked.casefold()
    if "between" in lowered or "from" in lowered:
        # "between $3.9 and $4.0 billion" is one range, not two claims.
        masked = _BETWEEN.sub(lambda m: f"{m.group(1)} {m.group(2)} – ", masked)
    return sum(1 for part in _PARTS.split(masked) if _FIGURE.search(part))


@rule(
    "compound",
    severity="warning",
    scope="criterion",
    title="The criterion checks one thing, not several joined together",
)
def compound(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    message = _compound_message(criterion.text, config.action_verbs)
    if message:
        yield Issue(message)


@lru_cache(maxsize=8192)
def _compound_message(text: str, verbs: frozenset[str]) -> str | None:
    # Cached: live feedback re-checks the unchanged criteria of a checklist on every keystroke.
    masked = tx.mask_protected(text)
    joined = _joined_verbs(masked, verbs)
    if joined:
        return (
            f"Split this into one criterion per claim: it joins two claims "
            f"({_quote(tx.first_word(text))} … {_quote(joined)})."
        )
    if _joining_semicolon(masked):
        return "Split this into one criterion per claim: a semicolon joins two clauses."
    parts = _figure_parts(masked)
    if parts >= 3:
        return (
            f"Split this into one criterion per figure: it lists {parts} figures, and a grader "
            f"can only answer yes or no for all of them together."
        )
    return None


# --- criterion scope: sources and citations ------------------------------------------------


@rule(
    "fact-source-type",
    severity="error",
    scope="criterion",
    title="A fact criterion has at least one source type",
)
def fact_source_type(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    if criterion.kind != "fact" or any(s.strip() for s in criterion.source_types):
        return
    if not criterion.text.strip():
        return  # a blank row gets one message (text-empty), not two
    from_citations = sorted({c.source_type for c in criterion.citations if c.source_type.strip()})
    hint = (
        f" Its citations suggest {', '.join(_quote(s) for s in from_citations)}."
        if from_citations
        else ""
    )
    yield Issue(
        "Tag this fact criterion with at least one source type (for example “filings” or "
        "“earnings-call-transcript”) so that graders know where to check it." + hint,
        field="source_types",
    )


@rule(
    "banned-source-type",
    severity="error",
    scope="criterion",
    title="No banned source type on the criterion or its citations",
)
def banned_source_type(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    banned = config.banned_source_types
    for index, source_type in enumerate(criterion.source_types):
        if source_type.strip().casefold() in banned:
            yield Issue(
                f"Remove the source type {_quote(source_type)}: the guideline does not accept "
                f"it; tag the primary source instead.",
                field=f"source_types[{index}]",
            )
    for index, citation in enumerate(criterion.citations):
        if citation.source_type.strip().casefold() in banned:
            yield Issue(
                f"Replace citation {index + 1} ({_quote(citation.title)}): its source type "
                f"{_quote(citation.source_type)} is not accepted; cite the primary source.",
                field=f"citations[{index}].source_type",
            )


@rule(
    "citation-after-query-date",
    severity="error",
    scope="criterion",
    title="No citation is published after the query date",
)
def citation_after_query_date(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    if query_date is None:
        return
    for index, citation in enumerate(criterion.citations):
        if citation.published_on is not None and citation.published_on > query_date:
            yield Issue(
                f"Replace citation {index + 1} ({_quote(citation.title)}): it was published on "
                f"{citation.published_on.isoformat()}, after the query date "
                f"{query_date.isoformat()}; cite a source published on or before the query date.",
                field=f"citations[{index}].published_on",
            )


@rule(
    "citation-missing-date",
    severity="warning",
    scope="criterion",
    title="Every citation has a publication date",
)
def citation_missing_date(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    for index, citation in enumerate(criterion.citations):
        if citation.published_on is None:
            yield Issue(
                f"Add the publication date of citation {index + 1} ({_quote(citation.title)}) "
                f"so that it can be checked against the query date.",
                field=f"citations[{index}].published_on",
            )


# --- criterion scope: vague references -------------------------------------------------------

_VAGUE = re.compile(
    r"\b(?=[tasifpuw])(?:"  # the lookahead skips words that cannot start a match, cheaply
    r"(?:the|this|that)\s+above(?:[\s-]mentioned)?\b"
    r"|(?:the|this|that)\s+aforementioned\b"
    r"|above-mentioned\b"
    r"|as\s+(?:mentioned|noted|stated|discussed|described|shown|indicated|explained|listed)"
    r"\s+(?:above|below|earlier|before|previously)\b"
    r"|as\s+(?:mentioned|noted|stated|discussed|described|shown)(?=\s*[,.;:?!]|\s*$)"
    r"|see\s+(?:above|below)\b"
    r"|(?:this|that)\s+(?:company|firm|stock|issuer|business|ticker|fund)\b"
    r"|the\s+(?:previous|preceding|above|prior)\s+(?:criterion|criteria|point|item|question)\b"
    # "in the table." or "from the document above", but not "on the table" (a real table)
    # nor "the table of segment revenue" (named by what follows).
    r"|(?:in|from|per|see|using|within)\s+the\s+(?:table|chart|graph|document|attachment"
    r"|spreadsheet|file|image|screenshot|link|article)"
    r"(?=\s*[,.;:?!)]|\s*$|\s+(?:above|below|provided|attached|shown|given|mentioned"
    r"|referenced|supplied|linked|earlier|previously)\b)"
    r")",
    re.IGNORECASE,
)


@lru_cache(maxsize=8192)
def _vague_phrase(text: str) -> str | None:
    match = _VAGUE.search(tx.mask_protected(text))
    return text[match.start() : match.end()] if match else None


@rule(
    "vague-reference",
    severity="warning",
    scope="criterion",
    title="The criterion names what it refers to",
)
def vague_reference(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    phrase = _vague_phrase(criterion.text)
    if phrase:
        yield Issue(
            f"Name what {_quote(phrase)} refers to (the company, the document and its date, "
            f"the figure): a grader sees only this criterion and the answer."
        )


# --- criterion scope: vague wording and missing anchors (annotation/validation/vagueness.py) --


def _override_state(criterion: CriterionInput, rule_id: str) -> Issue | bool:
    """True when a justified override in the notes silences the rule, an Issue when the
    override line has no real justification, False when there is no override."""
    override = vz.find_override(criterion.notes, rule_id)
    if override is None:
        return False
    if override.justified:
        return True
    return Issue(
        f"Justify the override in the notes: “override {rule_id}:” needs a reason of at "
        f"least {vz.MIN_JUSTIFICATION_WORDS} words (why the wording is precise here).",
        field="notes",
    )


@rule(
    "vague-wording",
    severity="error",
    scope="criterion",
    title="No vague evaluative or quantifier (good, relevant, some, various, etc.)",
)
def vague_wording(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    terms = vz.vague_terms(criterion.text, config.action_verbs)
    if not terms:
        return
    state = _override_state(criterion, "vague-wording")
    if state is True:
        return
    if isinstance(state, Issue):
        yield state
        return
    listed = ", ".join(_quote(t) for t in terms[:4])
    yield Issue(
        f"Replace the vague {'word' if len(terms) == 1 else 'words'} {listed} with what "
        f"exactly the answer must contain (the figure, the named item, how many): a grader "
        f"cannot answer yes or no to a judgement left open. If the wording is precise in "
        f"context, add the line “{vz.override_line('vague-wording')}” to the notes."
    )


@rule(
    "fact-anchor",
    severity="error",
    scope="criterion",
    title="A fact criterion names a figure, a date, a named entity or a quoted term",
)
def fact_anchor(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    if criterion.kind != "fact" or not criterion.text.strip():
        return
    if vz.has_anchor(criterion.text, config.action_verbs):
        return
    state = _override_state(criterion, "fact-anchor")
    if state is True:
        return
    if isinstance(state, Issue):
        yield state
        return
    yield Issue(
        "Name the fact to check: a figure (“$4.12 billion”), a date or period (“Q3 2025”), "
        "a named entity (“Apple”, “the FDA”) or a quoted term. If the fact really has none, "
        f"add the line “{vz.override_line('fact-anchor')}” to the notes."
    )


# --- criterion scope: groups and penalties (rubrics of other shapes, docs/metrics.md) -------


@rule(
    "criterion-in-group",
    severity="error",
    scope="criterion",
    title="The criterion is in a group (off unless a guideline switches it on)",
)
def criterion_in_group(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    # in_group None: the caller does not know (a payload without groups); nothing to say.
    if criterion.in_group is False and criterion.text.strip():
        yield Issue(
            "Put this criterion in a group: this guideline scores criteria by group (aspect), "
            "and a criterion in no group counts in none."
        )


# The openings of a criterion that describes what the answer avoids rather than what it does
# (an apostrophe straight or curly: \u2019).
_AVOIDANCE = re.compile(
    r"^\s*(?:(?:does|do|did|is|are|should|must|will)\s*(?:n['\u2019]t|\s+not)\b|"
    r"(?:doesn['\u2019]t|don['\u2019]t|didn['\u2019]t|isn['\u2019]t|never|not|no|without|"
    r"avoids?|refrains?|abstains?)\b)",
    re.IGNORECASE,
)


@rule(
    "penalty-wording",
    severity="warning",
    scope="criterion",
    title="A penalty (negative weight) describes the bad behaviour, not its avoidance",
)
def penalty_wording(
    criterion: CriterionInput, config: GuidelineConfig, query_date: date | None
) -> Iterator[Issue]:
    if criterion.weight >= 0:
        return
    found = _AVOIDANCE.match(criterion.text)
    if found:
        yield Issue(
            f"This penalty starts with {_quote(found.group(0).strip())}: the judge asks whether "
            "the answer does what the criterion says, and a penalty that is met counts against "
            "the answer, so a penalty worded as an avoidance punishes the good answers. "
            'Describe the bad behaviour itself ("Recommends a drug the patient is allergic '
            'to.", "States a revenue figure from after the query date."), or make the '
            "weight positive."
        )


# --- checklist scope -----------------------------------------------------------------------


def _filled(checklist: ChecklistInput) -> list[CriterionInput]:
    # A blank row in the editor is text-empty's business; it does not count as a criterion.
    return [c for c in checklist.criteria if c.text.strip()]


def _numbered(checklist: ChecklistInput) -> list[tuple[int, CriterionInput]]:
    """The filled criteria with their row numbers (1 = first row, blank rows counted)."""
    return [(n, c) for n, c in enumerate(checklist.criteria, start=1) if c.text.strip()]


@rule(
    "methodology-required",
    severity="error",
    scope="checklist",
    title="The checklist has at least one methodology criterion",
)
def methodology_required(checklist: ChecklistInput, config: GuidelineConfig) -> Iterator[Issue]:
    if not any(c.kind == "methodology" for c in _filled(checklist)):
        yield Issue(
            "Add a methodology criterion that pins down the scope: the time window, the peer "
            "set, the documents to use or how to present the answer.",
            field="criteria",
        )


@rule(
    "min-criteria",
    severity="error",
    scope="checklist",
    title="The checklist has at least min_criteria criteria",
)
def min_criteria(checklist: ChecklistInput, config: GuidelineConfig) -> Iterator[Issue]:
    count = len(_filled(checklist))
    if count < config.min_criteria:
        yield Issue(
            f"Add criteria: the checklist needs at least {config.min_criteria} and has {count}.",
            field="criteria",
        )


@rule(
    "max-criteria",
    severity="warning",
    scope="checklist",
    title="The checklist has at most max_criteria criteria",
)
def max_criteria(checklist: ChecklistInput, config: GuidelineConfig) -> Iterator[Issue]:
    count = len(_filled(checklist))
    if count > config.max_criteria:
        yield Issue(
            f"Trim the checklist to at most {config.max_criteria} criteria (it has {count}): "
            f"drop minor points or merge overlapping ones.",
            field="criteria",
        )


@rule(
    "duplicate",
    severity="error",
    scope="checklist",
    title="No two criteria have the same text",
)
def duplicate(checklist: ChecklistInput, config: GuidelineConfig) -> Iterator[Issue]:
    first_by_text: dict[str, tuple[int, str]] = {}
    for number, criterion in _numbered(checklist):
        normalised = tx.normalise(criterion.text)
        if normalised in first_by_text:
            first_number, first_text = first_by_text[normalised]
            yield Issue(
                f"Remove this criterion or make it different: it repeats criterion "
                f"{first_number} ({_quote(first_text)}).",
                criterion_key=criterion.key,
            )
        else:
            first_by_text[normalised] = (number, criterion.text)


# Function words carry no content; without them "States the X of the Y" criteria about
# different things would look alike.
_STOPWORDS = tx.words(
    """
    a an the of to in on for and or by with as at from that this these those is are was were
    be been does do did it its their
    """
)


@lru_cache(maxsize=8192)
def _content_words(text: str) -> frozenset[str]:
    return frozenset(t for t in tx.tokens(text) if t not in _STOPWORDS)


@rule(
    "near-duplicate",
    severity="warning",
    scope="checklist",
    title="No two criteria say nearly the same thing",
)
def near_duplicate(checklist: ChecklistInput, config: GuidelineConfig) -> Iterator[Issue]:
    # Only criteria with the same markers are compared (different figures or names mean
    # different facts: "Q3 revenue of $4.12 billion" vs "Q4 revenue of $4.30 billion"), and
    # of those, with a positive threshold, only the ones sharing a content word (the others'
    # similarity is 0): each earlier criterion is found through its markers and its words,
    # not by comparing every pair (2,000 criteria made two million pairs, a quarter of a
    # second). Candidates come in checklist order, so the first best match still wins.
    earlier: dict[frozenset[str], list[tuple[int, frozenset[str], str]]] = defaultdict(list)
    by_word: dict[frozenset[str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for number, criterion in _numbered(checklist):
        content = _content_words(criterion.text)
        markers = tx.content_markers(criterion.text)
        normalised = tx.normalise(criterion.text)
        same_markers, words = earlier[markers], by_word[markers]
        at: Iterable[int]
        if content and config.near_duplicate_threshold > 0:
            at = sorted({i for word in content for i in words.get(word, ())})
        else:
            at = range(len(same_markers))
        best: tuple[float, int] | None = None
        for i in at:
            other_number, other_content, other_normalised = same_markers[i]
            if normalised == other_normalised:
                continue  # exact repeats are duplicate's business
            similarity = tx.jaccard(content, other_content)
            if similarity >= config.near_duplicate_threshold and (
                best is None or similarity > best[0]
            ):
                best = (similarity, other_number)
        if best:
            other = checklist.criteria[best[1] - 1]
            yield Issue(
                f"Merge this criterion with criterion {best[1]} ({_quote(other.text)}) or make "
                f"the difference explicit: they share {best[0]:.0%} of their words.",
                criterion_key=criterion.key,
            )
        for word in content:
            words[word].append(len(same_markers))
        same_markers.append((number, content, normalised))


# --- the engine ----------------------------------------------------------------------------

RULES: tuple[RuleInfo, ...] = tuple(r.info for r in _REGISTRY.values())
RULE_IDS: frozenset[str] = frozenset(_REGISTRY)
_ORDER = {rule_id: index for index, rule_id in enumerate(_REGISTRY)}


def _active(config: GuidelineConfig, scope: Scope) -> list[tuple[_Registered, Severity]]:
    """The enabled rules of one scope with their configured severity, in registry order."""
    active = []
    for registered in _REGISTRY.values():
        setting = config.setting(registered.info.id)
        if registered.info.scope == scope and setting.enabled:
            active.append((registered, setting.severity or registered.info.default_severity))
    return active


def _criterion_findings(
    criterion: CriterionInput,
    config: GuidelineConfig,
    query_date: date | None,
    active: list[tuple[_Registered, Severity]],
    number: int | None,
) -> list[Finding]:
    return [
        Finding(
            registered.info.id,
            severity,
            issue.message,
            criterion.key,
            issue.field,
            criterion_number=number,
            criterion_text=criterion.text,
        )
        for registered, severity in active
        for issue in registered.check(criterion, config, query_date)
    ]


def validate_criterion(
    criterion: CriterionInput,
    config: GuidelineConfig,
    *,
    query_date: date | None = None,
    number: int | None = None,
) -> Report:
    """Criterion-scope rules only: live feedback on one criterion while it is being typed.
    `number` is its row number in the checklist, for the findings' labels."""
    active = _active(config, "criterion")
    return Report(tuple(_criterion_findings(criterion, config, query_date, active, number)))


def validate_checklist(checklist: ChecklistInput, config: GuidelineConfig) -> Report:
    """Every enabled rule. Findings come criterion by criterion, then about the whole list;
    each names its criterion by row number (1 = the first) and text."""
    findings: list[Finding] = []
    active = _active(config, "criterion")
    for number, criterion in enumerate(checklist.criteria, start=1):
        findings += _criterion_findings(criterion, config, checklist.query_date, active, number)
    position = {c.key: index for index, c in enumerate(checklist.criteria)}
    for registered, severity in _active(config, "checklist"):
        for issue in registered.check(checklist, config):
            key = issue.criterion_key
            target = None if key is None else checklist.criteria[position[key]]
            findings.append(
                Finding(
                    registered.info.id,
                    severity,
                    issue.message,
                    key,
                    issue.field,
                    criterion_number=None if key is None else position[key] + 1,
                    criterion_text=target.text if target else "",
                )
            )

    def order(finding: Finding) -> tuple[int, int]:
        # Stable sort: a criterion's findings stay in rule order; checklist-level ones go last.
        where = len(position) if finding.criterion_key is None else position[finding.criterion_key]
        return where, _ORDER[finding.rule_id]

    return Report(tuple(sorted(findings, key=order)))


def rule_info(rule_id: str) -> RuleInfo:
    """The description of one rule; KeyError for an unknown id."""
    return _REGISTRY[rule_id].info


def describe_rules() -> list[dict[str, Any]]:
    """RULES as JSON-ready dicts, for the UI."""
    return [info.to_dict() for info in RULES]
