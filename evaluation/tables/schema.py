"""The layout of a dataset export (and of a structure import): one table per kind of row.

Plain Python, no Django: the exporter shapes rows into these columns, the importer reads them
back, and docs/data-formats.md describes each one. Rows name each other by external keys
(a query's `external_id`, a checklist's query and author, a criterion's `external_id` in its
checklist, an answer's system, version, query, run label and sample), never by the app's ids: the
`id` columns are there for cross-reference only and are ignored by the import.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

# Raised when a column is renamed or changes meaning; the import refuses a newer version.
SCHEMA_VERSION = 1

FORMATS = ("jsonl", "csv", "parquet")
# Optional parts of an export, in the order they are written. The structure (dataset,
# guidelines, source types, members, queries, checklists, criteria, citations, perfect
# answers) is always there.
INCLUDES = (
    "answers", "verdicts", "labels", "adjudications", "pairwise", "scores", "overlaps",
)  # fmt: skip
# What an optional part needs: verdicts, labels, adjudications and scores name answers;
# pairwise votes name answers, and judges (whose table comes with the verdicts).
NEEDS = {
    "verdicts": ("answers",),
    "labels": ("answers",),
    "adjudications": ("answers",),
    "pairwise": ("answers", "verdicts"),
    "scores": ("answers", "verdicts"),
}

# Column types. Dates and times are ISO 8601 text in every format; `list` is a list of
# strings (JSON array text in CSV); `json` is nested in JSON Lines (objects and lists, as
# the value is) and JSON text in CSV and Parquet, so that tools which infer a schema from a
# columnar file (pyarrow, Hugging Face datasets on Parquet) never meet objects with varying
# keys. Imports read either form of a JSON cell: a string is read as JSON text.
STR, INT, FLOAT, BOOL, DATE, DATETIME, LIST, JSON = (
    "str", "int", "float", "bool", "date", "datetime", "list", "json",
)  # fmt: skip


@dataclass(frozen=True)
class Column:
    name: str
    type: str = STR
    doc: str = ""


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    include: str | None = None  # None: always exported
    doc: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @cached_property
    def _by_name(self) -> dict[str, Column]:
        return {c.name: c for c in self.columns}

    def column(self, name: str) -> Column | None:
        # A dict, not a scan: the import asks once per cell, a million rows times 20 cells.
        return self._by_name.get(name)


def _c(name: str, type_: str = STR, doc: str = "") -> Column:
    return Column(name, type_, doc)


# The columns that name an answer, and those that name a criterion, in every table of
# items (verdicts, labels, adjudications).
ANSWER_KEY = (
    _c("system", doc="The system's name"),
    _c("system_version", doc="The system's version (may be empty)"),
    _c("query", doc="The query's external id"),
    _c(
        "run_label",
        doc="The answer's run label (may be empty); a perfect answer's is `perfect:<author>`",
    ),
    _c(
        "answer_sample",
        INT,
        "The answer's sample index among the system's answers to the query (empty: 0)",
    ),
)
ANSWER_KEY_NAMES = tuple(c.name for c in ANSWER_KEY)
CRITERION_KEY = (
    _c("author", doc="Username of the author of the checklist the criterion belongs to"),
    _c("criterion", doc="The criterion's external id in that checklist"),
)

# What every judge call keeps (evaluation.models.JudgeCall), in verdicts and grades alike.
CALL_RECORD = (
    _c("raw_output"),
    _c("error_kind"),
    _c("error"),
    _c("prompt_tokens", INT),
    _c("completion_tokens", INT),
    _c("latency_ms", INT),
    _c("attempts", INT),
    _c("cache_hit", BOOL),
    _c("cache_key"),
    _c("judge_params", JSON, "The call's parameters, as recorded with it"),
    _c("created_at", DATETIME),
)

TABLES: tuple[Table, ...] = (
    Table(
        "guidelines",
        (
            _c("name"),
            _c("version", INT),
            _c("description"),
            _c("config", JSON, "The rule settings (docs/guidelines.md)"),
        ),
        doc="The guideline versions the dataset and its checklists use",
    ),
    Table(
        "source_types",
        (_c("slug"), _c("name"), _c("is_banned", BOOL), _c("description")),
        doc="The source types the criteria and citations name (site-wide; matched by slug)",
    ),
    Table(
        "members",
        (_c("username"), _c("role", doc="expert, reviewer or admin")),
        doc="Who holds which role on the dataset",
    ),
    Table(
        "queries",
        (
            _c(
                "external_id",
                doc="Unique in the dataset; every query has one (`query-<id>` unless its "
                "creator gave one)",
            ),
            _c("text"),
            _c("query_date", DATE),
            _c("category", doc="The query category's name (empty: none)"),
            _c("tags", LIST),
            _c("reference_answer"),
            _c("status", doc="open, in_progress or done"),
            _c("assigned_experts", LIST, "Usernames"),
            _c(
                "complexity", doc="simple, moderate or complex, as its author judged (may be empty)"
            ),
            _c("created_by", doc="Username of who added the query (may be empty)"),
            _c(
                "dimensions",
                JSON,
                'Its value on each dimension the dataset declares: {"answer_type": "number"}',
            ),
            _c("id", INT, "The app's id (ignored by the import)"),
        ),
    ),
    Table(
        "checklists",
        (
            _c("query", doc="The query's external id"),
            _c("author", doc="The expert's username; one checklist per query and author"),
            _c("status", doc="draft, submitted or reopened"),
            _c("guideline", doc="Name of the guideline it was submitted under (may be empty)"),
            _c("guideline_version", INT),
            _c("first_submitted_at", DATETIME),
            _c("submitted_at", DATETIME),
            _c(
                "scoring",
                doc="Its own scoring strategy (docs/metrics.md); empty: the dataset's",
            ),
            _c(
                "undecided",
                doc="What its undecided criteria count as, excluded or not_met "
                "(docs/metrics.md#undecided-criteria); empty: the dataset's",
            ),
            _c("id", INT, "The app's id (ignored by the import)"),
        ),
    ),
    Table(
        "groups",
        (
            _c("query"),
            _c("author"),
            _c("external_id", doc="Unique in its checklist; `group-<id>` when none was set"),
            _c("parent", doc="The parent group's external id (empty at the top)"),
            _c("title"),
            _c("description"),
            _c("weight", FLOAT, "Positive: its weight among its siblings (tree scoring)"),
            _c("position", INT),
        ),
        doc="The groups (aspects) of the checklists' criteria, nested through `parent`",
    ),
    Table(
        "criteria",
        (
            _c("query"),
            _c("author"),
            _c("external_id", doc="Unique in its checklist; `criterion-<id>` when none was set"),
            _c("position", INT),
            _c("text"),
            _c("kind", doc="methodology, format or fact"),
            _c("source_types", LIST, "Source type slugs"),
            _c("notes"),
            _c("weight", FLOAT),
            _c("is_core", BOOL),
            _c("scoring_enabled", BOOL),
            _c(
                "archived_at",
                DATETIME,
                "Set when the criterion was deleted or reworded after it carried verdicts, "
                "labels or adjudications: kept with its history, hidden from the checklist",
            ),
            _c(
                "previous_version",
                doc="External id (in the same checklist) of the archived wording this "
                "criterion replaced (empty: none)",
            ),
            _c("group", doc="The external id of its group in the checklist (empty: none)"),
            _c("id", INT, "The app's id (ignored by the import)"),
        ),
    ),
    Table(
        "citations",
        (
            _c("query"),
            _c("author"),
            _c("criterion", doc="The criterion's external id"),
            _c("title"),
            _c("url"),
            _c("source_type", doc="A source type slug (may be empty)"),
            _c("published_on", DATE),
        ),
    ),
    Table(
        "criterion_checks",
        (
            _c("query"),
            _c("author"),
            _c("criterion", doc="The criterion's external id"),
            _c("kind", doc="tool_set, tool_sequence, step_order, keyword_share, rouge1 or empty"),
            _c("params", JSON, "The check's parameters (docs/no-llm-checks.md)"),
            _c("threshold", FLOAT, "Pass at this score or more (empty: the kind's default)"),
            _c("evidence", doc="What an LLM judge decides against: context, reference or empty"),
        ),
        doc="A criterion's deterministic trajectory check and evidence mode (one row per "
        "criterion that has either)",
    ),
    Table(
        "perfect_answers",
        (
            _c("query"),
            _c("author", doc="Author of the checklist the answer satisfies"),
            _c("text"),
            _c("written_by", doc="Username of who wrote or last edited it (may be empty)"),
            _c("drafted_by", doc="Name of the LLM judge that drafted it (may be empty)"),
            _c("draft_prompt_version"),
        ),
    ),
    Table(
        "systems",
        (_c("name"), _c("version"), _c("description")),
        include="answers",
    ),
    Table(
        "answers",
        (
            *ANSWER_KEY[:3],
            _c("run_label"),
            _c("sample", INT, "The sample index, 0 for a system's only answer (empty: 0)"),
            _c("external_id", doc="Your own id for the answer (may be empty)"),
            _c("text"),
            _c("id", INT, "The app's id (ignored by the import)"),
            _c("turns", JSON, "An agent's conversation: turns with tool calls (empty: none)"),
            _c("context", JSON, "The passages the system retrieved (empty: none)"),
            _c("metadata", JSON, "Model, latency, cost, steps… as the system reported them"),
        ),
        include="answers",
    ),
    Table(
        "judges",
        (
            _c("name"),
            _c("kind", doc="llm, no_llm or external"),
            _c("base_url"),
            _c("model"),
            _c("api_key_env", doc="The name of the variable holding the key (never the key)"),
            _c("temperature", FLOAT),
            _c("max_tokens", INT),
            _c("seed", INT),
            _c("timeout", FLOAT),
            _c("prompt_version"),
            _c("context_tokens", INT, "Evidence budget in tokens (docs/judging.md)"),
            _c("instructions", doc="This dataset's instructions for the judge (docs/judging.md)"),
            _c(
                "examples",
                JSON,
                "This dataset's worked examples: criterion, excerpt, decision, reason",
            ),
            _c("criteria_per_call", INT, "1: one call per criterion; k; 0: the whole checklist"),
            _c("token_parameter", doc="max_tokens or max_completion_tokens"),
            _c("response_format", doc="auto, json_schema or json_object"),
            _c("reasoning_effort", doc="Empty (not sent), minimal, low, medium or high"),
            _c(
                "versions",
                JSON,
                "Every tuned prompt version the judge had on this dataset: {version, instructions, "
                "examples}",
            ),
        ),
        include="verdicts",
    ),
    Table(
        "panels",
        (
            _c("name"),
            _c("description"),
            _c("method", doc="majority, unanimity or mean_threshold"),
            _c("threshold", FLOAT),
            _c("graded", BOOL),
            _c("members", JSON, 'A list of {"judge", "samples", "temperatures"}'),
            _c("conversation", doc="last_turn, cumulative or average (docs/judging.md)"),
        ),
        include="verdicts",
    ),
    Table(
        "runs",
        (
            _c("run", doc="The run's key: its name when unique in the dataset, else `run-<id>`"),
            _c("kind", doc="systems, cross_evaluation or imported"),
            _c("panel", doc="The panel's name"),
            _c("status", doc="done, done_with_errors, cancelled or failed"),
            _c("reason", doc="Why the run failed, or a summary of its errors"),
            _c(
                "expected",
                INT,
                "Verdicts the run was to hold (its progress reads held / expected); "
                "missing: the verdicts it holds",
            ),
            _c("answer_run_label"),
            _c(
                "snapshot",
                JSON,
                "The panel as the run started (method, threshold, graded, members with "
                "samples and temperatures): the run's figures are computed with it",
            ),
            _c("created_at", DATETIME),
            _c("finished_at", DATETIME),
            _c(
                "scope",
                doc="all, or labelled: a trial on the items with human labels or "
                "adjudications (docs/trials.md); missing in older exports: all",
            ),
            _c("baseline", doc="A trial's baseline: that run's key, when it is exported too"),
            _c(
                "estimate",
                JSON,
                "The calls, tokens and cost estimated at start (docs/trials.md); {} when none",
            ),
            _c(
                "canary_for",
                doc="A judge canary: the key of the run whose judges it checked "
                "(docs/judging.md#judge-canary); empty for other runs and in older exports",
            ),
            _c(
                "canary_result",
                JSON,
                "A canary's agreement with the human labels, per judge, and the judges named "
                "as changed (`previous`: the previous canary's key); {} for other runs",
            ),
            _c(
                "stability_for",
                doc="A stability pass: the key of the run whose items it graded again "
                "(docs/judging.md#stability-pass); empty for other runs and in older exports",
            ),
        ),
        include="verdicts",
    ),
    Table(
        "verdicts",
        (
            _c("run", doc="The run's key"),
            *ANSWER_KEY,
            *CRITERION_KEY,
            _c("judge", doc="The judge's name"),
            _c("sample", INT),
            _c("outcome", doc="pass, fail, unparseable or error"),
            _c("failure_kind"),
            _c("rationale"),
            *CALL_RECORD,
        ),
        include="verdicts",
    ),
    Table(
        "grades",
        (
            _c("run", doc="The run's key"),
            *ANSWER_KEY,
            _c("judge", doc="The judge's name"),
            _c("sample", INT),
            _c("outcome", doc="scored, unparseable, error or no_reference"),
            _c("score", INT, "The 1–5 rating (empty unless scored)"),
            _c("reasoning"),
            *CALL_RECORD,
        ),
        include="verdicts",
        doc="The 1–5 ratings of runs whose panel is graded (G-Eval style), one per judge "
        "and sample; they never change the checklist score",
    ),
    Table(
        "labels",
        (
            *ANSWER_KEY,
            *CRITERION_KEY,
            _c("rater"),
            _c("label", doc="pass or fail"),
            _c("note"),
            _c("source", doc="app or import"),
            _c("reviewer", doc="Username of the reviewer (may be empty)"),
            _c("created_at", DATETIME),
            _c("updated_at", DATETIME),
        ),
        include="labels",
    ),
    Table(
        "adjudications",
        (
            *ANSWER_KEY,
            *CRITERION_KEY,
            _c("label", doc="pass or fail"),
            _c("reason"),
            _c("decided_by", doc="Username (may be empty)"),
            _c("decided_at", DATETIME),
            _c("version", INT),
        ),
        include="adjudications",
    ),
    Table(
        "pairwise_sessions",
        (
            _c("session", doc="The session's key: its name, or `session-<id>` when two share it"),
            _c("name"),
            _c("system_a", doc="Side A: the system's name"),
            _c("system_a_version"),
            _c("run_label_a", doc="Side A's run label (may be empty)"),
            _c("system_b", doc="Side B: the system's name"),
            _c("system_b_version"),
            _c("run_label_b"),
            _c("reviewers_per_pair", INT, "How many reviewers should vote on each pair"),
            _c("show_checklist", BOOL),
            _c("created_by", doc="Username (may be empty)"),
            _c("created_at", DATETIME),
            _c("id", INT),
        ),
        include="pairwise",
        doc="Blind pairwise preference sessions: two sides (system and run label) compared "
        "pair by pair",
    ),
    Table(
        "pairwise_votes",
        (
            _c("session", doc="The session's key in pairwise_sessions"),
            _c("query", doc="The query's external id: one pair per session and query"),
            _c("system_a", doc="Side A's system (the session's)"),
            _c("system_a_version"),
            _c("run_label_a"),
            _c("answer_a_sample", INT, "Side A's answer: its sample index (empty: 0)"),
            _c("answer_a", doc="Side A's answer: its external id (may be empty)"),
            _c("system_b", doc="Side B's system"),
            _c("system_b_version"),
            _c("run_label_b"),
            _c("answer_b_sample", INT),
            _c("answer_b"),
            _c("voter", doc="reviewer or judge"),
            _c("rater", doc="Who voted: the reviewer's username, or the name an import gave"),
            _c("reviewer", doc="Username of the reviewer (may be empty)"),
            _c("source", doc="A reviewer's vote: app or import"),
            _c(
                "first_is_a",
                BOOL,
                "A reviewer's vote: true when A's answer was shown as Answer 1 (empty: "
                "imported, position unknown)",
            ),
            _c("judge", doc="A judge's reply: the judge's name"),
            _c("sample", INT, "A judge's reply: its sample"),
            _c("order", doc="A judge's reply: ab (A's answer shown first) or ba"),
            _c("outcome", doc="A judge's reply: voted, unparseable or error"),
            _c("preference", doc="a, b or tie, in the sessions' sides (empty: no vote read)"),
            _c("reason", doc="The reviewer's reason, or the judge's rationale"),
            _c("raw_output", doc="A judge's reply as it came"),
            _c("prompt_version"),
            _c("cache_key"),
            _c("prompt_tokens", INT),
            _c("completion_tokens", INT),
            _c("latency_ms", INT),
            _c("voted_at", DATETIME, "When the reviewer voted, or the judge replied"),
        ),
        include="pairwise",
        doc="The cast votes of the pairwise sessions, human and judge, one row each",
    ),
    Table(
        "scores",
        (
            _c("run"),
            *ANSWER_KEY,
            _c("score", FLOAT, "Mean over the query's checklists of the share passed"),
            _c("weighted", FLOAT),
            _c("core", FLOAT),
            _c("undecided", INT, "Criteria with no valid vote, over the query's checklists"),
            _c("split", INT),
            _c("adjudicated", INT),
            _c("passed", BOOL, "Against the dataset's pass threshold (empty: none)"),
            _c("graded", FLOAT, "Mean 1–5 grade (empty: not graded)"),
            _c(
                "scoring",
                STR,
                "The strategy the query's checklists are scored by (several, "
                "comma-separated, when they differ); docs/metrics.md",
            ),
            _c(
                "value",
                FLOAT,
                "Mean over the query's checklists of each one's value under "
                "its strategy: what pass/fail and the analytics read",
            ),
            _c(
                "undecided_as",
                STR,
                "What the undecided criteria counted as in `value` and the shares, "
                "excluded or not_met (several, comma-separated, when they differ)",
            ),
        ),
        include="scores",
        doc="Computed from verdicts and adjudications; never imported",
    ),
    Table(
        "saturated_queries",
        (
            _c("run"),
            _c("query", doc="The query's external id"),
            _c("systems", INT, "Systems of the run that answered it, each scoring 1"),
        ),
        include="scores",
        doc="Queries every system of a run answers fully (too easy: they separate no system; "
        "docs/metrics.md, Saturation). Computed; never imported",
    ),
    Table(
        "overlaps",
        (
            _c("query"),
            _c("a_author", doc="Author of the checklist whose perfect answer was graded"),
            _c("b_author", doc="Author of the checklist whose criteria graded it"),
            _c("is_self", BOOL),
            _c("passed", INT),
            _c("failed", INT),
            _c("undecided", INT),
            _c("total", INT),
            _c("overlap", FLOAT),
            _c("source"),
            _c("run"),
        ),
        include="overlaps",
        doc="Computed from the cross-evaluation runs; never imported",
    ),
)
TABLE = {t.name: t for t in TABLES}
DERIVED = frozenset({"scores", "saturated_queries", "overlaps"})  # exported, never imported


def expand_include(include: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The optional parts asked for plus those they need, in INCLUDES order; ValueError
    names an unknown one."""
    unknown = sorted(set(include) - set(INCLUDES))
    if unknown:
        raise ValueError(f"unknown part {unknown[0]!r}; expected some of {', '.join(INCLUDES)}")
    wanted = set(include)
    for part in list(wanted):
        wanted.update(NEEDS.get(part, ()))
    return tuple(p for p in INCLUDES if p in wanted)


def check_formats(formats: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown or not formats:
        raise ValueError(f"format: expected some of {', '.join(FORMATS)}")
    return tuple(f for f in FORMATS if f in formats)


def tables_for(include: tuple[str, ...]) -> tuple[Table, ...]:
    return tuple(t for t in TABLES if t.include is None or t.include in include)
