"""A dataset's tuning of its judges travels with its export (issues 25 and 38): the
instructions, examples and the judge's call settings, every tuned prompt version the dataset
had, and the items a run's judges were shown as examples, named by their keys so that on a
fresh installation they name the same items there; on import they become the new dataset's
tuning. Another dataset's tuning of the same judge never leaves with it. A bad version in
the file is refused, naming its row, with nothing written."""

from __future__ import annotations

import json

import pytest

from annotation.models import Dataset
from bench.data_io.generate import generate
from evaluation.answers.models import Answer
from evaluation.datasets.export import export_chunks
from evaluation.datasets.importer import import_dataset
from evaluation.judges import tuning
from evaluation.judges.models import Judge, JudgeTuning, JudgeVersion
from evaluation.runs.models import Run, Verdict
from evaluation.tables.rows import ImportRejected
from tests.evaluation.data.imports import empty_the_database
from tests.evaluation.data.zips import members, write_zip
from tests.factories import tune

pytestmark = pytest.mark.django_db


def tuned_dataset():
    dataset = generate("Tuned", queries=2, systems=2, criteria=3, judges=2)
    run = Run.objects.filter(dataset=dataset).first()
    answer = Answer.objects.filter(query__dataset=dataset, checklist=None).first()
    criterion = answer.query.checklists.first().criteria.first()
    judge = Judge.objects.get(pk=run.snapshot["members"][0]["judge"])
    example = {
        "criterion": criterion.text, "excerpt": answer.text[:200], "decision": "pass",
        "reason": "Stated.", "source": {"adjudication": 1, "answer": answer.pk,
                                         "criterion": criterion.pk},
    }  # fmt: skip
    Judge.objects.filter(pk=judge.pk).update(
        kind=Judge.Kind.LLM,
        criteria_per_call=5,
        token_parameter="max_completion_tokens",
        reasoning_effort="low",
    )
    judge.refresh_from_db()
    row = JudgeTuning.objects.create(
        judge=judge, dataset=dataset, instructions="Figures within 1%.", examples=[example]
    )
    version = tuning.current_from(judge, row).version
    tuning.ensure_version(judge, dataset.pk, tuning.current_from(judge, row))
    # Another dataset tunes the same judge: none of it may leave with this dataset.
    other = Dataset.objects.create(name="Other team")
    tune(judge, other, instructions="OTHER TEAM RULE", examples=[{**example, "reason": "OTHER"}])
    members = run.snapshot["members"]
    members[0] |= {"prompt_version": version, "example_items": [[answer.pk, criterion.pk]]}
    Run.objects.filter(pk=run.pk).update(snapshot={**run.snapshot, "members": members})
    keys = (answer.system.name, answer.query.external_id, criterion.text)
    return dataset, run.name, judge.name, version, keys


def test_tuning_versions_and_example_items_come_back_on_a_fresh_installation(tmp_path):
    dataset, run_name, judge_name, version, (system, query, text) = tuned_dataset()
    data = b"".join(export_chunks(dataset))
    assert not any(b"OTHER TEAM RULE" in body for body in members(data).values())
    exported = json.loads(members(data)["runs.jsonl"].decode().splitlines()[0])
    snapshot = exported["snapshot"]
    snapshot = json.loads(snapshot) if isinstance(snapshot, str) else snapshot
    assert all("example_items" not in m for m in snapshot["members"])  # ids stay home
    path = tmp_path / "tuned.zip"
    path.write_bytes(data)
    empty_the_database()

    copy = import_dataset(path).dataset
    judge = Judge.objects.get(name=judge_name)
    assert (judge.criteria_per_call, judge.token_parameter, judge.reasoning_effort) == (
        5, "max_completion_tokens", "low",
    )  # fmt: skip
    row = tuning.stored(judge, copy.pk)
    assert row.instructions == "Figures within 1%." and row.examples[0]["decision"] == "pass"
    assert JudgeVersion.objects.filter(judge=judge, dataset=copy, version=version).exists()
    assert tuning.tuning_of(judge, version, copy.pk).instructions == "Figures within 1%."
    run = Run.objects.get(dataset=copy, name=run_name)
    member = next(m for m in run.snapshot["members"] if m["name"] == judge_name)
    assert member["judge"] == judge.pk  # the judge of this installation, by its name
    [[answer_id, criterion_id]] = member["example_items"]
    answer = Answer.objects.get(pk=answer_id)
    assert (answer.system.name, answer.query.external_id, answer.query.dataset_id) == (
        system, query, copy.pk,
    )  # fmt: skip
    assert answer.query.checklists.filter(criteria__pk=criterion_id, criteria__text=text).exists()
    assert tuning.excluded_items(run) == {(answer_id, criterion_id)}


