"""A run's scores (`GET /api/runs/{id}/scores/`) and the graded and cost figures added to
its progress. Who may read them: as the run API (the dataset's admins and reviewers)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from annotation.models import Undecided
from config.ids import parse_id
from evaluation.runs import scores, stability
from evaluation.runs.access import access_run
from evaluation.runs.overview import RunOverview
from evaluation.runs.serializers import ProgressSerializer

_SHARE = {"allow_null": True, "min_value": 0.0, "max_value": 1.0}


class GradedProgressSerializer(serializers.Serializer):
    expected = serializers.IntegerField()
    done = serializers.IntegerField()
    scored = serializers.IntegerField()
    unparseable = serializers.IntegerField()
    errors = serializers.IntegerField()
    no_reference = serializers.IntegerField()
    cache_hits = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()


class CostSerializer(serializers.Serializer):
    known = serializers.BooleanField(help_text="False when an LLM judge has no price.")
    currency = serializers.SerializerMethodField(help_text="The site's COST_CURRENCY.")
    so_far = serializers.DecimalField(
        max_digits=20, decimal_places=6, allow_null=True, help_text="Null when unknown."
    )
    projected = serializers.DecimalField(
        max_digits=20,
        decimal_places=6,
        allow_null=True,
        help_text="Cost so far / done × expected (verdicts and grades); null when unknown or "
        "nothing is done yet.",
    )
    unpriced = serializers.ListField(
        child=serializers.CharField(), help_text="The LLM judges without a price."
    )

    def get_currency(self, cost: object) -> str:
        return settings.COST_CURRENCY


class ErrorGroupSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="error_kind of the calls, or `task`.")
    message = serializers.CharField()
    count = serializers.IntegerField()


class WaitingSerializer(serializers.Serializer):
    judge_id = serializers.IntegerField()
    judge = serializers.CharField()
    since = serializers.DateTimeField(help_text="When its circuit opened.")
    next_probe = serializers.DateTimeField(help_text="When one call tries it again.")
    last_error = serializers.CharField()


class RunProgressSerializer(ProgressSerializer):
    """The verdict progress, the graded view's progress, the estimated cost, the most
    frequent errors and the actions the run's status allows."""

    status = serializers.CharField()
    reason = serializers.CharField()
    graded = GradedProgressSerializer()
    cost = CostSerializer()
    errors_first = ErrorGroupSerializer(many=True, help_text="The most frequent errors.")
    actions = serializers.ListField(
        child=serializers.ChoiceField(["cancel", "resume", "retry-failed"]),
        help_text="What the run's status allows now.",
    )
    waiting = WaitingSerializer(
        many=True,
        help_text="Judges the running run waits for: their endpoint is down (circuit open); "
        "their calls resume by themselves when a probe gets an answer.",
    )
    updating = serializers.BooleanField(
        help_text="An ended run's counts served were counted before its latest change, or "
        "none is yet (`computed_at` null, every count 0): fresh ones are being counted "
        "(ask again in a few seconds). False for a running run, counted live."
    )
    computed_at = serializers.DateTimeField(
        allow_null=True, help_text="When an ended run's counts served were counted."
    )
    refresh_failed = serializers.DictField(
        allow_null=True, help_text="The last try to count them failed (as for scores)."
    )


def progress_data(run, overview: RunOverview) -> dict:
    return {
        "status": run.status,
        "reason": run.reason,
        **ProgressSerializer(overview.progress).data,
        "graded": GradedProgressSerializer(overview.graded).data,
        "cost": CostSerializer(overview.cost).data,
        "errors_first": ErrorGroupSerializer(overview.errors, many=True).data,
        "actions": overview.actions,
        "waiting": WaitingSerializer(overview.waiting, many=True).data,
        # An ended run's counts are kept and never counted in the request: while they are
        # counted, `updating` with `computed_at` null and every count 0 (runs.overview).
        **overview.facts(),
    }


class ScoreSerializer(serializers.Serializer):
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    undecided = serializers.IntegerField()
    total = serializers.IntegerField()
    share = serializers.FloatField(**_SHARE)
    weighted_share = serializers.FloatField(**_SHARE)
    core_share = serializers.FloatField(**_SHARE)


class GroupScoreSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    title = serializers.CharField()
    depth = serializers.IntegerField(help_text="1 for a top-level group.")
    score = serializers.FloatField(
        **_SHARE, help_text="The strategy's value on the group; null: nothing decided in it."
    )
    met = serializers.IntegerField(help_text="Decided criteria satisfied (a penalty: avoided).")
    missing = serializers.IntegerField(
        help_text="Decided criteria not satisfied (a penalty: committed)."
    )
    undecided = serializers.IntegerField(
        help_text="Criteria with no valid vote, whatever the undecided setting counted them as."
    )


