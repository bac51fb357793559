"""Inputs, configuration and results of guideline validation: frozen dataclasses, no Django.

The Django side converts its rows into `ChecklistInput`/`CriterionInput`, stores a
`GuidelineConfig` as JSON (`to_dict`/`from_dict`) on a versioned guideline row, and shows the
`Report`. Keeping these plain makes validation cheap enough to run on every keystroke.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from types import MappingProxyType
from typing import Any, Literal, get_args

Severity = Literal["error", "warning"]
Scope = Literal["criterion", "checklist"]
Kind = Literal["methodology", "format", "fact"]

SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SCOPES: tuple[Scope, ...] = get_args(Scope)
KINDS: tuple[Kind, ...] = get_args(Kind)


@dataclass(frozen=True)
class CitationInput:
    title: str
    url: str = ""
    source_type: str = ""
    published_on: date | None = None


@dataclass(frozen=True)
class CriterionInput:
    key: str
    text: str
    kind: str  # one of KINDS
    source_types: tuple[str, ...] = ()
    citations: tuple[CitationInput, ...] = ()
    notes: str = ""  # the author's notes; an override of a rule is justified here
    weight: float = 1.0  # negative for a penalty: met when the answer does the bad thing
    in_group: bool | None = None  # in a group (aspect) of its checklist; None: not known

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {self.kind!r}")
        # Callers often hold lists (ORM values, JSON); tuples keep the dataclass hashable.
        object.__setattr__(self, "source_types", tuple(self.source_types))
        object.__setattr__(self, "citations", tuple(self.citations))


@dataclass(frozen=True)
class ChecklistInput:
    criteria: tuple[CriterionInput, ...]
    query_date: date | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "criteria", tuple(self.criteria))
        seen: set[str] = set()
        for criterion in self.criteria:
            # Findings are addressed by key, so two criteria sharing one would be ambiguous.
            if criterion.key in seen:
                raise ValueError(f"criteria: duplicate criterion key {criterion.key!r}")
            seen.add(criterion.key)


@dataclass(frozen=True)
class RuleSetting:
    enabled: bool = True
    severity: Severity | None = None  # None: the rule's default severity

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ValueError(f"enabled: expected true or false, got {self.enabled!r}")
        if self.severity is not None and self.severity not in SEVERITIES:
            raise ValueError(
                f"severity: expected 'error', 'warning' or null, got {self.severity!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "severity": self.severity}

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "rule") -> RuleSetting:
        """Parse {"enabled": bool, "severity": "error" | "warning" | null}; both keys optional.

        `where` prefixes error messages, e.g. "rules.compound".
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object with 'enabled' and 'severity'")
        for key in data:
            if key not in ("enabled", "severity"):
                raise ValueError(f"{where}.{key}: unknown key; expected 'enabled' or 'severity'")
        try:
            return cls(enabled=data.get("enabled", True), severity=data.get("severity"))
        except ValueError as error:
            raise ValueError(f"{where}.{error}") from None


_CONFIG_KEYS = (
    "action_verbs",
    "banned_source_types",
    "min_criteria",
    "max_criteria",
    "max_length",
    "near_duplicate_threshold",
    "rules",  # last: parsed separately
)