def test_a_version_that_does_not_match_its_tuning_is_refused_by_row(tmp_path):
    dataset, *_ = tuned_dataset()
    files = members(b"".join(export_chunks(dataset)))
    rows = [json.loads(x) for x in files["judges.jsonl"].decode().splitlines()]
    tuned_row = next(r for r in rows if r["versions"])
    versions = tuned_row["versions"]
    versions = json.loads(versions) if isinstance(versions, str) else versions
    versions[0]["instructions"] = "Something else."
    tuned_row["versions"] = json.dumps(versions)
    files["judges.jsonl"] = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
    for other in [n for n in files if n.startswith("judges.") and n != "judges.jsonl"]:
        del files[other]
    path = write_zip(tmp_path / "bad.zip", files)
    empty_the_database()
    with pytest.raises(ImportRejected) as refused:
        import_dataset(path)
    assert "judges.jsonl" in str(refused.value) and "does not match" in str(refused.value)
    assert not Judge.objects.exists() and not JudgeVersion.objects.exists()


def test_a_dataset_admins_export_leaves_the_judges_connection_details_out():
    """Base URLs, key variables and what answered when a reply was not a verdict are for
    the people who manage judges (issue 38): the export of a dataset admin who does not
    leaves them out (the judges table, the verdicts' judge_params and raw outputs, on the
    Python and the PostgreSQL paths alike); a site admin's keeps them."""
    from django.contrib.auth.models import Group

    from annotation import roles, services
    from tests.factories import UserFactory

    dataset, *_ = tuned_dataset()
    Judge.objects.update(base_url="https://user-secret.example.com/v1?key=abc")
    admin = UserFactory(username="dataset-admin-only")  # in no site group
    services.dataset_set_role(dataset=dataset, user=admin, role=roles.DatasetRole.ADMIN)

    verdict = Verdict.objects.filter(run__dataset=dataset).first()
    Verdict.objects.filter(pk=verdict.pk).update(
        outcome="unparseable", raw_output="<html>what answered at the base URL</html>",
        judge_params={**verdict.judge_params, "base_url": "https://user-secret.example.com/v1"},
    )  # fmt: skip

    def rows_of(user, table: str = "judges") -> list[dict]:
        files = members(b"".join(export_chunks(dataset, user=user)))
        return [json.loads(x) for x in files[f"{table}.jsonl"].decode().splitlines()]

    def judges_rows(user) -> list[dict]:
        return rows_of(user)

    assert not admin.has_perm("evaluation.change_judge")
    rows = judges_rows(admin)
    assert rows and all(r["base_url"] == "" and r["api_key_env"] == "" for r in rows)
    verdicts = rows_of(admin, "verdicts")
    assert not any("user-secret" in json.dumps(v) for v in verdicts)
    assert not any("what answered" in json.dumps(v) for v in verdicts)
    assert any(v["judge_params"] for v in verdicts)  # the rest of the parameters stay
    admin.groups.add(Group.objects.get(name=roles.Group.ADMIN.value))
    admin = type(admin).objects.get(pk=admin.pk)  # permissions are cached per instance
    assert {r["base_url"] for r in judges_rows(admin)} == {
        "https://user-secret.example.com/v1?key=abc"
    }
    assert any("what answered" in json.dumps(v) for v in rows_of(admin, "verdicts"))
