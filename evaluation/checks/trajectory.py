"""Deterministic checks of an agent's trajectory, and of its answer against a reference.
Plain Python, no Django, no LLM: each takes structured parameters (never parsed from the
criterion's prose), gives a score in [0, 1], passes at its threshold and names in its
rationale what matched and what did not. Formulas: docs/no-llm-checks.md#trajectory-checks.

    tool_set       expected tool names called, no unexpected ones (Jaccard)
    tool_sequence  expected calls, `exact`, `in_order` or `any_order`, arguments optional;
                   pass/fail as AgentFlow's match types, or partial credit (`scoring`)
    step_order     the agent's steps (tool or node names), same modes
    keyword_share  the share of listed keywords present in the answer
    rouge1         ROUGE-1 F1 of the answer against the reference answer, tokenised as the
                   `rouge-score` package does (or Unicode words, `tokenizer`)

`params` are checked by `check_params` (the editor form, the dataset import and the run
all call it), so a stored check always has the shape its function expects.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from evaluation.checks.deterministic import PREFIX, CheckResult
from evaluation.checks.words import word_keys

KINDS = ("tool_set", "tool_sequence", "step_order", "keyword_share", "rouge1")
MODES = ("exact", "in_order", "any_order")
# How a sequence check scores: "pass_fail" is AgentFlow's reading of its match types (the
# expected calls are there, in the mode's sense, or not: 1 or 0); "partial" gives the share
# of the expected calls matched, for teams that want a graded signal.
SCORINGS = ("pass_fail", "partial")
# ROUGE tokenisers: "rouge_score" is the reference package's default (lower-case, runs of
# a-z and 0-9); "unicode" keeps letters of every script and folds case.
TOKENIZERS = ("rouge_score", "unicode")
DEFAULT_THRESHOLDS = {
    "tool_set": 1.0, "tool_sequence": 1.0, "step_order": 1.0, "keyword_share": 0.6,
    "rouge1": 0.4,
}  # fmt: skip
MAX_ITEMS = 100  # names, calls or keywords a check may list
_LISTED = 8


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Trajectory:
    """What the checks read from one answer."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    steps: tuple[str, ...] = ()
    reference: str = ""  # the query's reference answer, else a perfect answer; may be empty


def trajectory_of(
    text: str, turns: Sequence[Mapping[str, Any]], metadata: Mapping[str, Any], reference: str = ""
) -> Trajectory:
    """The tool calls of the assistant turns in order; the steps are `metadata["steps"]`
    when the agent reports them (graph node names), else the tool calls' names."""
    calls = tuple(
        ToolCall(str(c.get("name", "")), c.get("arguments") or {})
        for turn in turns
        if turn.get("role") == "assistant"
        for c in turn.get("tool_calls") or ()
    )
    steps = metadata.get("steps") if isinstance(metadata, Mapping) else None
    if isinstance(steps, list):
        named = tuple(str(s) for s in steps)
    else:
        named = tuple(c.name for c in calls)
    return Trajectory(text=text or "", calls=calls, steps=named, reference=reference or "")


# --- parameters -----------------------------------------------------------------------------


def check_params(kind: str, params: Any, threshold: Any = None) -> list[str]:
    """Problems with a check's parameters, each naming the parameter; [] when fine."""
    if kind not in KINDS:
        return [f"kind must be one of {', '.join(KINDS)}, not {kind!r}"]
    if not isinstance(params, Mapping):
        return ["params must be an object"]
    problems: list[str] = []
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        problems.append("threshold must be a number from 0 to 1")
    allowed = {
        "tool_set": {"tools"},
        "tool_sequence": {
            "calls", "mode", "compare_arguments", "ignore_extra_arguments", "scoring",
        },
        "step_order": {"steps", "mode", "scoring"},
        "keyword_share": {"keywords"},
        "rouge1": {"tokenizer"},
    }[kind]  # fmt: skip
    unknown = sorted(set(params) - allowed)
    if unknown:
        problems.append(f"params: unknown parameter {unknown[0]!r}")
    if kind == "tool_set":
        problems += _names(params, "tools", "a tool name")
    elif kind == "step_order":
        problems += _names(params, "steps", "a step name")
        problems += _mode(params)
        problems += _choice(params, "scoring", SCORINGS)
    elif kind == "keyword_share":
        problems += _names(params, "keywords", "a keyword")
    elif kind == "rouge1":
        problems += _choice(params, "tokenizer", TOKENIZERS)
    elif kind == "tool_sequence":
        problems += _mode(params)
        problems += _choice(params, "scoring", SCORINGS)
        for flag in ("compare_arguments", "ignore_extra_arguments"):
            if flag in params and not isinstance(params[flag], bool):
                problems.append(f"params: {flag!r} must be true or false")
        calls = params.get("calls")
        if not isinstance(calls, list) or not calls or len(calls) > MAX_ITEMS:
            problems.append(f"params: 'calls' must list 1 to {MAX_ITEMS} expected tool calls")
        else:
            for i, call in enumerate(calls, 1):
                if (
                    not isinstance(call, Mapping)
                    or not isinstance(call.get("name"), str)
                    or not call["name"].strip()
                    or not isinstance(call.get("arguments", {}), Mapping)
                    or set(call) - {"name", "arguments"}
                ):
                    problems.append(
                        f"params: call {i} must be {{'name': tool name, 'arguments': object}}"
                    )
    return problems


