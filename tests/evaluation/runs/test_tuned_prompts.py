"""A dataset's instructions and worked examples for a judge in runs (issues 25 and 38): the
tuned prompt
is what the loopback server receives, byte for byte; its version is in the cache key and in
every verdict's provenance; an edit is a new version (new calls) while old verdicts keep
theirs; an untuned judge sends and keys exactly what it always did; the prompt a verdict was
made with is rebuilt from its recorded version; another dataset's runs with the same judge
send none of it."""

from __future__ import annotations

import pytest
from django.db.models import QuerySet

from annotation import services
from evaluation.judges import tuning
from evaluation.judges.models import JudgeVersion
from evaluation.judging import prompts
from evaluation.runs import lifecycle
from evaluation.runs import services as runs
from evaluation.runs.models import Verdict
from evaluation.runs.rebuild import verdict_prompt
from tests.factories import AnswerFactory, PanelFactory, loopback_judges, tune, valid_criteria

pytestmark = pytest.mark.django_db

INSTRUCTIONS = "A figure passes when it matches the filing to the stated precision."
EXAMPLES = [
    {
        "criterion": "States Q2 revenue of $3.9 billion.",
        "excerpt": "Q2 revenue came in at $3.9bn, up 8%.",
        "decision": "pass",
        "reason": "The figure matches at the stated precision.",
    },
    {
        "criterion": "Reports the Q2 operating margin.",
        "excerpt": "Margins improved.",
        "decision": "fail",
        "reason": "No margin figure is given.",
    },
]
EXPECTED_TUNING = (
    "Instructions for this judge (they take precedence on how to read criteria):\n"
    "A figure passes when it matches the filing to the stated precision.\n\n"
    "Worked examples (decisions reviewers made on other answers; read criteria the same way):"
    "\n\n"
    "Example 1\nCriterion: States Q2 revenue of $3.9 billion.\n"
    "Answer excerpt: Q2 revenue came in at $3.9bn, up 8%.\nDecision: pass\n"
    "Reason: The figure matches at the stated precision.\n\n"
    "Example 2\nCriterion: Reports the Q2 operating margin.\nAnswer excerpt: Margins improved."
    "\nDecision: fail\nReason: No margin figure is given."
)


def _setup(query, collaborator, server):
    checklist = services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria(), submit=True
    )
    answer = AnswerFactory(query=query, text="Revenue was $4.12 billion.")
    (judge,) = loopback_judges(server, 1)
    return list(checklist.criteria.order_by("position")), answer, judge


def _run(dataset, judge, owner, answer):
    panel = PanelFactory(judges=[judge])
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    run.refresh_from_db()
    assert run.status == "done"
    return run


