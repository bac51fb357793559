"""The analytics pages, downloads and API: access by role (owner, reviewer, collaborator,
outsider), what they show, and query counts that stay flat as the rows grow. Celery runs
eagerly here (`eager_refresh`): a page that finds its figures stale has them recomputed in
the request, so each page shows the current figures; serving stale ones while a worker
recomputes is tested in test_refresh.py."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from evaluation.analytics import selectors as sel
from evaluation.analytics import summaries
from tests.evaluation.analytics.known import build_known

PAGES = (
    "dataset-analytics",
    "analytics-complexity-csv",
    "analytics-complexity-svg",
    "analytics-compare",
)


pytestmark = pytest.mark.usefixtures("eager_refresh")


def test_pages_access_by_role(
    known, reviewed_dataset, client, owner, reviewer, collaborator, outsider
):
    for name in PAGES:
        url = reverse(name, args=[reviewed_dataset.pk])
        for user, expected in ((owner, 200), (reviewer, 200), (collaborator, 403), (outsider, 404)):
            client.force_login(user)
            assert client.get(url).status_code == expected, (name, user)
        client.logout()
        assert client.get(url).status_code == 302
    url = reverse("analytics-criteria", args=[reviewed_dataset.pk])
    for user, expected in ((owner, 200), (reviewer, 403), (collaborator, 403), (outsider, 404)):
        client.force_login(user)
        assert client.get(url).status_code == expected, user


def test_api_access_by_role(
    known, reviewed_dataset, owner_api, reviewer_api, collaborator_api, outsider_api
):
    pk = reviewed_dataset.pk
    analytics = reverse("api-evaluation:analytics", args=[pk])
    criteria = reverse("api-evaluation:analytics-criteria", args=[pk])
    compare = reverse("api-evaluation:analytics-compare", args=[pk])
    run = known.run.pk
    for api, expected in ((owner_api, 200), (reviewer_api, 200), (collaborator_api, 403),
                          (outsider_api, 404)):  # fmt: skip
        assert api.get(analytics).status_code == expected
        assert api.get(compare, {"a": run, "b": run}).status_code == expected
    assert owner_api.get(criteria).status_code == 200
    assert reviewer_api.get(criteria).status_code == 403
    assert outsider_api.get(criteria).status_code == 404


def test_a_run_of_another_dataset_is_not_found(known, reviewed_dataset, client, owner):
    from annotation import services

    other = services.dataset_create(name="Other", by=owner)
    foreign = build_known(other, seed=9)
    client.force_login(owner)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    assert client.get(url, {"run": foreign.run.pk}).status_code == 404
    assert client.get(url, {"run": "x"}).status_code == 404
    assert client.get(url, {"edges": "20,10"}).status_code == 404
    compare = reverse("analytics-compare", args=[reviewed_dataset.pk])
    assert client.get(compare, {"a": known.run.pk, "b": foreign.run.pk}).status_code == 404


def test_page_shows_the_figures(known, reviewed_dataset, client, reviewer):
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    html = client.get(url).content.decode()
    assert 'id="label-source"' in html and "adjudication" in html
    assert "PPI++" in html and 'id="complexity-chart"' in html
    assert 'class="human-line"' not in html  # no cross-evaluation yet: no human line drawn
    assert "no cross-evaluation yet" in html
    assert "Alpha" in html and "Beta" in html
    assert reverse("analytics-criteria", args=[reviewed_dataset.pk]) not in html  # admins only
    # The complexity table names its buckets as the chart does, not by their API keys.
    complexity = html.split("By complexity (criteria per checklist)")[1].split("</table>")[0]
    assert "<td>&lt;10</td>" in complexity and "<td>lt10</td>" not in complexity
    # Drilled into a bucket: its checklists, linked to the answer pages.
    html = client.get(url, {"bucket": "10-14"}).content.decode()
    assert 'id="judge-agreement"' in html and "By criterion kind" in html
    assert 'id="bucket-rows"' in html
    assert f"/runs/{known.run.pk}/answers/" in html.split('id="bucket-rows"')[1]
    # The dataset page links here for reviewers.
    detail = client.get(reverse("dataset-detail", args=[reviewed_dataset.pk])).content.decode()
    assert url in detail


def test_the_page_says_how_the_labels_were_drawn(known, reviewed_dataset, client, reviewer):
    client.force_login(reviewer)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])
    html = client.get(url).content.decode()
    # The default policy draws the uncertain answers more often: PPI++ weighs the labels.
    assert 'id="design-note"' in html and "with design weights" in html
    reviewed_dataset.label_policy = "random"
    reviewed_dataset.save()
    html = client.get(url).content.decode()  # the kept figures follow the policy
    assert 'id="design-note"' not in html and "with design weights" not in html
    assert "PPI++ (power-tuned), percentile bootstrap" in html


def test_the_human_line_is_drawn(known, reviewed_dataset, client, reviewer, monkeypatch):
    from evaluation.metrics.overlap import Interval

    monkeypatch.setattr(
        sel, "dataset_mean_overlap", lambda dataset: Interval(0.29, 0.21, 0.37, 12, 6, "test")
    )
    client.force_login(reviewer)
    html = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk])).content.decode()
    assert 'class="human-line"' in html and "29.0%" in html


def test_csv_and_svg_downloads(known, reviewed_dataset, client, owner):
    client.force_login(owner)
    response = client.get(reverse("analytics-complexity-csv", args=[reviewed_dataset.pk]))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    data = sel.load_run(known.run)
    curve = sel.complexity_curve(data, summaries.system_scores(data))
    expected = {
        (line.system, p.bucket.label): p.estimate.mean for line in curve.lines for p in line.points
    }
    got = {(r["series"], r["bucket"]): r["mean"] for r in rows if r["series"] in ("Alpha", "Beta")}
    assert set(got) == set(expected)
    for key, mean in expected.items():
        assert (got[key] == "") if mean is None else float(got[key]) == pytest.approx(mean)
    assert rows[-1]["series"].startswith("human")
    svg = client.get(reverse("analytics-complexity-svg", args=[reviewed_dataset.pk]))
    assert svg["Content-Type"].startswith("image/svg+xml")
    assert svg.content.startswith(b"<svg xmlns=")


def test_compare_page_links_regressions_to_answers(reviewed_dataset, client, reviewer):
    first = build_known(reviewed_dataset, seed=1, run_name="Before")
    second = build_known(
        reviewed_dataset, seed=2, run_name="After", queries=first.plan,
        skill={"Alpha": 0.2, "Beta": 0.45},
    )  # fmt: skip
    client.force_login(reviewer)
    url = reverse("analytics-compare", args=[reviewed_dataset.pk])
    html = client.get(url, {"a": first.run.pk, "b": second.run.pk}).content.decode()
    assert 'id="paired-test"' in html and 'id="sign-p"' in html
    assert reverse("run-detail", args=[second.run.pk]) in html
    assert f"/runs/{second.run.pk}/answers/" in html


def test_criterion_health_page(known, reviewed_dataset, client, owner):
    client.force_login(owner)
    url = reverse("analytics-criteria", args=[reviewed_dataset.pk])
    html = client.get(url, {"flag": "never passed"}).content.decode()
    assert "never passed" in html and "States fact 0 of query" in html


def test_api_figures(known, reviewed_dataset, reviewer_api):
    body = reviewer_api.get(reverse("api-evaluation:analytics", args=[reviewed_dataset.pk])).json()
    assert body["run"]["id"] == known.run.pk
    assert body["labels"]["adjudicated_items"] == len(known.adjudications)
    overall = [s for s in body["scores"] if s["group"] == "all"]
    assert {s["system"] for s in overall} == {"Alpha", "Beta"}
    assert all(s["low"] <= s["mean"] <= s["high"] for s in overall)
    assert {c["system"] for c in body["calibrated"]} == {"Alpha", "Beta"}
    assert body["complexity"]["buckets"][0]["key"] == "lt10"
    assert "human_line" in body["complexity"]
    judges = {(a["rater"], a["group"]) for a in body["judge_agreement"]}
    assert {("j1", "kind"), ("j1", "source"), (summaries.PANEL, "all")} <= judges
    bad = reviewer_api.get(
        reverse("api-evaluation:analytics", args=[reviewed_dataset.pk]), {"edges": "x"}
    )
    assert bad.status_code == 400


@pytest.mark.parametrize("name", ["dataset-analytics", "analytics-criteria", "analytics-compare"])
def test_query_count_stays_flat_from_10_to_1000_answers(
    name, reviewed_dataset, client, owner, django_assert_max_num_queries
):
    client.force_login(owner)
    url = reverse(name, args=[reviewed_dataset.pk])
    build_known(reviewed_dataset, sizes=(2,) * 5, seed=1)  # 10 answers
    if name == "analytics-compare":  # two runs to compare from the start
        build_known(reviewed_dataset, sizes=(2,) * 5, seed=3, systems=("Eta", "Theta"))
    # The first request is a miss: with Celery eager here, the refresh runs in the request
    # and keeps every part (the figures counted in SQL: a temporary table of the run's
    # items and its aggregates, in a savepoint here; the run's token sums; criterion health
    # and its chunks), a fixed number of queries whatever the size (about 100 for the analytics
    # page on PostgreSQL, five of them the "least certain" policy's sampling design; 181
    # for two runs compared); the second, at 100 times the answers,
    # may not do more. Without eager, a request never computes (test_refresh.py).
    with django_assert_max_num_queries(190) as small:
        assert client.get(url).status_code == 200
    build_known(reviewed_dataset, sizes=(2,) * 500, seed=2, systems=("Gamma", "Delta"))
    assert reviewed_dataset.queries.count() >= 505
    # The second run makes the analytics page draw the score trend: one read of the runs'
    # kept scores more, for two runs as for a hundred (tests/evaluation/runs/test_trend.py).
    trend = 1 if name == "dataset-analytics" else 0
    with django_assert_max_num_queries(len(small.captured_queries) + trend):
        assert client.get(url).status_code == 200


def test_saturated_queries_are_marked_too_easy(reviewed_dataset, client, reviewer, collaborator):
    from evaluation.kept.models import KeptFigure
    from evaluation.labels.models import Adjudication
    from tests.evaluation.analytics.known import answer_shares

    known = build_known(
        reviewed_dataset, sizes=(3, 3, 3), skill={"Alpha": 1.0, "Beta": 1.0}, hard_first=False,
        label_share=0.0,
    )  # fmt: skip
    # One failed criterion on one answer of the last query: that query is not too easy.
    (answer, criterion) = next(k for k in known.votes if known.answers[k[0]][0] == max(
        q for q, _ in known.answers.values()
    ))  # fmt: skip
    Adjudication.objects.update_or_create(
        answer_id=answer, criterion_id=criterion, defaults={"label": "fail"}
    )
    known.adjudications[answer, criterion] = "fail"
    by_query: dict[int, list[float]] = {}
    for a, share in answer_shares(known).items():
        by_query.setdefault(known.answers[a][0], []).append(share)
    expected = sorted(q for q, v in by_query.items() if all(s == 1.0 for s in v))
    assert len(expected) == 2
    assert summaries.saturated(sel.load_run(known.run)) == expected
    client.force_login(reviewer)
    KeptFigure.objects.all().delete()  # where kept figures live
    # Never computed in a request (tests/evaluation/analytics/test_refresh.py); here Celery
    # is eager, so the page's refresh has kept them by the time it answers.
    body = client.get(reverse("dataset-analytics", args=[reviewed_dataset.pk])).content.decode()
    assert body.split('id="saturated"')[1].split("</ul>")[0].count("<li>") == 2
    html = client.get(reverse("dataset-detail", args=[reviewed_dataset.pk])).content.decode()
    assert html.count(">too easy<") == 2
    client.force_login(collaborator)  # an expert does not see verdict-derived flags
    html = client.get(reverse("dataset-detail", args=[reviewed_dataset.pk])).content.decode()
    assert "too easy" not in html


def test_saturated_queries_are_in_the_dataset_export(reviewed_dataset):
    from annotation.models import Query
    from evaluation.datasets.export import ExportOptions, export_chunks, query_key
    from tests.evaluation.data.zips import jsonl, members

    known = build_known(
        reviewed_dataset, sizes=(3, 3, 3), skill={"Alpha": 1.0, "Beta": 1.0}, hard_first=False,
        label_share=0.0,
    )  # fmt: skip
    expected = summaries.saturated(sel.load_run(known.run))
    assert expected  # every answer passes everything: every query is saturated
    keys = {q.pk: query_key(q.pk, q.external_id) for q in Query.objects.filter(pk__in=expected)}
    options = ExportOptions.parse(["scores"], ["jsonl", "csv"])
    data = b"".join(export_chunks(reviewed_dataset, options))
    rows = jsonl(data, "saturated_queries.jsonl")
    assert [(r["query"], r["systems"]) for r in rows] == [(keys[q], 2) for q in expected]
    assert len({r["run"] for r in rows}) == 1
    # Without the scores part, no saturation table.
    bare = b"".join(export_chunks(reviewed_dataset, ExportOptions.parse(["answers"], ["jsonl"])))
    assert "saturated_queries.jsonl" not in members(bare)


def test_api_criterion_health_is_paged_and_filtered_by_flag(
    known, reviewed_dataset, owner_api, monkeypatch, settings, django_assert_max_num_queries
):
    from evaluation.analytics import figures

    # Small pages and chunks, so that pages cross the kept chunks' edges.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "PAGE_SIZE": 10}
    monkeypatch.setattr(figures, "HEALTH_CHUNK", 7)
    url = reverse("api-evaluation:analytics-criteria", args=[reviewed_dataset.pk])
    every = figures.health_rows(known.run)  # flagged first
    assert len(every) > 20

    def pages(flag: str) -> tuple[list, int]:
        got, link, count = [], url + (f"?flag={flag}" if flag else ""), None
        while link:
            body = owner_api.get(link).json()
            count = body["count"]
            assert len(body["criteria"]) <= 10
            got += [c["criterion"] for c in body["criteria"]]
            link = body["next"]
        return got, count

    assert pages("") == ([r[0] for r in every], len(every))
    for flag in figures.HEALTH_FLAGS:
        flagged = [r[0] for r in every if flag in r[1]]
        assert pages(flag) == (flagged, len(flagged))
    second = owner_api.get(url, {"page": 2}).json()
    assert second["previous"] and second["criteria"][0]["criterion"] == every[10][0]
    with django_assert_max_num_queries(20):  # kept: one chunk read, whatever the size
        assert owner_api.get(url, {"page": 3}).status_code == 200
    assert owner_api.get(url, {"page": 99}).status_code == 404
    bad = owner_api.get(url, {"flag": "broken"})
    assert bad.status_code == 400 and "flag" in bad.json()
    assert owner_api.get(url, {"page": "x"}).status_code == 400


def test_a_criterion_health_page_read_across_a_refresh_is_whole(
    known, reviewed_dataset, monkeypatch
):
    """A refresh that keeps new chunks after the page read the first one: the page is read
    again from the new chunks, not answered short (it stopped at the first chunk cut for
    the other state)."""
    from evaluation.analytics import figures
    from evaluation.kept import events

    monkeypatch.setattr(figures, "HEALTH_CHUNK", 7)
    run = known.run
    figures.warm(run)
    before = figures.state(run).key
    read, racing = figures._read, []

    def read_then_refresh(state_, **kwargs):
        found = read(state_, **kwargs)
        if not racing:  # after the head: a label moves the state and a refresh keeps it
            racing.append(True)
            events.bump(reviewed_dataset.pk, events.Event.LABEL)
            figures.warm(run)
        return found

    monkeypatch.setattr(figures, "_read", read_then_refresh)
    served, total, rows = figures.health_slice(run, "", 0, 20)
    monkeypatch.setattr(figures, "_read", read)
    every = figures.health_rows(run)
    assert racing and figures.state(run).key != before  # the state did move
    assert served.fresh and total == len(every) > 20
    assert rows == every[:20]


def test_system_scores_show_the_runs_undecided_criteria(
    known, reviewed_dataset, client, owner, owner_api
):
    """Issue 41: a score shows how much of it is missing. The count comes from the run's
    kept scores (never counted in the analytics request): '—' until they are kept."""
    from evaluation.kept.models import KeptFigure
    from evaluation.runs import scores
    from evaluation.runs.models import Verdict

    run = known.run
    # Every vote on three (answer, criterion) items of the first system fails to parse.
    first = run.verdicts.order_by("answer__system__name", "answer_id", "criterion_id").first()
    system = first.answer.system.name
    items = list(
        run.verdicts.filter(answer__system__name=system)
        .values_list("answer_id", "criterion_id")
        .distinct()
        .order_by("answer_id", "criterion_id")[:3]
    )
    for answer_id, criterion_id in items:
        run.verdicts.filter(answer_id=answer_id, criterion_id=criterion_id).update(
            outcome=Verdict.Outcome.UNPARSEABLE
        )
    KeptFigure.objects.filter(dataset_id=reviewed_dataset.pk).delete()
    client.force_login(owner)
    url = reverse("dataset-analytics", args=[reviewed_dataset.pk])

    html = client.get(url).content.decode()
    assert "Their count shows once the run's scores are counted" in html
    api = f"/api/datasets/{reviewed_dataset.pk}/analytics/"
    listed = owner_api.get(api, {"run": run.pk}).json()["undecided"]
    assert listed and all(s["undecided"] is None for s in listed)  # not counted yet

    scores.keep_scores(run)
    expected = {s.system: s.undecided for s in scores.run_report(run).systems}
    assert expected[system] >= 1  # three items without a valid vote, unless adjudicated
    html = client.get(url).content.decode()
    assert "Their count shows once" not in html
    for name, count in expected.items():
        assert f"<tr><td>{name}</td>" in html
        row = html.split(f"<tr><td>{name}</td>", 1)[1].split("</tr>", 1)[0]
        assert f"<td data-undecided>{count}</td>" in row
    # The API gives each system's count beside its overall score, as the page does.
    body = owner_api.get(api, {"run": run.pk}).json()
    assert {s["system"]: s["undecided"] for s in body["undecided"]} == expected
    overall = {s["system_id"] for s in body["scores"] if s["group"] == "all"}
    assert {s["system_id"] for s in body["undecided"]} == overall