def _names(params: Mapping[str, Any], key: str, what: str) -> list[str]:
    value = params.get(key)
    if (
        not isinstance(value, list)
        or not value
        or len(value) > MAX_ITEMS
        or not all(isinstance(v, str) and v.strip() for v in value)
    ):
        return [f"params: {key!r} must list 1 to {MAX_ITEMS} entries, each {what}"]
    return []


def _mode(params: Mapping[str, Any]) -> list[str]:
    return _choice(params, "mode", MODES)


def _choice(params: Mapping[str, Any], key: str, choices: tuple[str, ...]) -> list[str]:
    if key not in params or params[key] in choices:
        return []
    return [f"params: {key!r} must be one of {', '.join(choices)}"]


def scoring_of(params: Mapping[str, Any], threshold: float | None) -> str:
    """How a sequence check scores. A check saved before `scoring` existed has none (a
    verdict's record of it, a file exported then): it gave partial credit, so one with a
    threshold below 1 keeps it (its verdicts do not change); at the default threshold 1
    both readings give the same verdict, and it takes the default, pass/fail. A check saved
    now always names its scoring (with_scoring), so this reading never decides a new one."""
    if "scoring" in params:
        return params["scoring"]
    return "partial" if threshold is not None and threshold < 1 else "pass_fail"


