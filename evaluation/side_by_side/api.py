"""`GET /api/datasets/{id}/side-by-side/`: the side-by-side comparison for programs, one
page of queries at a time (docs/api.md#side-by-side). The same form, reads and access as
the page; the answers' texts are not repeated here (`GET /api/answers/{id}/` has them)."""

from __future__ import annotations

from django.core.paginator import InvalidPage
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param
from rest_framework.views import APIView

from evaluation.kept import refresh
from evaluation.runs.scores_api import ChecklistScoreSerializer
from evaluation.runs.selectors import runs_of_system_answers
from evaluation.side_by_side import pairing
from evaluation.side_by_side.access import access_side_by_side
from evaluation.side_by_side.compare import side_by_side
from evaluation.side_by_side.forms import SideBySideForm

API_PAIRS_PER_PAGE = 10
_SHARE = {"allow_null": True, "min_value": 0.0, "max_value": 1.0}


class SideSerializer(serializers.Serializer):
    run = serializers.IntegerField(source="run.pk")
    system = serializers.IntegerField(source="system_id")
    system_name = serializers.CharField(source="system")


class CriterionOutcomesSerializer(serializers.Serializer):
    criterion = serializers.IntegerField(source="criterion.pk")
    checklist = serializers.IntegerField(source="criterion.checklist_id")
    text = serializers.CharField(source="criterion.text")
    weight = serializers.FloatField(source="criterion.weight")
    outcome_a = serializers.ChoiceField(
        pairing.OUTCOMES, allow_null=True,
        help_text="The run's verdict on A's answer (an adjudication replacing it); null: not "
        "judged in run A.",
    )  # fmt: skip
    outcome_b = serializers.ChoiceField(pairing.OUTCOMES, allow_null=True)
    difference = serializers.ChoiceField(
        pairing.DIFFERENCES,
        help_text="a_meets: A meets it and B misses it; b_meets: the reverse; uncompared: "
        "undecided or not judged on a side; same. Met is the scores' rule (a penalty is met "
        "when avoided).",
    )


class ChecklistPairSerializer(serializers.Serializer):
    checklist = serializers.IntegerField(source="checklist_id")
    author = serializers.CharField()
    a = ChecklistScoreSerializer(allow_null=True, help_text="Null: not scored on side A.")
    b = ChecklistScoreSerializer(allow_null=True)


class PairSerializer(serializers.Serializer):
    query = serializers.IntegerField(source="pair.query_id")
    query_external_id = serializers.CharField(source="query.external_id")
    answer_a = serializers.IntegerField(source="answer_a.pk")
    answer_b = serializers.IntegerField(source="answer_b.pk")
    score_a = serializers.FloatField(source="pair.a.value", **_SHARE)
    score_b = serializers.FloatField(source="pair.b.value", **_SHARE)
    undecided_a = serializers.IntegerField(source="pair.a.undecided")
    undecided_b = serializers.IntegerField(source="pair.b.undecided")
    difference = serializers.FloatField(
        source="pair.difference", allow_null=True, min_value=-1.0, max_value=1.0,
        help_text="score_b - score_a; null when either has no score.",
    )  # fmt: skip
    differing = serializers.IntegerField(help_text="Criteria one side meets and the other misses.")
    checklists = ChecklistPairSerializer(many=True)
    criteria = CriterionOutcomesSerializer(
        many=True, help_text="The differing criteria first (a_meets, b_meets), then the others."
    )


class SideBySideSerializer(serializers.Serializer):
    a = SideSerializer()
    b = SideSerializer()
    paired = serializers.IntegerField(help_text="Queries answered on both sides.")
    only_a = serializers.IntegerField(help_text="Queries answered on side A only.")
    only_b = serializers.IntegerField()
    count = serializers.IntegerField(help_text="Pairs the filters keep, on every page.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    updating = serializers.BooleanField(
        help_text="A run's scores served were kept before its latest changes; fresh ones are "
        "being computed."
    )
    pairs = PairSerializer(many=True)


def _parameter(name: str, kind, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, kind, description=description)


class SideBySideView(APIView):
    """Two systems' (or two runs') answers compared query by query and criterion by
    criterion, the pairs filtered and ordered, a page at a time."""

    @extend_schema(
        parameters=[
            _parameter("a", OpenApiTypes.INT, "Run A (default: the dataset's previous run)."),
            _parameter("system_a", OpenApiTypes.INT, "System A (default: the run's first)."),
            _parameter("b", OpenApiTypes.INT, "Run B (default: the dataset's latest run)."),
            _parameter(
                "system_b",
                OpenApiTypes.INT,
                "System B (default: system A if run B scored it, else run B's first other).",
            ),
            _parameter(
                "min_difference",
                OpenApiTypes.DOUBLE,
                "Only queries whose scores differ by more than this (0 to 1), either way.",
            ),
            _parameter("category", OpenApiTypes.INT, "Only queries of this category (its id)."),
            _parameter(
                "dimension",
                OpenApiTypes.STR,
                "Only queries with this value of a declared dimension, as name=value.",
            ),
            OpenApiParameter("sort", OpenApiTypes.STR, enum=list(pairing.SORTS)),
            _parameter("page", OpenApiTypes.INT, "A page of pairs (1 first); past the last: 404."),
        ],
        responses={200: SideBySideSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        dataset = access_side_by_side(request.user, pk)
        form = SideBySideForm(
            request.query_params, dataset=dataset, runs=runs_of_system_answers(dataset)
        )
        if not form.is_valid():
            raise ValidationError(
                {("non_field_errors" if k == "__all__" else k): v for k, v in form.errors.items()}
            )
        if form.computing is not None:
            return _computing(form.computing)
        number = request.query_params.get("page", "1")
        try:
            comparison = side_by_side(dataset, form, number, API_PAIRS_PER_PAGE, strict=True)
        except InvalidPage:
            raise NotFound("Invalid page.") from None
        page, url = comparison.page, request.build_absolute_uri()
        data = {
            "a": comparison.side_a, "b": comparison.side_b,
            "paired": len(comparison.paired.pairs),
            "only_a": comparison.paired.only_a, "only_b": comparison.paired.only_b,
            "count": page.paginator.count,
            "next": replace_query_param(url, "page", page.next_page_number())
            if page.has_next() else None,
            "previous": _previous(url, page), "updating": comparison.updating,
            "pairs": comparison.details,
        }  # fmt: skip
        return Response(SideBySideSerializer(data).data)


def _computing(kept) -> Response:
    """A side's run scores are still being counted (right after seeding, a migration or a
    new figure version): their facts, as `refresh.pending` answers."""
    status, headers = refresh.pending(kept.failure)
    return Response(kept.facts(), status=status, headers=headers)


def _previous(url: str, page) -> str | None:
    if not page.has_previous():
        return None
    number = page.previous_page_number()
    return (
        replace_query_param(url, "page", number) if number > 1 else remove_query_param(url, "page")
    )