@dataclass(frozen=True)
class GuidelineConfig:
    """One version of the guideline: word lists, limits and per-rule settings.

    Rules missing from `rules` are enabled with their default severity, so a config stored
    today keeps working when a later release adds a rule.
    """

    action_verbs: frozenset[str]
    banned_source_types: frozenset[str]
    min_criteria: int
    max_criteria: int
    max_length: int  # characters
    near_duplicate_threshold: float  # 0..1, Jaccard similarity of word sets
    rules: Mapping[str, RuleSetting] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "action_verbs", _word_set("action_verbs", self.action_verbs))
        object.__setattr__(
            self, "banned_source_types", _slug_set("banned_source_types", self.banned_source_types)
        )
        if not self.action_verbs:
            raise ValueError("action_verbs: must list at least one verb")
        for name in ("min_criteria", "max_criteria", "max_length"):
            _check_int(name, getattr(self, name), minimum=1)
        if self.max_criteria < self.min_criteria:
            raise ValueError(
                f"max_criteria: must be at least min_criteria ({self.min_criteria}), "
                f"got {self.max_criteria}"
            )
        _check_threshold(self.near_duplicate_threshold)
        object.__setattr__(self, "rules", MappingProxyType(_rule_settings(self.rules)))

    def __hash__(self) -> int:
        # The generated hash would fail on the rules mapping; a hashable config can key caches.
        return hash(
            (
                self.action_verbs,
                self.banned_source_types,
                self.min_criteria,
                self.max_criteria,
                self.max_length,
                self.near_duplicate_threshold,
                frozenset(self.rules.items()),
            )
        )

    def setting(self, rule_id: str) -> RuleSetting:
        """The setting of one rule; the default setting when the config does not mention it."""
        return self.rules.get(rule_id) or default_setting(rule_id)

    def with_rule(
        self, rule_id: str, *, enabled: bool | None = None, severity: Severity | None = None
    ) -> GuidelineConfig:
        """A copy with one rule switched on/off or given another severity."""
        current = self.setting(rule_id)
        updated = RuleSetting(
            enabled=current.enabled if enabled is None else enabled,
            severity=current.severity if severity is None else severity,
        )
        return replace(self, rules={**self.rules, rule_id: updated})

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; lists are sorted so that equal configs serialise identically."""
        return {
            "action_verbs": sorted(self.action_verbs),
            "banned_source_types": sorted(self.banned_source_types),
            "min_criteria": self.min_criteria,
            "max_criteria": self.max_criteria,
            "max_length": self.max_length,
            "near_duplicate_threshold": self.near_duplicate_threshold,
            "rules": {rule_id: self.rules[rule_id].to_dict() for rule_id in sorted(self.rules)},
        }

    @classmethod
    def from_dict(cls, data: Any, *, base: GuidelineConfig | None = None) -> GuidelineConfig:
        """Parse a stored config; ValueError names the offending field.

        With `base`, missing keys come from it and `rules` entries override its entries one by
        one, so a guideline version can be stored as "the finance preset, but ...".
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"config: expected an object, got {type(data).__name__}")
        unknown = sorted(set(data) - set(_CONFIG_KEYS))
        if unknown:
            raise ValueError(
                f"{unknown[0]}: unknown key; expected one of {', '.join(_CONFIG_KEYS)}"
            )
        values: dict[str, Any] = {}
        for key in _CONFIG_KEYS[:-1]:
            if key in data:
                values[key] = data[key]
            elif base is not None:
                values[key] = getattr(base, key)
            else:
                raise ValueError(f"{key}: missing")
        rules = data.get("rules", {})
        if not isinstance(rules, Mapping):
            raise ValueError(f"rules: expected an object keyed by rule id, got {rules!r}")
        parsed: dict[str, RuleSetting] = dict(base.rules) if base is not None else {}
        for rule_id, setting in rules.items():
            _check_rule_id(rule_id)  # before the setting, so a typo is reported as such
            parsed[rule_id] = RuleSetting.from_dict(setting, where=f"rules.{rule_id}")
        values["rules"] = parsed
        for name in ("action_verbs", "banned_source_types"):
            if isinstance(values[name], str):  # a bare string would become a set of letters
                raise ValueError(f"{name}: expected a list of strings, got a string")
        return cls(**values)


_DEFAULT_SETTING = RuleSetting()

# Rules a config leaves off unless it switches them on: a stored config that does not name
# one keeps working as before when a release adds it (every other rule starts enabled).
OFF_BY_DEFAULT = frozenset({"criterion-in-group"})


def default_setting(rule_id: str) -> RuleSetting:
    """The setting of a rule a config does not mention."""
    return RuleSetting(enabled=False) if rule_id in OFF_BY_DEFAULT else _DEFAULT_SETTING


def _word_set(name: str, values: Iterable[str]) -> frozenset[str]:
    words = _slug_set(name, values)
    for word in words:
        # The action-verb rule compares the first word only, so "breaks down" would never match.
        if not word or any(ch.isspace() for ch in word):
            raise ValueError(f"{name}: each entry must be one word, got {word!r}")
    return words