def with_scoring(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """A sequence check's parameters as saved: its scoring named, pass/fail (AgentFlow's
    reading) unless partial credit is asked for, whatever its threshold; other kinds'
    parameters as given."""
    if kind in ("tool_sequence", "step_order") and "scoring" not in params:
        return {**params, "scoring": "pass_fail"}
    return dict(params)


def as_applied(check: Any, score: Any) -> dict[str, Any] | None:
    """A check as a run recorded it (kind, params, threshold as stored) with its score, the
    threshold it was held against and, for sequence checks, the scoring it read; None when
    the record is not one a run writes (a verdict imported from files may carry anything)."""
    if not isinstance(check, Mapping) or check.get("kind") not in KINDS:
        return None
    kind, params, stored = check["kind"], check.get("params") or {}, check.get("threshold")
    if not isinstance(params, Mapping) or not (stored is None or _fraction(stored)):
        return None
    sequence = kind in ("tool_sequence", "step_order")
    return {
        "kind": kind,
        "params": params,
        "score": score if _fraction(score) else None,
        "threshold": DEFAULT_THRESHOLDS[kind] if stored is None else stored,
        "scoring": scoring_of(params, stored) if sequence else None,
    }


def _fraction(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1


# --- the checks -----------------------------------------------------------------------------


def run_check(
    kind: str, params: Mapping[str, Any], threshold: float | None, trajectory: Trajectory
) -> CheckResult:
    """The check's verdict: pass when its score reaches the threshold (the kind's default
    when None). The score leads the rationale: "No-LLM check (tool_set): score 0.67 …"."""
    if kind in ("tool_sequence", "step_order"):
        params = {**params, "scoring": scoring_of(params, threshold)}
    threshold = DEFAULT_THRESHOLDS[kind] if threshold is None else threshold
    score, detail = _CHECKS[kind](params, trajectory)
    # Exact fractions: 2 of 3 tools against a threshold of 0.67 must not flip on rounding.
    passed = Fraction(score).limit_denominator(10**6) >= Fraction(repr(float(threshold)))
    text = f"{PREFIX} ({kind}): score {score:.2f}, {threshold:.2f} needed; {detail}"
    if not text.endswith("."):
        text += "."
    return CheckResult("pass" if passed else "fail", text, kind, score=score)


class Check(Protocol):
    """A criterion's check as stored (evaluation.models.CriterionCheck)."""

    kind: str
    params: Mapping[str, Any]
    threshold: float | None


def decide(
    checks: Sequence[Check],
    *,
    text: str,
    turns: Sequence[Mapping[str, Any]],
    metadata: Mapping[str, Any],
    reference: Callable[[], str],
) -> list[CheckResult]:
    """The verdicts of `checks` on one answer, in order; `reference()` (the query's
    reference answer, "" when none) is asked for only when a ROUGE check needs it. Runs and
    rewards decide checked criteria with this one function, so both give the same verdict."""
    wanted = reference() if any(c.kind == "rouge1" for c in checks) else ""
    path = trajectory_of(text, turns, metadata, wanted)
    return [run_check(c.kind, c.params, c.threshold, path) for c in checks]


def _listed(items: Sequence[str]) -> str:
    if not items:
        return "none"
    shown = ", ".join(items[:_LISTED])
    more = len(items) - _LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def tool_set(params: Mapping[str, Any], t: Trajectory) -> tuple[float, str]:
    """|expected and called| / |expected or called| over distinct tool names (Jaccard): 1 when
    exactly the expected tools were called, each missing or unexpected tool lowers it."""
    expected = list(dict.fromkeys(params["tools"]))
    called = list(dict.fromkeys(c.name for c in t.calls))
    matched = [n for n in expected if n in called]
    missing = [n for n in expected if n not in called]
    unexpected = [n for n in called if n not in expected]
    union = len(set(expected) | set(called))
    score = len(matched) / union if union else 1.0
    return score, (
        f"called {_listed(matched)} as expected; missing: {_listed(missing)}; "
        f"unexpected: {_listed(unexpected)}"
    )


def arguments_match(
    expected: Mapping[str, Any], actual: Mapping[str, Any], *, ignore_extra: bool = True
) -> bool:
    """Every expected argument has the same value (JSON equality, so key order never
    matters); arguments the call adds are ignored unless `ignore_extra` is off. An expected
    call without arguments accepts any (AgentFlow's rule: empty `args` means "any")."""
    if not expected:
        return True
    if not ignore_extra and set(actual) - set(expected):
        return False
    return all(k in actual and actual[k] == v for k, v in expected.items())


def tool_sequence(params: Mapping[str, Any], t: Trajectory) -> tuple[float, str]:
    """Expected calls against the agent's, by name and (optionally) arguments, as
    AgentFlow's match types define them:
    exact: the calls are the expected ones, in order, with nothing else;
    in_order: the expected calls appear in order (a subsequence, other calls between);
    any_order: each expected call matches a distinct call of the agent, in any order.
    Pass/fail scores 1 or 0; partial scores the expected calls matched (exact: still 1 or
    0; in_order: a longest common subsequence; any_order: a maximum one-to-one matching)
    over the expected calls."""
    compare = bool(params.get("compare_arguments", False))
    ignore_extra = bool(params.get("ignore_extra_arguments", True))
    expected = [ToolCall(c["name"], c.get("arguments") or {}) for c in params["calls"]]

    def same(e: ToolCall, a: ToolCall) -> bool:
        if e.name != a.name:
            return False
        return not compare or arguments_match(e.arguments, a.arguments, ignore_extra=ignore_extra)

    what = "calls" + (" with their arguments" if compare else "")
    return _sequence(
        params.get("mode", "exact"), params.get("scoring", "pass_fail"),
        expected, list(t.calls), same, lambda c: c.name, what,
    )  # fmt: skip


def step_order(params: Mapping[str, Any], t: Trajectory) -> tuple[float, str]:
    """The tool-sequence formulas over step names (the agent's reported steps, else its tool
    calls' names): AgentFlow's node-order criterion."""
    return _sequence(
        params.get("mode", "exact"), params.get("scoring", "pass_fail"),
        list(params["steps"]), list(t.steps), str.__eq__, str, "steps",
    )  # fmt: skip


def _sequence(mode, scoring, expected, actual, same, name, what) -> tuple[float, str]:
    if not expected:
        return 1.0, "nothing expected"
    if mode == "exact":
        ok = len(expected) == len(actual) and all(map(same, expected, actual))
        got = _listed([name(a) for a in actual])
        if ok:
            return 1.0, f"the {what} are exactly the expected ones: {got}"
        return 0.0, (
            f"expected exactly {_listed([name(e) for e in expected])}; the agent made: {got}"
        )
    if mode == "in_order":
        matched = _in_order(expected, actual, same)
    else:
        matched = _any_order(expected, actual, same)
    hits = [name(e) for i, e in enumerate(expected) if i in matched]
    misses = [name(e) for i, e in enumerate(expected) if i not in matched]
    order = "in order" if mode == "in_order" else "in any order"
    detail = (
        f"{len(matched)} of {len(expected)} expected {what} matched {order} "
        f"({_listed(hits)}); not matched: {_listed(misses)}"
    )
    if scoring == "partial":
        return len(matched) / len(expected), detail
    return (1.0 if len(matched) == len(expected) else 0.0), detail


def _in_order(expected, actual, same) -> set[int]:
    """Indexes of expected items in a longest common subsequence with `actual` (dynamic
    programming, len(expected) × len(actual), both bounded). All of them exactly when the
    expected items are a subsequence of `actual`."""
    n, m = len(expected), len(actual)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if same(expected[i], actual[j]):
                best[i][j] = 1 + best[i + 1][j + 1]
            else:
                best[i][j] = max(best[i + 1][j], best[i][j + 1])
    picked: set[int] = set()
    i = j = 0
    while i < n and j < m:
        if same(expected[i], actual[j]) and best[i][j] == 1 + best[i + 1][j + 1]:
            picked.add(i)
            i, j = i + 1, j + 1
        elif best[i + 1][j] >= best[i][j + 1]:
            i += 1
        else:
            j += 1
    return picked


def _any_order(expected, actual, same) -> set[int]:
    """Indexes of expected items in a maximum one-to-one matching with `actual` (augmenting
    paths). Greedy first-fit is not enough once arguments are compared with extra keys
    ignored: {a} fits both {a} and {a, b}, and taking {a, b} first can leave {a, b}
    unmatched."""
    fits = [[j for j, a in enumerate(actual) if same(e, a)] for e in expected]
    owner: dict[int, int] = {}  # actual index -> expected index

    def augment(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    return set(owner.values())


def keyword_share(params: Mapping[str, Any], t: Trajectory) -> tuple[float, str]:
    """Keywords found / keywords listed. A keyword is found when all its words appear in
    the answer, compared as the keyword check compares words (case, plurals, inflections
    folded)."""
    keywords = list(dict.fromkeys(k.strip() for k in params["keywords"]))
    present = word_keys(t.text)
    found = [k for k in keywords if word_keys(k) <= present]
    missing = [k for k in keywords if k not in found]
    return len(found) / len(keywords), (
        f"{len(found)} of {len(keywords)} keywords found ({_listed(found)}); "
        f"missing: {_listed(missing)}"
    )


_UNICODE_WORD = re.compile(r"[^\W_]+")
_ROUGE_SCORE_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str, tokenizer: str = "rouge_score") -> list[str]:
    """ROUGE's tokens.

    "rouge_score": as the reference package (`rouge-score`, no stemmer) makes them: the
    text lower-cased by `str.lower`, then runs of a-z and 0-9; every other character
    separates tokens, so "Café" is "caf", "4.12" is "4" and "12", and a text in another
    script has no token at all.
    "unicode": runs of letters and digits of any script, case-folded ("straße" is
    "strasse")."""
    if tokenizer == "unicode":
        return _UNICODE_WORD.findall(text.casefold())
    return _ROUGE_SCORE_TOKEN.findall(text.lower())


def rouge1(params: Mapping[str, Any], t: Trajectory) -> tuple[float, str]:
    """ROUGE-1 F1: overlap = Σ over words of min(count in answer, count in reference);
    precision = overlap / answer words, recall = overlap / reference words,
    F1 = 2PR / (P + R), computed in the order `rouge-score` computes it. 0 without a
    reference."""
    if not t.reference.strip():
        return 0.0, "the query has no reference answer nor perfect answer to compare with"
    tokenizer = params.get("tokenizer", "rouge_score")
    answer = Counter(tokens(t.text, tokenizer))
    reference = Counter(tokens(t.reference, tokenizer))
    overlap = sum((answer & reference).values())
    if not overlap:
        return 0.0, "no word of the reference appears in the answer"
    precision = overlap / sum(answer.values())
    recall = overlap / sum(reference.values())
    f1 = 2 * precision * recall / (precision + recall)
    missed = [w for w, _ in (reference - answer).most_common(_LISTED)]
    return f1, (
        f"{overlap} shared words; precision {precision:.2f}, recall {recall:.2f}; "
        f"reference words most missed: {_listed(missed)}"
    )


_CHECKS = {
    "tool_set": tool_set,
    "tool_sequence": tool_sequence,
    "step_order": step_order,
    "keyword_share": keyword_share,
    "rouge1": rouge1,
}
