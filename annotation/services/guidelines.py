"""Creating and editing guidelines: the one place that checks a guideline's settings, for the
pages and the API alike.

A version under which checklists were submitted is never changed, because those checklists
were validated against it (Checklist.guideline). Editing such a version saves the next
version instead, and the datasets that used the edited version move to it, so that their
editors validate against the new rules at once. Submitted checklists keep their status and
the version they were submitted under; the new rules' findings show the next time their
editor opens, and they apply when a checklist is reopened and submitted again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from django.db import transaction
from django.db.models import Max

from annotation.models import Dataset, Guideline, SourceType
from annotation.validation import PRESETS, GuidelineConfig
from annotation.validation.types import default_setting


class GuidelineInvalid(ValueError):
    """Settings that cannot be saved, by field: `name`, `description`, `preset`, or a path in
    the config (`config.max_criteria`, `config.rules.compound.severity`)."""

    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{field}: {message}" for field, message in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class GuidelineSaved:
    guideline: Guideline
    new_version: bool  # the edited version had submitted checklists: a new version was saved
    datasets_moved: tuple[str, ...] = ()  # names of the datasets moved to the new version


def _config_error(exc: Exception) -> GuidelineInvalid:
    # GuidelineConfig's messages start with the offending path: "max_criteria: must be …".
    path, _, message = str(exc).partition(": ")
    if not message or " " in path:
        path, message = "config", str(exc)
    return GuidelineInvalid({f"config.{path}" if path != "config" else "config": message})


def guideline_config(
    config: Mapping[str, Any] | None = None,
    *,
    preset: str | None = None,
    base: GuidelineConfig | None = None,
) -> GuidelineConfig:
    """Parse settings into a GuidelineConfig, or raise GuidelineInvalid naming the field.

    `config` may be partial when there is a starting point: a preset by name, or `base` (the
    version being edited). Missing keys come from it; `rules` entries override one by one.
    Banned source types must be source types this installation knows (a typo in a slug would
    silently ban nothing).
    """
    if preset:
        if preset not in PRESETS:
            raise GuidelineInvalid(
                {"preset": f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}"}
            )
        base = PRESETS[preset]
    try:
        parsed = GuidelineConfig.from_dict(config or {}, base=base)
    except (ValueError, TypeError) as exc:
        raise _config_error(exc) from None
    # A rule left at its default is not stored, so that a page (which sends every rule) and
    # the API (which sends the changes) save the same config for the same settings.
    parsed = replace(
        parsed, rules={k: v for k, v in parsed.rules.items() if v != default_setting(k)}
    )
    known = set(SourceType.objects.values_list("slug", flat=True))
    unknown = sorted(parsed.banned_source_types - known)
    if unknown:
        raise GuidelineInvalid(
            {
                "config.banned_source_types": f"no source type {unknown[0]!r}; known: "
                + ", ".join(sorted(known))
            }
        )
    return parsed


def _check_name(name: str) -> None:
    if not name:
        raise GuidelineInvalid({"name": "required"})
    if len(name) > Guideline._meta.get_field("name").max_length:
        raise GuidelineInvalid({"name": "at most 100 characters"})


@transaction.atomic
def guideline_create(
    *,
    name: str,
    description: str = "",
    config: Mapping[str, Any] | None = None,
    preset: str | None = None,
) -> Guideline:
    """Version 1 of a new guideline, from a preset (`config` overriding it) or a full config."""
    name = name.strip()
    _check_name(name)
    if Guideline.objects.filter(name=name).exists():
        raise GuidelineInvalid(
            {"name": f"a guideline called {name!r} exists; edit it to make a new version"}
        )
    parsed = guideline_config(config, preset=preset)
    return Guideline.objects.create(
        name=name, version=1, description=description, config=parsed.to_dict()
    )


def guideline_in_use(guideline: Guideline) -> tuple[int, list[Dataset]]:
    """Checklists submitted under this version, and the datasets that use it."""
    return guideline.checklists.count(), list(guideline.datasets.order_by("name"))


@transaction.atomic
def guideline_update(
    *,
    guideline: Guideline,
    description: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> GuidelineSaved:
    """Change a guideline's description and rules; `config` may be partial (missing keys keep
    their value). A version with submitted checklists gets a successor instead (see above)."""
    guideline = Guideline.objects.select_for_update().get(pk=guideline.pk)
    current = GuidelineConfig.from_dict(guideline.config)
    parsed = guideline_config(config, base=current)
    description = guideline.description if description is None else description
    if parsed.to_dict() == current.to_dict() and description == guideline.description:
        return GuidelineSaved(guideline, new_version=False)
    if not guideline.checklists.exists():
        guideline.description = description
        guideline.config = parsed.to_dict()
        guideline.save(update_fields=["description", "config"])
        return GuidelineSaved(guideline, new_version=False)
    newest = Guideline.objects.filter(name=guideline.name).aggregate(v=Max("version"))["v"]
    successor = Guideline.objects.create(
        name=guideline.name,
        version=newest + 1,
        description=description,
        config=parsed.to_dict(),
    )
    datasets = list(guideline.datasets.order_by("name").values_list("name", flat=True))
    guideline.datasets.update(guideline=successor)
    return GuidelineSaved(successor, new_version=True, datasets_moved=tuple(datasets))
