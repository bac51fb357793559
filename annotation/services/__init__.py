"""Writes. Each service changes state in one transaction and checks its own preconditions.

Callers (views, API, tasks, commands) check access first with annotation.access.
"""

from __future__ import annotations

from annotation.services.checklists import (
    ChecklistExists,
    ChecklistNotEditable,
    ChecklistRejected,
    CriterionArchived,
    CriterionWork,
    checklist_create_with_criteria,
    checklist_reopen,
    checklist_set_scoring,
    checklist_start,
    checklist_submit,
    citation_add,
    citation_delete,
    criteria_work,
    criterion_add,
    criterion_delete,
    criterion_move,
    criterion_replace_citations,
    criterion_update,
    criterion_work,
)
from annotation.services.datasets import (
    dataset_create,
    dataset_delete,
    dataset_set_role,
    dataset_update,
    query_assign_experts,
    query_create,
    query_delete,
    query_update,
    role_groups_sync,
)
from annotation.services.guidelines import (
    GuidelineInvalid,
    GuidelineSaved,
    guideline_config,
    guideline_create,
    guideline_in_use,
    guideline_update,
)

__all__ = [
    "ChecklistExists",
    "ChecklistNotEditable",
    "ChecklistRejected",
    "CriterionArchived",
    "CriterionWork",
    "GuidelineInvalid",
    "GuidelineSaved",
    "checklist_create_with_criteria",
    "checklist_reopen",
    "checklist_set_scoring",
    "checklist_start",
    "checklist_submit",
    "citation_add",
    "citation_delete",
    "criteria_work",
    "criterion_add",
    "criterion_delete",
    "criterion_move",
    "criterion_replace_citations",
    "criterion_update",
    "criterion_work",
    "dataset_create",
    "dataset_delete",
    "dataset_set_role",
    "dataset_update",
    "guideline_config",
    "guideline_create",
    "guideline_in_use",
    "guideline_update",
    "query_assign_experts",
    "query_create",
    "query_delete",
    "query_update",
    "role_groups_sync",
]