def _expected(query, answer, criterion, tuning: str = ""):
    system = prompts.SYSTEM + (f"\n\n{tuning}" if tuning else "")
    user = (
        f"Query (as of {query.query_date.isoformat()}):\n{query.text}\n\nAnswer:\n"
        f"{answer.text}\n\nCriterion: {criterion.text}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _sent(server) -> dict[str, list[dict]]:
    """The messages each call sent, by criterion text."""
    return {
        c.request.last_user_text.rsplit("Criterion: ", 1)[1]: c.request.messages
        for c in server.calls
    }


def test_the_tuned_prompt_is_sent_byte_for_byte_and_versioned(
    dataset, query, collaborator, owner, loopback_openai
):
    criteria, answer, judge = _setup(query, collaborator, loopback_openai)
    tune(judge, dataset, instructions=INSTRUCTIONS, examples=EXAMPLES, by=owner)
    version = tuning.version("verdict-v1", INSTRUCTIONS, EXAMPLES)
    assert version.startswith("verdict-v1+tuned-") and len(version) == len("verdict-v1+tuned-") + 12
    stored = JudgeVersion.objects.get(judge=judge, dataset=dataset, version=version)
    assert (stored.instructions, stored.examples, stored.created_by) == (
        INSTRUCTIONS, EXAMPLES, owner,
    )  # fmt: skip

    run = _run(dataset, judge, owner, answer)
    sent = _sent(loopback_openai)
    assert len(sent) == len(criteria)
    for criterion in criteria:
        assert sent[criterion.text] == _expected(query, answer, criterion, EXPECTED_TUNING)
    member = run.snapshot["members"][0]
    assert member["prompt_version"] == version
    assert "example_items" not in member  # typed examples: no item to leave out
    for verdict in Verdict.objects.filter(run=run):
        assert verdict.judge_params["prompt_version"] == version
        # The prompt is rebuilt from the version the verdict records.
        assert verdict_prompt(verdict) == sent[verdict.criterion.text]


def test_an_untuned_judge_sends_and_keys_what_it_always_did(
    dataset, query, collaborator, owner, loopback_openai
):
    criteria, answer, judge = _setup(query, collaborator, loopback_openai)
    run = _run(dataset, judge, owner, answer)
    sent = _sent(loopback_openai)
    for criterion in criteria:
        assert sent[criterion.text] == _expected(query, answer, criterion)
        verdict = Verdict.objects.get(run=run, criterion=criterion)
        assert verdict.judge_params["prompt_version"] == "verdict-v1"
        assert verdict.cache_key == prompts.cache_key(
            base_url=judge.base_url, model=judge.model, prompt_version="verdict-v1",
            temperature=0.0, max_tokens=judge.max_tokens, seed=None, sample=0,
            query=query.text, query_date=query.query_date, criterion=criterion.text,
            answer=answer.text,
        )  # fmt: skip
    assert run.snapshot["members"][0].keys() == {"judge", "name", "kind", "samples",
                                                 "temperatures"}  # fmt: skip
    assert not JudgeVersion.objects.exists()


def test_an_edit_is_a_new_version_with_new_calls_and_old_verdicts_keep_theirs(
    dataset, query, collaborator, owner, loopback_openai
):
    criteria, answer, judge = _setup(query, collaborator, loopback_openai)
    tune(judge, dataset, instructions=INSTRUCTIONS, examples=EXAMPLES)
    first = _run(dataset, judge, owner, answer)
    assert loopback_openai.call_count == len(criteria)
    old = {v.pk: (v.judge_params, v.cache_key) for v in Verdict.objects.filter(run=first)}

    # Unchanged: the second run reuses every cached verdict.
    same = _run(dataset, judge, owner, answer)
    assert loopback_openai.call_count == len(criteria)
    assert all(v.cache_hit for v in Verdict.objects.filter(run=same))

    # Edited instructions: a new version, new keys, new calls.
    tune(judge, dataset, instructions=INSTRUCTIONS + " Rounding to 0.1 is fine.")
    edited = _run(dataset, judge, owner, answer)
    assert loopback_openai.call_count == 2 * len(criteria)
    new_version = tuning.version("verdict-v1", INSTRUCTIONS + " Rounding to 0.1 is fine.", EXAMPLES)
    verdicts = Verdict.objects.filter(run=edited)
    assert {v.judge_params["prompt_version"] for v in verdicts} == {new_version}
    assert not any(v.cache_hit for v in verdicts)
    assert not {v.cache_key for v in verdicts} & {key for _, key in old.values()}
    # The first run's verdicts are untouched and their prompt is still the old one.
    for verdict in Verdict.objects.filter(run=first):
        assert (verdict.judge_params, verdict.cache_key) == old[verdict.pk]
        assert verdict_prompt(verdict)[0]["content"] == f"{prompts.SYSTEM}\n\n{EXPECTED_TUNING}"
    assert JudgeVersion.objects.filter(judge=judge).count() == 2


def test_a_run_keeps_the_tuning_it_started_with(
    dataset, query, collaborator, owner, loopback_openai
):
    """An edit while a run is running changes nothing of that run's calls."""
    criteria, answer, judge = _setup(query, collaborator, loopback_openai)
    tune(judge, dataset, instructions=INSTRUCTIONS, examples=EXAMPLES)
    panel = PanelFactory(judges=[judge])
    run = runs.run_start(run=runs.run_create(dataset=dataset, panel=panel, by=owner))
    tune(judge, dataset, instructions="Something else entirely.", examples=[])
    lifecycle.run_task(worker="test", run_id=run.pk, answer_id=answer.pk, judge_id=judge.pk)
    for criterion in criteria:
        assert _sent(loopback_openai)[criterion.text] == _expected(
            query, answer, criterion, EXPECTED_TUNING
        )


def test_a_version_row_made_meanwhile_is_read_not_doubled(monkeypatch, dataset, loopback_openai):
    """Two run starts with the same new tuning: the second's insert meets the first's row
    (the unique constraint) and goes on with it."""
    (judge,) = loopback_judges(loopback_openai, 1)
    wanted = tuning.Tuning(tuning.version("verdict-v1", INSTRUCTIONS, []), INSTRUCTIONS)
    JudgeVersion.objects.create(
        judge=judge, dataset=dataset, version=wanted.version, instructions=INSTRUCTIONS
    )
    monkeypatch.setattr(QuerySet, "exists", lambda self: False)  # checked before it was made
    tuning.ensure_version(judge, dataset.pk, wanted)
    monkeypatch.undo()
    assert JudgeVersion.objects.filter(judge=judge).count() == 1


def test_a_judge_tuned_on_one_dataset_grades_another_as_if_untuned(
    dataset, query, collaborator, owner, loopback_openai
):
    """The sealed-dataset rule (issue 38): dataset A's instructions and examples are sent in
    A's runs only; B's run with the same judge sends, keys and records the untuned prompt,
    and B's verdict prompts never read A's version."""
    criteria, answer, judge = _setup(query, collaborator, loopback_openai)
    other = services.dataset_create(name="Other team", by=owner)
    tune(judge, other, instructions="OTHER TEAM RULE", examples=EXAMPLES)
    run = _run(dataset, judge, owner, answer)
    for criterion in criteria:
        assert _sent(loopback_openai)[criterion.text] == _expected(query, answer, criterion)
    assert "prompt_version" not in run.snapshot["members"][0]
    for verdict in Verdict.objects.filter(run=run):
        assert verdict.judge_params["prompt_version"] == "verdict-v1"
        assert "OTHER TEAM RULE" not in str(verdict_prompt(verdict))
    # A verdict claiming the other dataset's version finds no row of its own dataset.
    version = tuning.version("verdict-v1", "OTHER TEAM RULE", EXAMPLES)
    assert JudgeVersion.objects.filter(dataset=other, version=version).exists()
    with pytest.raises(JudgeVersion.DoesNotExist):
        tuning.tuning_of(judge, version, dataset.pk)
