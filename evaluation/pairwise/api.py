"""The pairwise API (docs/api.md#pairwise-preference): a dataset's sessions, a session's
progress and, for the dataset's admins, its results; a reviewer's next blind pair, their
vote and undo; the dataset's pairwise figures with the checklist's agreement with the
reviewers and with the pairwise judges.

The same access, services and rules as the pages (evaluation.pairwise.views): review_dataset
for everything (404 for non-members, 403 for experts), change_dataset for results and
figures. A pair is served blind: "answer_1" / "answer_2" in the position drawn for this
reviewer, no system, no side, and never another rater's vote.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import roles
from annotation.access import access_dataset, dataset_permissions
from config.ids import is_id
from evaluation.pairwise import figures, judging, selectors, services
from evaluation.pairwise.access import access_session
from evaluation.pairwise.forms import VoteForm
from evaluation.pairwise.models import PairwiseSession, PairwiseVote
from evaluation.runs.models import Run

# --- serializers ---------------------------------------------------------------------


class PairwiseSessionSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    side_a = serializers.SerializerMethodField()
    side_b = serializers.SerializerMethodField()
    reviewers_per_pair = serializers.IntegerField()
    show_checklist = serializers.BooleanField()
    pairs = serializers.IntegerField(source="pair_count")
    votes = serializers.IntegerField(source="vote_count", help_text="Cast votes, all raters.")
    created_at = serializers.DateTimeField()

    def get_side_a(self, session) -> str:
        return figures.side_name(session.system_a, session.run_label_a)

    def get_side_b(self, session) -> str:
        return figures.side_name(session.system_b, session.run_label_b)


class PreferenceRateSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    n = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="95% Wilson interval.")
    high = serializers.FloatField(allow_null=True)


class WinTieLossSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    a = PreferenceRateSerializer(help_text="Votes preferring side A.")
    tie = PreferenceRateSerializer()
    b = PreferenceRateSerializer()


class RaterAgreementSerializer(serializers.Serializer):
    method = serializers.ChoiceField(["cohen", "fleiss"])
    raters = serializers.IntegerField()
    items = serializers.IntegerField()
    kappa = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class PairwiseKappaSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    kappa = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class JudgeFiguresSerializer(serializers.Serializer):
    judge = serializers.CharField()
    flips = PreferenceRateSerializer(
        source="bias.flips",
        help_text="Share of pairs whose verdict changed with the order (counted as a tie).",
    )
    first_preferred = PreferenceRateSerializer(source="bias.first_preferred")
    agreement = PairwiseKappaSerializer(help_text="Cohen's kappa with the reviewers' majority.")


class PairwiseRaterProgressSerializer(serializers.Serializer):
    rater = serializers.CharField()
    voted = serializers.IntegerField()


class PairwiseProgressSerializer(serializers.Serializer):
    voted = serializers.IntegerField()
    open = serializers.IntegerField()
    waiting = serializers.IntegerField()
    total = serializers.IntegerField()


class PairwiseResultsSerializer(serializers.Serializer):
    win_tie_loss = WinTieLossSerializer()
    agreement = RaterAgreementSerializer()
    judges = JudgeFiguresSerializer(many=True)


class PairwiseSessionDetailSerializer(PairwiseSessionSerializer):
    mine = PairwiseProgressSerializer(help_text="The requesting reviewer's progress.")
    raters = PairwiseRaterProgressSerializer(
        many=True, help_text="Pairs voted per rater: counts only."
    )
    results = PairwiseResultsSerializer(
        allow_null=True, help_text="For the dataset's admins; else null."
    )


class BlindPairSerializer(serializers.Serializer):
    vote = serializers.IntegerField(help_text="Send it back with the choice.")
    query = serializers.CharField(source="query.text")
    query_external_id = serializers.CharField(source="query.external_id")
    query_date = serializers.DateField(source="query.query_date")
    category = serializers.CharField(allow_null=True)
    answer_1 = serializers.CharField()
    answer_2 = serializers.CharField()
    checklists = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="The query's submitted checklists' criteria, when the session shows them.",
    )


class NextBlindPairSerializer(serializers.Serializer):
    pair = BlindPairSerializer(allow_null=True, help_text="Null: nothing left for you.")
    mine = PairwiseProgressSerializer()


class PairwiseVoteInputSerializer(serializers.Serializer):
    vote = serializers.IntegerField(min_value=1)
    choice = serializers.ChoiceField(["1", "2", "tie"])
    reason = serializers.CharField(max_length=2000, required=False, allow_blank=True)


class ChecklistPredictionSerializer(serializers.Serializer):
    overall = PreferenceRateSerializer()
    by_gap = serializers.SerializerMethodField()
    by_category = serializers.SerializerMethodField()
    ties = serializers.IntegerField()
    not_separated = serializers.IntegerField()

    def get_by_gap(self, prediction) -> list[dict]:
        return [
            {"bucket": label, **PreferenceRateSerializer(r).data} for label, r in prediction.by_gap
        ]

    def get_by_category(self, prediction) -> list[dict]:
        return [
            {"category": label, **PreferenceRateSerializer(r).data}
            for label, r in prediction.by_category
        ]


class PairwiseSidesSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    figures = WinTieLossSerializer()


class BradleyTerryStrengthSerializer(serializers.Serializer):
    system = serializers.CharField()
    strength = serializers.FloatField()
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)


class PairwiseFiguresSerializer(serializers.Serializer):
    votes = serializers.IntegerField()
    rows = PairwiseSidesSerializer(many=True)
    strengths = BradleyTerryStrengthSerializer(
        many=True, help_text="Bradley–Terry, three or more sides."
    )
    agreement = RaterAgreementSerializer(allow_null=True)
    prediction = ChecklistPredictionSerializer(
        allow_null=True, help_text="Does the checklist predict the reviewers? With a run."
    )
    judge_prediction = ChecklistPredictionSerializer(
        allow_null=True, help_text="Does the checklist predict the pairwise judges? With a run."
    )
    judge_pairs = serializers.IntegerField()


# --- views ---------------------------------------------------------------------------


class SessionListView(APIView):
    """The dataset's pairwise sessions (its reviewers and admins)."""

    @extend_schema(responses={200: PairwiseSessionSerializer(many=True)})
    def get(self, request: Request, pk: int) -> Response:
        dataset = access_dataset(request.user, pk, roles.REVIEW)
        return Response(PairwiseSessionSerializer(selectors.sessions_of(dataset), many=True).data)


