"""Analytics in the API: every figure of the analytics pages, for a dataset's reviewers and
admins (criterion health: admins). Same access rule and selectors as the pages."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param
from rest_framework.views import APIView

from annotation.models import Dataset
from config.ids import MAX_ID
from evaluation.analytics import figures, summaries
from evaluation.analytics.access import access_analytics
from evaluation.kept import refresh
from evaluation.metrics import analytics as am
from evaluation.runs import scores, trend
from evaluation.runs.models import Run
from evaluation.runs.selectors import choose_run, runs_of_system_answers


def _dataset(request: Request, pk: int, *, admin: bool = False) -> Dataset:
    try:
        return access_analytics(request.user, pk, admin=admin)
    except DjangoPermissionDenied as refused:  # DRF would answer it with a generic message
        raise PermissionDenied(str(refused)) from None


def _run(dataset: Dataset, run_id: int | None) -> Run:
    try:
        run = choose_run(dataset, run_id, runs_of_system_answers(dataset), or_newest=True)
    except Run.DoesNotExist:
        raise Http404("No such run in this dataset.") from None
    if run is None:
        raise Http404("No run to analyse yet.")
    return run


def _run_data(run: Run) -> dict:
    return {
        "id": run.pk,
        "name": str(run),
        "status": run.status,
        "panel_method": run.panel_method,
        "panel_threshold": run.panel_threshold,
    }


class AnalyticsQuerySerializer(serializers.Serializer):
    run = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    edges = serializers.CharField(required=False, help_text="Bucket edges, e.g. 10,15,20,25,30,35")
    complexity = serializers.CharField(
        required=False, help_text="A numeric query dimension for the complexity curve."
    )

    def validate_edges(self, value: str) -> tuple[int, ...]:
        try:
            return am.parse_edges(value)
        except ValueError as error:
            raise ValidationError(str(error)) from None


def _computing(head: dict, served: figures.Served) -> Response:
    """The run's figures were never computed: the facts, as `refresh.pending` answers."""
    status, headers = refresh.pending(served.failure)
    return Response(head, status=status, headers=headers)


RUN = OpenApiParameter("run", int, description="Run id; default: the latest finished run.")


class AnalyticsView(APIView):
    @extend_schema(
        parameters=[
            RUN,
            OpenApiParameter("edges", str, description="Bucket edges, default 10,15,…,35."),
            OpenApiParameter(
                "complexity",
                str,
                description="The complexity curve by this numeric query dimension (a point "
                "per value) instead of the criteria count.",
            ),
        ],
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, pk: int) -> Response:
        """System scores with 95% intervals (overall and by category, complexity bucket,
        criterion kind and source type), judge-only / human-only / PPI++ scores, candidate
        panels, each judge's and the panel's agreement with people by criterion kind and
        source type, and the complexity curve with the human line."""
        dataset = _dataset(request, pk)
        params = AnalyticsQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        run = _run(dataset, params.validated_data.get("run"))
        served = figures.served_page(run, params.validated_data.get("edges", am.DEFAULT_EDGES))
        head = {"dataset": dataset.pk, "run": _run_data(run), **served.facts()}
        if served.figures is None:
            return _computing(head, served)
        page = served.figures
        curve = page.curve
        numeric = summaries.numeric_dimensions(page.cells)
        by = params.validated_data.get("complexity")
        if by:
            if by not in numeric:
                known = ", ".join(numeric) or "none"
                raise ValidationError(
                    {"complexity": f"Not a numeric query dimension of this run: {by!r}; "
                     f"known: {known}."}
                )  # fmt: skip
            curve = summaries.dimension_curve(page.cells, by, page.curve.human)
        return Response(
            {
                **head,
                "labels": {
                    "decided_by": "adjudication where present, else the run's panel verdict",
                    "adjudicated_items": page.adjudicated,
                    "labelled_items": page.labelled,
                    "items": page.items,
                },
                "scores": [c.as_dict() for c in page.cells],
                "undecided": _undecided(run, page.cells),
                "calibrated": [c.as_dict() for c in page.calibrated],
                "panels": [o.as_dict() for o in page.panels],
                "judge_agreement": [a.as_dict() for a in page.judges],
                "saturated_queries": page.saturated,
                "complexity": curve.as_dict(),
                "complexity_dimensions": numeric,
                "calibrated_scale": page.scale,
            }
        )


def _undecided(run: Run, cells: list[summaries.Cell]) -> list[dict]:
    """Each system's undecided criteria beside its overall score (null until kept)."""
    return [
        {"system_id": c.system_id, "system": c.system, "undecided": n}
        for c, n in figures.overall_undecided(run, cells)
    ]


class CompareQuerySerializer(serializers.Serializer):
    a = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    b = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    system_a = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)
    system_b = serializers.IntegerField(min_value=1, max_value=MAX_ID, required=False)


class TrendView(APIView):
    @extend_schema(parameters=[RUN], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, pk: int) -> Response:
        """Each system's score across the ended runs of the run's panel, up to the run,
        oldest first (at most 120), from their kept figures: a run whose scores are still
        being counted has `systems: null` (its count is queued), an archived run its frozen
        scores. docs/api.md#score-trend."""
        dataset = _dataset(request, pk)
        params = AnalyticsQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        run = _run(dataset, params.validated_data.get("run"))
        found = trend.score_trend(run)
        return Response(
            {
                "dataset": dataset.pk,
                "run": _run_data(run),
                "panel": run.panel_id,
                "counting": found.counting,
                "runs": [_trend_point(p) for p in found.points],
            }
        )