class ChecklistScoreSerializer(serializers.Serializer):
    checklist = serializers.IntegerField(source="checklist_id")
    author = serializers.CharField()
    score = ScoreSerializer()
    scoring = serializers.CharField(help_text="The strategy it is scored by (docs/metrics.md).")
    value = serializers.FloatField(**_SHARE, help_text="Its score under that strategy.")
    undecided_as = serializers.ChoiceField(
        choices=Undecided.choices,
        help_text="What its undecided criteria (score.undecided) counted as in `value` and the "
        "shares: left out, or not met (docs/metrics.md#undecided-criteria).",
    )
    groups = GroupScoreSerializer(many=True, help_text="Each group, parents before children.")


class AnswerScoreSerializer(serializers.Serializer):
    answer = serializers.IntegerField(source="answer_id")
    query = serializers.IntegerField(source="query_id")
    system = serializers.IntegerField(source="system_id")
    system_name = serializers.CharField(source="system")
    checklists = ChecklistScoreSerializer(many=True)
    value = serializers.FloatField(
        **_SHARE, help_text="Mean over the query's checklists of each one's strategy value."
    )
    share = serializers.FloatField(source="score", **_SHARE)
    weighted = serializers.FloatField(**_SHARE)
    core = serializers.FloatField(**_SHARE)
    undecided = serializers.IntegerField(
        help_text="Criteria with no valid vote, over the query's checklists (each one's "
        "undecided_as says what they counted as)."
    )
    split = serializers.IntegerField()
    adjudicated = serializers.IntegerField()
    passed = serializers.BooleanField(
        allow_null=True, help_text="value ≥ the dataset's pass threshold; null without one."
    )
    graded = serializers.FloatField(allow_null=True, min_value=1.0, max_value=5.0)
    sample = serializers.IntegerField(help_text="The answer's sample index.")


class SystemScoreSerializer(serializers.Serializer):
    system = serializers.IntegerField(source="system_id")
    system_name = serializers.CharField(source="system")
    answers = serializers.IntegerField()
    value = serializers.FloatField(**_SHARE)
    share = serializers.FloatField(source="score", **_SHARE)
    weighted = serializers.FloatField(**_SHARE)
    core = serializers.FloatField(**_SHARE)
    graded = serializers.FloatField(allow_null=True, min_value=1.0, max_value=5.0)
    passed = serializers.IntegerField()
    pass_rate = serializers.FloatField(**_SHARE)
    undecided = serializers.IntegerField(help_text="Criteria with no valid vote, over its answers.")


class MeanIntervalSerializer(serializers.Serializer):
    mean = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="Null with fewer than two queries.")
    high = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    clusters = serializers.IntegerField(help_text="Queries.")
    method = serializers.CharField()


class SystemReliabilitySerializer(serializers.Serializer):
    system = serializers.IntegerField(source="system_id")
    queries = serializers.IntegerField()
    samples = serializers.IntegerField(help_text="Scored answers over its queries.")
    k_min = serializers.IntegerField(help_text="The fewest samples of one query.")
    k_max = serializers.IntegerField()
    mean = MeanIntervalSerializer(help_text="Mean over queries of each query's mean score.")
    worst = MeanIntervalSerializer(help_text="Mean over queries of worst-of-k.")
    spread = MeanIntervalSerializer(help_text="Mean over queries of (best - worst).")
    pass_k = MeanIntervalSerializer(
        help_text="Share of queries whose every sample passes (pass^k); mean null without "
        "a pass threshold."
    )
    pass_1 = serializers.FloatField(**_SHARE, help_text="Share of samples that pass.")


class QueryReliabilitySerializer(serializers.Serializer):
    system = serializers.IntegerField(source="system_id")
    query = serializers.IntegerField(source="query_id")
    k = serializers.IntegerField()
    samples = serializers.ListField(child=serializers.IntegerField())
    mean = serializers.FloatField(**_SHARE)
    worst = serializers.FloatField(**_SHARE)
    best = serializers.FloatField(**_SHARE)
    spread = serializers.FloatField(**_SHARE)
    pass_k = serializers.BooleanField(allow_null=True)
    passes = serializers.IntegerField(allow_null=True)


class ReliabilitySerializer(serializers.Serializer):
    systems = SystemReliabilitySerializer(many=True)
    queries = QueryReliabilitySerializer(
        many=True, help_text="Every (system, query) answered more than once."
    )


class RunScoresSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    pass_threshold = serializers.FloatField(source="threshold", **_SHARE)
    systems = SystemScoreSerializer(many=True, help_text="Every system of the run (not paged).")
    count = serializers.IntegerField(help_text="Answers of the run, on every page.")
    next = serializers.URLField(allow_null=True, help_text="The next page of answers.")
    previous = serializers.URLField(allow_null=True)
    answers = AnswerScoreSerializer(
        many=True, help_text="One page of the run's answers (API_PAGE_SIZE, by query)."
    )
    reliability = ReliabilitySerializer(
        allow_null=True,
        help_text="pass^k, worst-of-k and spread over each system's samples "
        "(docs/metrics.md#reliability-of-systems).",
    )
    updating = serializers.BooleanField(
        help_text="These scores were kept before the latest adjudications or changes; fresh "
        "ones are being computed (ask again in a few seconds)."
    )
    computed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the scores served were computed."
    )
    refresh_failed = serializers.DictField(
        allow_null=True,
        help_text="The last try to compute fresh scores failed: when, why "
        "(the exception's kind), tries in a row and the next try.",
    )
    frozen_at = serializers.DateTimeField(
        allow_null=True,
        help_text="The run is archived: its scores were frozen then and follow no "
        "adjudication, weight or threshold change made since, until it is restored.",
    )


class RunScoresView(APIView):
    """Scores of a run's systems, and its answers one page at a time (?page=N; see
    docs/api.md#scores)."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "page",
                OpenApiTypes.INT,
                description="A page of answers (1 first); past the last page: 404.",
            )
        ],
        responses={200: RunScoresSerializer},
        operation_id="runs_scores_retrieve",
    )
    def get(self, request: Request, pk: int) -> Response:
        run = access_run(request.user, pk)
        number = parse_id(request.query_params.get("page", "1"))
        if number is None or not 1 <= number <= 10**12:
            raise NotFound("Invalid page.")
        # The summary and this page's answers only (an ended run's are kept: run_scores).
        report = scores.run_scores(run)
        size = settings.REST_FRAMEWORK["PAGE_SIZE"]
        start = (number - 1) * size
        if number > 1 and start >= report.count:
            raise NotFound("Invalid page.")
        answers = report[start : start + size]
        url = request.build_absolute_uri()
        data = RunScoresSerializer(
            {
                "run": run.pk,
                "threshold": report.threshold,
                "systems": report.systems,
                "count": report.count,
                "next": replace_query_param(url, "page", number + 1)
                if start + size < report.count
                else None,
                "previous": replace_query_param(url, "page", number - 1) if number > 1 else None,
                "answers": answers,
                "reliability": report.reliability,
                "frozen_at": report.frozen_at,
                **report.facts(),
            }
        ).data
        return Response(data)


class FlipRateSerializer(serializers.Serializer):
    count = serializers.IntegerField(help_text="Items whose valid verdicts disagree.")
    items = serializers.IntegerField(help_text="Items with two valid verdicts or more.")
    rate = serializers.FloatField(**_SHARE, help_text="count / items; null without an item.")
    low = serializers.FloatField(**_SHARE, help_text="95% Wilson interval.")
    high = serializers.FloatField(**_SHARE)


class CriterionStabilitySerializer(serializers.Serializer):
    criterion = serializers.IntegerField(source="criterion_id")
    flips = FlipRateSerializer()
    unstable = serializers.BooleanField(help_text="The whole interval lies above 10%.")


class RunStabilitySerializer(serializers.Serializer):
    run = serializers.IntegerField()
    items = serializers.IntegerField(
        allow_null=True,
        help_text="(answer, criterion) items one judge graded two times or more; null while "
        "the figure is being counted for the first time.",
    )
    flips = FlipRateSerializer(allow_null=True, help_text="Over every repeated item.")
    kappa = serializers.FloatField(
        allow_null=True,
        help_text="Test–retest κ (Fleiss' κ between the repeated calls); null without an "
        "item, when every call gave the same verdict, or while being counted.",
    )
    criteria = CriterionStabilitySerializer(
        many=True, help_text="Every criterion with a repeated item, the highest flip rate first."
    )
    updating = serializers.BooleanField(
        help_text="The figure served was counted before the run's latest changes, or none is "
        "yet: a fresh one is being counted (ask again in a few seconds)."
    )
    computed_at = serializers.DateTimeField(allow_null=True)
    refresh_failed = serializers.DictField(
        allow_null=True, help_text="The last try to count the figure failed (as for scores)."
    )


class RunStabilityView(APIView):
    """A run's judge stability: flip rates per criterion with their intervals and the
    test–retest κ (docs/api.md#judge-stability), as kept; never counted in the request."""

    @extend_schema(responses={200: RunStabilitySerializer}, operation_id="runs_stability_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        run = access_run(request.user, pk)
        found = stability.served(run)
        figures = found.figures or {"items": None, "flips": None, "kappa": None, "criteria": []}
        criteria = stability.by_criterion(figures).values()
        data = RunStabilitySerializer(
            {"run": run.pk, **figures, "criteria": list(criteria), **found.facts()}
        ).data
        return Response(data)