def _slug_set(name: str, values: Iterable[str]) -> frozenset[str]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ValueError(f"{name}: expected a list of strings, got {values!r}")
    out = set()
    for value in values:
        if not isinstance(value, str):
            raise ValueError(f"{name}: expected strings, got {value!r}")
        out.add(value.strip().casefold())
    return frozenset(out)


def _check_int(name: str, value: Any, *, minimum: int) -> None:
    # bool is an int subclass; "min_criteria": true is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name}: expected a whole number of at least {minimum}, got {value!r}")


def _check_threshold(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(
            f"near_duplicate_threshold: expected a number above 0 and at most 1, got {value!r}"
        )


def _check_rule_id(rule_id: Any) -> None:
    # Imported here because the rule registry imports this module.
    from annotation.validation.rules import RULE_IDS

    if rule_id not in RULE_IDS:
        raise ValueError(
            f"rules.{rule_id}: unknown rule id; known ids: {', '.join(sorted(RULE_IDS))}"
        )


def _rule_settings(rules: Any) -> dict[str, RuleSetting]:
    if not isinstance(rules, Mapping):
        raise ValueError(f"rules: expected an object keyed by rule id, got {rules!r}")
    settings: dict[str, RuleSetting] = {}
    for rule_id, setting in rules.items():
        _check_rule_id(rule_id)
        if not isinstance(setting, RuleSetting):
            raise ValueError(f"rules.{rule_id}: expected a RuleSetting, got {setting!r}")
        settings[rule_id] = setting
    return settings


@dataclass(frozen=True)
class RuleInfo:
    """What the docs and the UI show about a rule."""

    id: str
    title: str
    default_severity: Severity
    scope: Scope

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "title": self.title,
            "default_severity": self.default_severity,
            "scope": self.scope,
        }


@dataclass(frozen=True)
class Issue:
    """What a rule function yields; the engine adds the rule id and the configured severity.

    `criterion_key` is only set by checklist-scope rules that point at one criterion
    (duplicates); criterion-scope rules leave it None and the engine fills it in.
    """

    message: str
    field: str = "text"
    criterion_key: str | None = None


@dataclass(frozen=True)
class Finding:
    rule_id: str
    severity: Severity
    message: str  # says how to fix it
    criterion_key: str | None  # None: about the checklist as a whole
    field: str  # "text", "source_types[0]", "citations[0].published_on", "criteria", ...
    # The criterion's row number in the checklist (1 = first, as the editor shows it) and its
    # text, so that a message read away from its row still says which criterion it is about.
    criterion_number: int | None = None
    criterion_text: str = ""

    @property
    def criterion_label(self) -> str:
        """“Criterion 3 (“States Q3 revenue …”)”, or "" for checklist-level findings."""
        if self.criterion_number is None:
            return ""
        return f"Criterion {self.criterion_number} ({quote(self.criterion_text, 60)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "severity": self.severity,
            "message": self.message,
            "criterion_key": self.criterion_key,
            "criterion_number": self.criterion_number,
            "criterion_text": self.criterion_text,
            "field": self.field,
        }


def quote(value: str, limit: int = 40) -> str:
    """A text in curly quotes on one line, cut to `limit` characters with an ellipsis."""
    value = " ".join(value.split())
    return f"“{value if len(value) <= limit else value[: limit - 1] + '…'}”"


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...] = ()

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == "warning")

    @property
    def blocking(self) -> bool:
        """Whether submission must be refused: only errors block, warnings never do."""
        return any(f.severity == "error" for f in self.findings)

    @property
    def checklist_level(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.criterion_key is None)

    @property
    def rule_ids(self) -> frozenset[str]:
        return frozenset(f.rule_id for f in self.findings)

    def for_criterion(self, key: str) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.criterion_key == key)

    def to_dict(self) -> dict[str, Any]:
        return {"blocking": self.blocking, "findings": [f.to_dict() for f in self.findings]}