def _trend_point(point: trend.RunPoint) -> dict:
    return {
        "id": point.run_id,
        "name": point.name,
        "finished_at": point.finished_at.isoformat() if point.finished_at else None,
        "archived": point.archived,
        "systems": None
        if point.systems is None
        else [
            {"system": s.system, "value": s.value, "low": s.low, "high": s.high,
             "pass_rate": s.pass_rate, "answers": s.answers, "undecided": s.undecided}
            for s in point.systems.values()
        ],
    }  # fmt: skip


class CompareView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("a", int, required=True, description="The run before."),
            OpenApiParameter("b", int, required=True, description="The run after."),
            OpenApiParameter("system_a", int, description="System of run A; default: all."),
            OpenApiParameter("system_b", int, description="System of run B; default: all."),
        ],
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, pk: int) -> Response:
        """Two runs compared query by query: the paired test and every difference."""
        dataset = _dataset(request, pk)
        params = CompareQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        v = params.validated_data
        run_a, run_b = _run(dataset, v["a"]), _run(dataset, v["b"])
        served = figures.served_comparison(
            run_a, run_b, system_a=v.get("system_a"), system_b=v.get("system_b")
        )
        if served.figures is None:
            return _computing(
                {"a": _run_data(run_a), "b": _run_data(run_b), **served.facts()}, served
            )
        comparison, _, _ = served.figures
        return Response(
            {
                # Each side's undecided criteria, as the compare page shows them: the
                # system's, or every system's when the side compares them all.
                "a": {
                    **_run_data(run_a),
                    "system": comparison.system_a,
                    "undecided": scores.kept_undecided_of(
                        run_a, comparison.system_a if v.get("system_a") else None
                    ),
                },
                "b": {
                    **_run_data(run_b),
                    "system": comparison.system_b,
                    "undecided": scores.kept_undecided_of(
                        run_b, comparison.system_b if v.get("system_b") else None
                    ),
                },
                **served.facts(),
                "test": comparison.test.as_dict(),
                "queries": [
                    {
                        "query": d.query_id,
                        "a": d.a,
                        "b": d.b,
                        "difference": d.difference,
                        "answer_a": d.answer_a,
                        "answer_b": d.answer_b,
                    }
                    for d in comparison.deltas
                ],
            }
        )


class CriterionHealthQuerySerializer(AnalyticsQuerySerializer):
    flag = serializers.ChoiceField(
        choices=[("", "every criterion"), *((f, f) for f in figures.HEALTH_FLAGS)],
        required=False,
        allow_blank=True,
        default="",
        help_text="Only the criteria with this flag",
    )
    page = serializers.IntegerField(min_value=1, max_value=10**9, required=False, default=1)


def _page_link(request: Request, number: int | None) -> str | None:
    if number is None:
        return None
    url = request.build_absolute_uri()
    if number == 1:
        return remove_query_param(url, "page")
    return replace_query_param(url, "page", number)


class CriterionHealthView(APIView):
    @extend_schema(
        parameters=[
            RUN,
            OpenApiParameter("flag", str, enum=["", *figures.HEALTH_FLAGS]),
            OpenApiParameter("page", int, description="A page (1 first); past the end: 404."),
        ],
        responses={200: OpenApiTypes.OBJECT, 202: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, pk: int) -> Response:
        """Per criterion of the run, a page at a time, flagged first: flags, pass rate,
        split rate, disagreement with humans (the dataset's admins)."""
        dataset = _dataset(request, pk, admin=True)
        params = CriterionHealthQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        run = _run(dataset, params.validated_data.get("run"))
        flag, number = params.validated_data["flag"], params.validated_data["page"]
        size = settings.REST_FRAMEWORK["PAGE_SIZE"]
        served, count, rows = figures.health_slice(run, flag, (number - 1) * size, number * size)
        if served.computed_at is None:
            return _computing({"run": _run_data(run), "flag": flag, **served.facts()}, served)
        if number > 1 and not rows:
            raise NotFound("Invalid page.")
        return Response(
            {
                "run": _run_data(run),
                "flag": flag,
                **served.facts(),
                "count": count,
                "next": _page_link(request, number + 1 if number * size < count else None),
                "previous": _page_link(request, number - 1 if number > 1 else None),
                "criteria": [
                    {
                        "criterion": criterion,
                        "flags": flags,
                        "pass_rate": passed / (passed + failed) if passed + failed else None,
                        "split_rate": split / judged if judged else None,
                        "disagreement_rate": disagreed / compared if compared else None,
                        "passed": passed,
                        "failed": failed,
                        "systems_passing": systems_passing,
                        "systems": systems,
                        "compared": compared,
                        "disagreed": disagreed,
                    }
                    for (criterion, flags, passed, failed, split, judged, compared, disagreed,
                         systems_passing, systems) in rows
                ],
            }
        )  # fmt: skip