class SessionView(APIView):
    """A session: your progress, pairs voted per rater, and for admins its results."""

    @extend_schema(responses={200: PairwiseSessionDetailSerializer})
    def get(self, request: Request, pk: int) -> Response:
        session, perms = access_session(request.user, pk)
        listed = selectors.sessions_of(session.dataset).get(pk=session.pk)
        results = None
        if roles.CHANGE in perms:
            # As on the page: the outcome is for admins; reviewers still voting must not
            # learn which way the pairs lean.
            wtl, agreement = figures.session_figures(session)
            results = {"win_tie_loss": wtl, "agreement": agreement,
                       "judges": judging.judge_figures(session)}  # fmt: skip
        rater = request.user.get_username()
        listed.mine = selectors.progress(session, rater)
        listed.raters = [{"rater": r, "voted": n} for r, n in selectors.progress_by_rater(session)]
        listed.results = results
        return Response(PairwiseSessionDetailSerializer(listed).data)


class NextPairView(APIView):
    """Your next blind pair (the one shown to you and not voted, if any, in the same
    position), or null when nothing is left for you."""

    @extend_schema(responses={200: NextBlindPairSerializer})
    def get(self, request: Request, pk: int) -> Response:
        session, _perms = access_session(request.user, pk)
        vote = services.pair_show(session=session, reviewer=request.user)
        return Response(_next(session, request, vote))


class VoteView(APIView):
    """Vote 1, 2 or tie on a pair shown to you (by its `vote` id from the next pair); answers
    with your next pair."""

    @extend_schema(request=PairwiseVoteInputSerializer, responses={200: NextBlindPairSerializer})
    def post(self, request: Request, pk: int) -> Response:
        session, _perms = access_session(request.user, pk)
        form = VoteForm(request.data)
        if not form.is_valid():
            raise ValidationError(form.errors)
        vote = selectors.own_vote(session, request.user.get_username(), form.cleaned_data["vote"])
        if vote is None:
            raise NotFound("No such pair shown to you in this session.")
        services.vote_cast(
            vote=vote, choice=form.cleaned_data["choice"], reason=form.cleaned_data["reason"]
        )
        following = services.pair_show(session=session, reviewer=request.user)
        return Response(_next(session, request, following))


class UndoView(APIView):
    """Take back your latest vote: that pair is your next one again, same position."""

    @extend_schema(request=None, responses={200: NextBlindPairSerializer, 409: None})
    def post(self, request: Request, pk: int) -> Response:
        session, _perms = access_session(request.user, pk)
        if services.vote_undo(session=session, reviewer=request.user) is None:
            return Response(
                {"detail": "Nothing to undo: you have not voted in this session."},
                status=status.HTTP_409_CONFLICT,
            )
        vote = services.pair_show(session=session, reviewer=request.user)
        return Response(_next(session, request, vote))


class DatasetFiguresView(APIView):
    """The dataset's pairwise figures (admins): win / tie / loss per pair of sides,
    Bradley–Terry strengths for three or more sides, agreement between reviewers, and with
    `run` whether its checklist scores predict the reviewers' and the judges' preference."""

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "run", OpenApiTypes.INT, description="A run of the dataset whose scores to use."
            )
        ],
        responses={200: PairwiseFiguresSerializer},
    )
    def get(self, request: Request, pk: int) -> Response:
        dataset = access_dataset(request.user, pk, roles.REVIEW)
        if roles.CHANGE not in dataset_permissions(request.user, dataset):
            raise PermissionDenied("The pairwise figures are for the dataset's admins.")
        chosen = request.query_params.get("run", "")
        run = None
        if chosen:
            run = Run.objects.filter(dataset=dataset, pk=chosen).first() if is_id(chosen) else None
            if run is None:
                raise ValidationError({"run": "Choose a run of this dataset."})
        found = figures.dataset_figures(dataset, run)
        return Response(PairwiseFiguresSerializer(found).data)


def _next(session: PairwiseSession, request: Request, vote: PairwiseVote | None) -> dict:
    mine = selectors.progress(session, request.user.get_username())
    if vote is None:
        return NextBlindPairSerializer({"pair": None, "mine": mine}).data
    pair = vote.pair
    first, second = (
        (pair.answer_a, pair.answer_b) if vote.first_is_a else (pair.answer_b, pair.answer_a)
    )
    shown = {
        "vote": vote.pk, "query": pair.query,
        "category": pair.query.category.name if pair.query.category else None,
        "answer_1": first.text, "answer_2": second.text,
        "checklists": [[c.text for c in checklist.active_criteria]
                       for checklist in selectors.checklists_shown(session, pair.query_id)],
    }  # fmt: skip
    return NextBlindPairSerializer({"pair": shown, "mine": mine}).data
