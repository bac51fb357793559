"""Importing human labels and external judges' verdicts (JSONL and CSV): checked whole
first, atomic, errors naming file, line and field, idempotent; the API endpoints and the
management command."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import roles
from annotation.services import dataset_set_role
from evaluation.agreement.selectors import agreement_report
from evaluation.datasets.review_imports import ImportRejected, import_labels, import_verdicts
from evaluation.judges.models import Judge, Panel
from evaluation.labels.models import HumanLabel
from evaluation.runs.models import Run, Verdict
from tests.factories import (
    AnswerFactory,
    CriterionFactory,
    PanelFactory,
    SystemFactory,
    UserFactory,
)
from tests.support.builders import checklisted_query


@pytest.fixture
def items(reviewed_dataset, query):
    """Two answers (systems A and B) to one query with a submitted checklist of 3 criteria."""
    author = UserFactory(username="import-author")
    criteria = checklisted_query(
        query=query, author=author, criteria=3, timestamps=False, save_each=True
    ).criteria
    a = AnswerFactory(system=SystemFactory(name="A"), query=query, external_id="ext-1")
    b = AnswerFactory(system=SystemFactory(name="B"), query=query, run_label="nightly")
    return {"answers": [a, b], "criteria": criteria, "query": query}


def jsonl(rows: list[dict]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def post_labels(client, dataset, rows: list[dict]):
    """POST a JSON-lines labels file to the import endpoint, as `client`."""
    return client.post(
        reverse("api-evaluation:import-labels"),
        {"dataset": dataset.pk, "file": SimpleUploadedFile("l.jsonl", jsonl(rows).encode())},
        format="multipart",
    )


def post_verdicts(client, dataset, rows: list[dict], *, panel: str):
    """POST a JSON-lines verdicts file into `panel`, as `client`."""
    file = SimpleUploadedFile("v.jsonl", jsonl(rows).encode())
    return client.post(
        reverse("api-evaluation:import-verdicts"),
        {"dataset": dataset.pk, "panel": panel, "file": file},
        format="multipart",
    )


def test_labels_csv_import_is_idempotent_and_links_members(items, reviewed_dataset, reviewer):
    a, b = items["answers"]
    c0, c1, _ = items["criteria"]
    q = items["query"].pk
    content = (
        "answer,system,query,run_label,external_id,criterion,rater,label,note\n"
        f"{a.pk},,,,,{c0.pk},reviewer,pass,looks right\n"
        f",B,{q},nightly,,{c0.pk},reviewer,FAIL,\n"
        f",A,,,ext-1,{c1.pk},outside-rater,fail,\n"
    )
    result = import_labels(dataset=reviewed_dataset, name="labels.csv", content=content)
    assert (result.created, result.updated, result.raters, result.linked_to_users) == (3, 0, 2, 1)
    stored = {(h.answer_id, h.criterion_id, h.rater): h for h in HumanLabel.objects.all()}
    assert stored[a.pk, c0.pk, "reviewer"].reviewer == reviewer
    assert stored[a.pk, c0.pk, "reviewer"].note == "looks right"
    assert stored[b.pk, c0.pk, "reviewer"].label == "fail"
    assert stored[a.pk, c1.pk, "outside-rater"].reviewer is None
    assert {h.source for h in stored.values()} == {HumanLabel.Source.IMPORT}
    again = import_labels(dataset=reviewed_dataset, name="labels.csv", content=content)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 3)
    changed = content.replace("outside-rater,fail", "outside-rater,pass")
    assert import_labels(dataset=reviewed_dataset, name="labels.csv", content=changed).updated == 1
    assert HumanLabel.objects.count() == 3


def test_a_bad_labels_file_names_every_error_and_writes_nothing(items, reviewed_dataset, owner):
    from annotation.services import dataset_create

    a, b = items["answers"]
    c0 = items["criteria"][0]
    other = CriterionFactory()  # another dataset's criterion (its checklist is a draft too)
    content = jsonl(
        [
            {"answer": a.pk, "criterion": c0.pk, "rater": "r1", "label": "pass"},
            {"answer": a.pk, "criterion": c0.pk, "rater": "r1", "label": "fail"},
            {"answer": a.pk, "criterion": c0.pk, "rater": "r2", "label": "maybe"},
            {"answer": 999999, "criterion": c0.pk, "rater": "r3", "label": "pass"},
            {"answer": a.pk, "criterion": other.pk, "rater": "r3", "label": "pass"},
            {"criterion": c0.pk, "rater": "r3", "label": "pass"},
            {"answer": b.pk, "criterion": c0.pk, "label": "pass"},
        ]
    )
    with pytest.raises(ImportRejected) as rejected:
        import_labels(dataset=reviewed_dataset, name="labels.jsonl", content=content)
    errors = rejected.value.errors
    assert errors == [
        "labels.jsonl:2: same item and rater as line 1; one label each",
        "labels.jsonl:3: field 'label' must be one of pass, fail",
        "labels.jsonl:4: field 'answer': no answer '999999' in this dataset",
        f"labels.jsonl:5: field 'criterion': no criterion '{other.pk}' in a submitted "
        "checklist of this dataset",
        "labels.jsonl:6: field 'answer' is required (or 'system' with 'query' or 'external_id')",
        "labels.jsonl:7: field 'rater' is required",
    ]
    assert not HumanLabel.objects.exists()
    with pytest.raises(ImportRejected, match="not valid JSON"):
        import_labels(dataset=reviewed_dataset, name="x.jsonl", content="{not json\n")
    with pytest.raises(ImportRejected, match="no rows"):
        import_labels(dataset=reviewed_dataset, name="x.csv", content="answer,criterion\n")
    second = dataset_create(name="Second", by=owner)
    with pytest.raises(ImportRejected, match="no answer"):
        import_labels(dataset=second, name="labels.jsonl", content=content.splitlines()[0])


def test_a_criterion_of_another_query_is_refused(items, reviewed_dataset):
    (foreign,) = checklisted_query(
        reviewed_dataset, author=UserFactory(), criteria=1, timestamps=False, save_each=True
    ).criteria
    a = items["answers"][0]
    row = {"answer": a.pk, "criterion": foreign.pk, "rater": "r", "label": "pass"}
    with pytest.raises(ImportRejected, match="belongs to another query"):
        import_labels(dataset=reviewed_dataset, name="l.jsonl", content=jsonl([row]))


def verdict_rows(items) -> list[dict]:
    a, b = items["answers"]
    rows = []
    outcomes = {
        "ext-1": ["pass", "pass", "fail"],
        "ext-2": ["fail", "fail", "fail"],
        "ext-3": ["pass", "unparseable", "fail"],
    }
    for answer in (a, b):
        for n, criterion in enumerate(items["criteria"]):
            for judge, values in outcomes.items():
                rows.append(
                    {
                        "answer": answer.pk,
                        "criterion": criterion.pk,
                        "judge": judge,
                        "outcome": values[n],
                        "rationale": f"{judge} says {values[n]}",
                    }
                )
    return rows


def test_verdicts_import_builds_an_imported_run_and_its_panel_aggregates(items, reviewed_dataset):
    rows = verdict_rows(items)
    result = import_verdicts(
        dataset=reviewed_dataset, name="v.jsonl", content=jsonl(rows), panel="Vendor panel"
    )
    assert (result.run_created, result.panel_created, result.judges_created) == (True, True, 3)
    assert result.created == len(rows) == 18
    run = Run.objects.get(pk=result.run_id)
    assert (run.kind, run.status, run.expected) == (Run.Kind.IMPORTED, Run.Status.DONE, 18)
    panel = Panel.objects.get(name="Vendor panel")
    assert run.panel == panel and panel.method == Panel.Method.MAJORITY
    assert set(Judge.objects.filter(panels=panel).values_list("kind", flat=True)) == {"external"}
    # Human labels: all pass. Panel majority per criterion: pass, fail, undecided (1–1).
    a, b = items["answers"]
    labels = [
        {"answer": ans.pk, "criterion": c.pk, "rater": "r", "label": "pass"}
        for ans in (a, b)
        for c in items["criteria"]
    ]
    import_labels(dataset=reviewed_dataset, name="l.jsonl", content=jsonl(labels))
    report = agreement_report(reviewed_dataset, run.pk)
    assert report.overall.agreement.n == 4 and report.overall.agreement.agree == 2
    assert report.counts.panel_undecided == 2 and report.counts.invalid_votes == 2
    assert {f.key.value: f.agreement.agree for f in report.judges} == {
        "ext-1": 4,
        "ext-2": 0,
        "ext-3": 2,
    }
    again = import_verdicts(
        dataset=reviewed_dataset, name="v.jsonl", content=jsonl(rows), panel="Vendor panel"
    )
    assert (again.run_created, again.created, again.updated, again.unchanged) == (False, 0, 0, 18)
    assert Verdict.objects.count() == 18


def test_verdicts_csv_with_samples_and_errors(items, reviewed_dataset):
    a = items["answers"][0]
    c = items["criteria"][0]
    Judge.objects.create(name="gpt-live", base_url="http://x.test/v1", model="m")
    content = (
        "answer,criterion,judge,sample,outcome,failure_kind\n"
        f"{a.pk},{c.pk},solo,0,pass,\n"
        f"{a.pk},{c.pk},solo,1,fail,missing\n"
        f"{a.pk},{c.pk},solo,2,fail,wrongish\n"
        f"{a.pk},{c.pk},gpt-live,0,pass,\n"
        f"{a.pk},{c.pk},solo,x,pass,\n"
        f"{a.pk},{c.pk},solo,1,pass,\n"
        f"{a.pk},{c.pk},,0,maybe,\n"
    )
    with pytest.raises(ImportRejected) as rejected:
        import_verdicts(dataset=reviewed_dataset, name="v.csv", content=content, panel="P")
    assert rejected.value.errors == [
        "v.csv:4: field 'failure_kind' must be empty or one of missing, incorrect, "
        "ambiguous, incomplete",
        "v.csv:5: field 'judge': 'gpt-live' is an existing llm judge; imported verdicts need "
        "an external judge (use another name)",
        "v.csv:6: field 'sample' must be a whole number from 0 to 1000",
        "v.csv:7: same item, judge and sample as line 3; one verdict each",
        "v.csv:8: field 'judge' is required",
        "v.csv:8: field 'outcome' must be one of pass, fail, unparseable, error",
    ]
    assert not Run.objects.exists() and not Panel.objects.filter(name="P").exists()
    good = "\n".join(content.splitlines()[:3]) + "\n"
    result = import_verdicts(dataset=reviewed_dataset, name="v.csv", content=good, panel="P")
    assert result.created == 2
    assert Panel.objects.get(name="P").members.get().samples == 2


def test_an_existing_llm_panel_is_not_extended(items, reviewed_dataset):
    llm = Judge.objects.create(name="gpt-live", base_url="http://x.test/v1", model="m")
    PanelFactory(name="LLM panel", judges=[llm])
    a, c = items["answers"][0], items["criteria"][0]
    row = {"answer": a.pk, "criterion": c.pk, "judge": "ext", "outcome": "pass"}
    with pytest.raises(ImportRejected, match="not external"):
        import_verdicts(
            dataset=reviewed_dataset, name="v.jsonl", content=jsonl([row]), panel="LLM panel"
        )


@pytest.mark.parametrize(
    ("client_name", "expected"),
    [("owner_api", 201), ("reviewer_api", 403), ("collaborator_api", 403), ("outsider_api", 404)],
)
def test_import_endpoints_are_for_dataset_admins(
    items, reviewed_dataset, request, client_name, expected
):
    client = request.getfixturevalue(client_name)
    a, c = items["answers"][0], items["criteria"][0]
    labels = [{"answer": a.pk, "criterion": c.pk, "rater": "r", "label": "pass"}]
    response = post_labels(client, reviewed_dataset, labels)
    assert response.status_code == expected
    verdicts = [{"answer": a.pk, "criterion": c.pk, "judge": "ext", "outcome": "fail"}]
    response = post_verdicts(client, reviewed_dataset, verdicts, panel="API panel")
    assert response.status_code == expected
    if expected == 201:
        assert response.json()["created"] == 1 and response.json()["run_created"] is True


def test_a_dataset_admin_without_judge_rights_may_import_labels_but_not_verdicts(
    items, reviewed_dataset
):
    expert_admin = UserFactory(username="expert-admin")  # no site-wide Admin group
    dataset_set_role(dataset=reviewed_dataset, user=expert_admin, role=roles.DatasetRole.ADMIN)
    client = APIClient()
    client.force_authenticate(expert_admin)
    a, c = items["answers"][0], items["criteria"][0]
    labels = [{"answer": a.pk, "criterion": c.pk, "rater": "r", "label": "pass"}]
    response = post_labels(client, reviewed_dataset, labels)
    assert response.status_code == 201
    verdicts = [{"answer": a.pk, "criterion": c.pk, "judge": "new-ext", "outcome": "fail"}]
    response = post_verdicts(client, reviewed_dataset, verdicts, panel="Their panel")
    assert response.status_code == 403
    assert "add judges and panels" in response.json()["detail"]
    assert not Judge.objects.filter(name="new-ext").exists()


def test_import_endpoint_lists_the_errors(items, reviewed_dataset, owner_api):
    bad = [{"answer": items["answers"][0].pk, "criterion": 0, "rater": "r", "label": "x"}]
    response = post_labels(owner_api, reviewed_dataset, bad)
    assert response.status_code == 400
    assert response.json()["file"] == [
        "l.jsonl:1: field 'criterion': no criterion '0' in a submitted checklist of this dataset",
        "l.jsonl:1: field 'label' must be one of pass, fail",
    ]
    assert not HumanLabel.objects.exists()


def test_command_imports_labels_and_verdicts(items, reviewed_dataset, tmp_path, capsys):
    a, c = items["answers"][0], items["criteria"][0]
    labels = tmp_path / "labels.jsonl"
    labels.write_text(jsonl([{"answer": a.pk, "criterion": c.pk, "rater": "r", "label": "pass"}]))
    call_command("import_review", "labels", str(labels), "--dataset", str(reviewed_dataset.pk))
    assert "1 new" in capsys.readouterr().out
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(jsonl([{"answer": a.pk, "criterion": c.pk, "judge": "e", "outcome": "x"}]))
    with pytest.raises(CommandError, match=r"verdicts\.jsonl:1: field 'outcome'"):
        call_command(
            "import_review", "verdicts", str(verdicts), "--dataset", str(reviewed_dataset.pk),
            "--panel", "Cmd panel",
        )  # fmt: skip


def test_reviewer_link_needs_membership(items, reviewed_dataset, reviewer):
    dataset_set_role(dataset=reviewed_dataset, user=reviewer, role=None)
    a, c = items["answers"][0], items["criteria"][0]
    row = {"answer": a.pk, "criterion": c.pk, "rater": "reviewer", "label": "pass"}
    import_labels(dataset=reviewed_dataset, name="l.jsonl", content=jsonl([row]))
    assert HumanLabel.objects.get().reviewer is None
    dataset_set_role(dataset=reviewed_dataset, user=reviewer, role=roles.DatasetRole.REVIEWER)
    import_labels(dataset=reviewed_dataset, name="l.jsonl", content=jsonl([row]))
    assert HumanLabel.objects.get().reviewer == reviewer
