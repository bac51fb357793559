"""One check of a scoring choice (annotation.scoring) wherever it is made: `tree` takes
positive criterion weights only, so a penalty (a negative weight) or a weight of 0 under
`tree` is refused on the settings page, by PATCH /api/datasets/{id}/, in the checklist
editor, by the criteria and checklist API and by the dataset import; the error names the
field and the criterion, and nothing changes."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.urls import reverse

from annotation import scoring, services
from annotation.models import Checklist, Criterion
from evaluation.datasets.importer import ImportOptions, ImportRejected, import_dataset
from tests.annotation.test_checklist_api import payload
from tests.evaluation.data.test_rubric_import import files, write
from tests.factories import valid_criteria

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
REFUSED = ("-1", "0")  # a penalty, a weight of 0


def test_tree_takes_positive_weights_only_and_the_others_any():
    assert scoring.weight_problem("tree", -2) is not None
    assert scoring.weight_problem("tree", Decimal("0")) is not None
    assert scoring.weight_problem("tree", Decimal("0.01")) is None
    for strategy in ("share", "weighted", "concept", "aspect", "blend", "points"):
        assert scoring.weight_problem(strategy, -2) is None, strategy
        assert scoring.weight_problem(strategy, 0) is None, strategy
    with pytest.raises(scoring.ScoringRefused) as refused:
        scoring.validate_scoring("tree", [("c1", 1), ("c2", -2), ("c3", 0)], field="weight")
    assert (refused.value.field, refused.value.criterion) == ("weight", "c2")
    assert refused.value.message_dict == {"weight": [f"c2: {refused.value.problem}"]}
    assert "penalty" in refused.value.problem


def test_the_choices_are_the_strategies_metrics_defines():
    from annotation.models import Scoring
    from evaluation.metrics import rubrics

    assert set(Scoring.values) == set(rubrics.STRATEGIES)
    assert scoring.strategy_of("", "") == rubrics.DEFAULT_STRATEGY
    assert scoring.strategy_of("points", "") == "points"
    assert scoring.strategy_of("points", "tree") == "tree"
    assert set(rubrics.STRATEGIES) >= scoring.POSITIVE_WEIGHTS_ONLY


@pytest.fixture
def checklist(query, collaborator):
    return services.checklist_create_with_criteria(
        query=query, by=collaborator, criteria=valid_criteria()
    )


def _weigh(checklist: Checklist, position: int, weight: str) -> Criterion:
    criterion = checklist.criteria.get(position=position)
    Criterion.objects.filter(pk=criterion.pk).update(weight=Decimal(weight))
    return criterion


# --- the dataset's strategy: settings page and API ------------------------------------------


@pytest.mark.parametrize("weight", REFUSED)
def test_patch_dataset_to_tree_refuses_a_penalty_or_zero_weight(
    owner_api, dataset, checklist, weight
):
    criterion = _weigh(checklist, 3, weight)
    response = owner_api.patch(f"/api/datasets/{dataset.pk}/", {"scoring": "tree"}, format="json")
    assert response.status_code == 400, response.content
    (message,) = response.json()["scoring"]
    assert f"criterion 3 (id {criterion.pk}) of checklist {checklist.pk}" in message
    assert "tree" in message
    dataset.refresh_from_db()
    assert dataset.scoring == "share"
    # Another strategy takes it; a checklist with a strategy of its own does not follow the
    # dataset's, so tree is then accepted.
    ok = owner_api.patch(f"/api/datasets/{dataset.pk}/", {"scoring": "points"}, format="json")
    assert ok.status_code == 200 and ok.json()["scoring"] == "points"
    Checklist.objects.filter(pk=checklist.pk).update(scoring="points")
    ok = owner_api.patch(f"/api/datasets/{dataset.pk}/", {"scoring": "tree"}, format="json")
    assert ok.status_code == 200 and ok.json()["scoring"] == "tree"


def test_patch_dataset_to_tree_with_positive_weights_is_accepted(owner_api, dataset, checklist):
    response = owner_api.patch(f"/api/datasets/{dataset.pk}/", {"scoring": "tree"}, format="json")
    assert response.status_code == 200
    dataset.refresh_from_db()
    assert dataset.scoring == "tree"


@pytest.mark.parametrize("weight", REFUSED)
def test_settings_page_refuses_tree_over_a_penalty_or_zero_weight(
    client, owner, dataset, checklist, weight
):
    _weigh(checklist, 2, weight)
    client.force_login(owner)
    url = reverse("dataset-edit", args=[dataset.pk])
    base = {"name": "Renamed", "experts_per_query": 2, "label_policy": "all", "label_share": 1}
    response = client.post(url, {**base, "scoring": "tree"})
    assert response.status_code == 200
    (message,) = response.context["form"].errors["scoring"]
    assert "criterion 2" in message
    dataset.refresh_from_db()
    assert (dataset.scoring, dataset.name) == ("share", "Owner dataset")  # nothing saved
    assert client.post(url, {**base, "scoring": "points"}).status_code == 302


# --- a criterion's weight: editor and API -----------------------------------------------------


@pytest.fixture
def tree_checklist(dataset, checklist):
    services.dataset_update(dataset=dataset, scoring="tree")
    return checklist


@pytest.mark.parametrize("weight", REFUSED)
def test_editor_refuses_a_penalty_or_zero_weight_under_tree(
    client, collaborator, tree_checklist, weight
):
    client.force_login(collaborator)
    criterion = tree_checklist.criteria.get(position=2)
    url = reverse("criterion-update", args=[criterion.pk])
    data = {"text": "Reports the Q3 revenue.", "kind": "fact", "weight": weight, "is_core": "on"}
    response = client.post(url, data, **HTMX)
    assert response.status_code == 200
    assert "criterion 2: " in response.content.decode()
    criterion.refresh_from_db()
    assert (criterion.weight, criterion.text) == (Decimal(1), "States Q3 revenue of $4.12 billion.")
    # Without htmx: the page says why, and nothing is saved either.
    response = client.post(url, data)
    assert response.status_code == 302
    criterion.refresh_from_db()
    assert criterion.weight == Decimal(1)
    # A positive weight is saved.
    client.post(url, {**data, "weight": "2.5"}, **HTMX)
    criterion.refresh_from_db()
    assert criterion.weight == Decimal("2.5")


@pytest.mark.parametrize("weight", REFUSED)
def test_criteria_api_refuses_a_penalty_or_zero_weight_under_tree(
    collaborator_api, tree_checklist, weight
):
    criterion = tree_checklist.criteria.get(position=4)
    response = collaborator_api.patch(f"/api/criteria/{criterion.pk}/", {"weight": weight})
    assert response.status_code == 400
    (message,) = response.json()["weight"]
    assert message.startswith("criterion 4: ") and "tree" in message
    criterion.refresh_from_db()
    assert criterion.weight == Decimal(1)
    created = collaborator_api.post(
        "/api/criteria/",
        {"checklist": tree_checklist.pk, "text": "States the margin.", "weight": weight},
    )
    assert created.status_code == 400 and "weight" in created.json()
    assert tree_checklist.criteria.count() == 6


def test_criteria_api_takes_a_penalty_under_points(collaborator_api, dataset, checklist):
    services.dataset_update(dataset=dataset, scoring="points")
    criterion = checklist.criteria.get(position=4)
    response = collaborator_api.patch(f"/api/criteria/{criterion.pk}/", {"weight": "-2"})
    assert response.status_code == 200 and response.json()["weight"] == "-2.00"


@pytest.mark.parametrize("weight", REFUSED)
def test_checklist_api_refuses_a_penalty_or_zero_weight_under_tree(
    collaborator_api, dataset, query, weight
):
    services.dataset_update(dataset=dataset, scoring="tree")
    data = payload(query)
    data["criteria"][2]["weight"] = weight
    response = collaborator_api.post("/api/checklists/", data, format="json")
    assert response.status_code == 400
    (message,) = response.json()["weight"]
    assert message.startswith("criteria[2]: ")
    assert not Checklist.objects.exists()


# --- the dataset import ------------------------------------------------------------------------


def test_import_refuses_a_zero_weight_under_tree(tmp_path):
    tables = files()
    tables["criteria"][1] = {**tables["criteria"][1], "weight": 0}
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(write(tmp_path, tables))
    assert any(e.startswith("criteria.jsonl:2: field 'weight': a weight of 0") for e in
               rejected.value.errors), rejected.value.errors  # fmt: skip


def test_import_refuses_tree_over_a_stored_penalty_and_changes_nothing(tmp_path):
    dataset = import_dataset(write(tmp_path, files(scoring="points"))).dataset
    stored = Criterion.objects.get(checklist__query__dataset=dataset, external_id="c6")
    Criterion.objects.filter(pk=stored.pk).update(weight=-1)
    # The files again without c6, asking for tree: c6 stays in the dataset, a penalty.
    tables = files(scoring="tree")
    tables["criteria"] = tables["criteria"][:5]
    tables["verdicts"] = tables["verdicts"][:5]
    again = tmp_path / "again"
    again.mkdir()
    with pytest.raises(ImportRejected) as rejected:
        import_dataset(write(again, tables), ImportOptions(dataset=dataset))
    assert any(e.startswith("criterion 'c6' already in the dataset: field 'weight': a penalty")
               for e in rejected.value.errors), rejected.value.errors  # fmt: skip
    dataset.refresh_from_db()
    assert dataset.scoring == "points"


# --- the Django admin ----------------------------------------------------------------------


def _admin_request(rf):
    from tests.factories import UserFactory

    request = rf.post("/")
    request.user = UserFactory(username="root", is_staff=True, is_superuser=True)
    return request


def test_admin_refuses_tree_over_a_penalty_for_a_dataset(dataset, checklist):
    from django.forms.models import model_to_dict

    from annotation.admin import DatasetAdminForm

    _weigh(checklist, 2, "-1")
    data = {k: v for k, v in model_to_dict(dataset).items() if v is not None}
    form = DatasetAdminForm({**data, "scoring": "tree"}, instance=dataset)
    assert not form.is_valid()
    assert "criterion 2" in form.errors["scoring"][0]
    assert DatasetAdminForm({**data, "scoring": "points"}, instance=dataset).is_valid()


@pytest.mark.parametrize("weight", REFUSED)
def test_admin_refuses_a_penalty_or_zero_weight_in_a_tree_checklist(rf, checklist, weight):
    from django.contrib import admin

    from annotation.admin import CriterionInline

    Checklist.objects.filter(pk=checklist.pk).update(scoring="tree")
    checklist.refresh_from_db()
    formset_class = CriterionInline(Checklist, admin.site).get_formset(
        _admin_request(rf), checklist
    )
    prefix = formset_class.get_default_prefix()
    criteria = list(checklist.criteria.order_by("position"))
    data = {f"{prefix}-TOTAL_FORMS": len(criteria), f"{prefix}-INITIAL_FORMS": len(criteria),
            f"{prefix}-MIN_NUM_FORMS": 0, f"{prefix}-MAX_NUM_FORMS": 1000}  # fmt: skip
    for n, c in enumerate(criteria):
        row = {"id": c.pk, "checklist": checklist.pk, "position": c.position, "text": c.text,
               "kind": c.kind, "weight": str(c.weight), "is_core": "on",
               "scoring_enabled": "on"}  # fmt: skip
        data.update({f"{prefix}-{n}-{k}": v for k, v in row.items()})
    assert formset_class(data, instance=checklist).is_valid()
    data[f"{prefix}-2-weight"] = weight
    formset = formset_class(data, instance=checklist)
    assert not formset.is_valid()
    assert "criterion 3: " in str(formset.non_form_errors())
