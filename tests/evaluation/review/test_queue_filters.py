"""Review queues narrowed by search, system, criterion kind and checklist author; "item X
of N" on the review page within the filtered queue; skip; the author on every row; pressed
label buttons; an adjudicated pass replacing the panel's fail (issue 15)."""

from __future__ import annotations

import html
import re
from urllib.parse import urlencode

import pytest
from django.urls import reverse

from evaluation.labels.models import Adjudication, HumanLabel
from tests.evaluation.review.two_experts import TWIN, build_two_experts

pytestmark = pytest.mark.django_db


@pytest.fixture
def two(reviewed_dataset):
    return build_two_experts(reviewed_dataset)


def queue_rows(client, dataset, **params) -> list[tuple[int, int]]:
    """(answer, criterion) of each row of the disagreement queue page, in order."""
    url = reverse("review-queue", args=[dataset.pk])
    response = client.get(url + "?" + urlencode({"queue": "disagreement", **params}))
    assert response.status_code == 200
    found = re.findall(r'/answers/(\d+)/review/\?[^"]*?criterion=(\d+)', response.content.decode())
    return list(dict.fromkeys((int(a), int(c)) for a, c in found))


def test_each_row_names_the_checklist_author(client, two, reviewed_dataset, reviewer):
    client.force_login(reviewer)
    page = client.get(
        reverse("review-queue", args=[reviewed_dataset.pk]) + "?queue=disagreement"
    ).content.decode()
    rows = re.findall(r"<tr>.*?</tr>", page, flags=re.S)
    twins = [r for r in rows if html.escape(TWIN) in r or TWIN in r]
    assert len(twins) == 4  # two answers × the two experts' identical criteria
    authors = [re.search(r"checklist by (\w+)", r).group(1) for r in twins]
    assert sorted(authors) == ["alice", "alice", "bob", "bob"]


def test_filters_really_filter(client, two, reviewed_dataset, reviewer):
    client.force_login(reviewer)
    d = reviewed_dataset
    alpha, beta, other = (two.answers[k].pk for k in ("alpha", "beta", "other"))
    a_twin, b_twin = (c.pk for c in two.twins)
    everything = queue_rows(client, d)
    assert len(everything) == 7
    assert queue_rows(client, d, system=two.systems["beta"].pk) == [
        (beta, a_twin), (beta, b_twin), (beta, two.table.pk),
    ]  # fmt: skip
    assert queue_rows(client, d, kind="format") == [(alpha, two.table.pk), (beta, two.table.pk)]
    assert queue_rows(client, d, author=two.alice.pk) == [
        (alpha, a_twin), (beta, a_twin), (other, two.other.pk),
    ]  # fmt: skip
    # The search matches a query's text or a criterion's, case-insensitively.
    assert queue_rows(client, d, q="globex") == [(other, two.other.pk)]
    assert queue_rows(client, d, q="IN A TABLE") == [(alpha, two.table.pk), (beta, two.table.pk)]
    # Filters combine.
    assert queue_rows(
        client, d, author=two.bob.pk, system=two.systems["alpha"].pk, kind="fact"
    ) == [(alpha, b_twin)]
    # The labelling queue takes the search and the system (its items are whole answers);
    # every answer in it, so that the policy's draw does not decide what the search finds.
    d.label_policy = "all"
    d.save()
    labelling = client.get(
        reverse("review-queue", args=[d.pk]) + "?queue=labelling&q=globex"
    ).content.decode()
    assert f"/answers/{other}/review/" in labelling
    assert f"/answers/{alpha}/review/" not in labelling


@pytest.mark.parametrize(
    "params",
    [
        {"q": "<script>alert(1)</script>"},
        {"q": "%' OR 1=1 --"},
        {"q": "x" * 5000},
        {"kind": "<b>fact</b>"},
        {"system": "1e3"},
        {"system": "99999999999999999999999"},
        {"author": "-1"},
    ],
)
def test_hostile_filters_are_safe(client, two, reviewed_dataset, reviewer, params):
    client.force_login(reviewer)
    url = reverse("review-queue", args=[reviewed_dataset.pk])
    response = client.get(url + "?" + urlencode({"queue": "disagreement", **params}))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<script>alert(1)</script>" not in page
    if "q" in params:
        assert queue_rows(client, reviewed_dataset, **params) == []
    elif "q" not in params:  # a value that names nothing filters nothing
        assert len(queue_rows(client, reviewed_dataset, **params)) == 7


def test_a_nul_in_the_search_is_refused_with_a_message(client, two, reviewed_dataset, reviewer):
    client.force_login(reviewer)
    url = reverse("review-queue", args=[reviewed_dataset.pk])
    response = client.get(url + "?" + urlencode({"queue": "disagreement", "q": "a\x00b"}))
    assert response.status_code == 400 and b"NUL" in response.content


def test_item_x_of_n_within_the_filtered_queue(client, two, reviewed_dataset, reviewer):
    client.force_login(reviewer)
    d = reviewed_dataset
    beta, b_twin = two.answers["beta"].pk, two.twins[1].pk
    queue = reverse("review-queue", args=[d.pk])
    # The queue page links each item with its place: beta's second twin is 5th of 7...
    page = client.get(queue + "?queue=disagreement").content.decode()
    link = re.search(rf'href="(/answers/{beta}/review/\?[^"]*criterion={b_twin}[^"]*)"', page)
    opened = client.get(html.unescape(link.group(1))).content.decode()
    assert re.search(r"Item <strong>5</strong> of <strong>7</strong>", opened)
    # ...and 3rd of 4 among bob's criteria; Next carries the filters and says the place.
    page = client.get(queue + f"?queue=disagreement&author={two.bob.pk}").content.decode()
    link = re.search(rf'href="(/answers/{beta}/review/\?[^"]*criterion={b_twin}[^"]*)"', page)
    opened = client.get(html.unescape(link.group(1))).content.decode()
    assert re.search(r"Item <strong>3</strong> of <strong>4</strong>", opened)
    assert "filtered" in opened
    nxt = html.unescape(re.search(r'id="next-item" href="([^"]+)"', opened).group(1))
    assert f"author={two.bob.pk}" in nxt
    following = client.get(nxt)
    assert "pos=4" in following["Location"] and "of=4" in following["Location"]
    assert re.search(
        r"Item <strong>4</strong> of <strong>4</strong>",
        client.get(following["Location"]).content.decode(),
    )
    # A position that makes no sense is not shown; opened without a queue, none is.
    review = reverse("answer-review", args=[beta])
    for params in (
        "?queue=disagreement&pos=9&of=4",
        "?queue=disagreement&pos=x&of=4",
        "?pos=1&of=4",
    ):
        assert "data-queue-position" not in client.get(review + params).content.decode()


def test_skip_moves_on_and_brings_skipped_items_back_last(client, two, reviewed_dataset, reviewer):
    client.force_login(reviewer)
    alpha = two.answers["alpha"].pk
    nxt = reverse("review-next", args=[reviewed_dataset.pk])
    params = {"queue": "disagreement", "kind": "format"}  # two items: alpha's, beta's table
    first = client.get(nxt + "?" + urlencode(params))
    assert f"/answers/{alpha}/review/" in first["Location"]
    assert "kind=format" in first["Location"]
    skipped = client.get(
        nxt + "?" + urlencode({**params, "answer": alpha, "criterion": two.table.pk, "skip": 1})
    )
    beta = two.answers["beta"].pk
    assert f"/answers/{beta}/review/" in skipped["Location"]
    # From beta's item, Next would wrap to the skipped one only because nothing else is left.
    again = client.get(nxt + "?" + urlencode({**params, "answer": beta, "criterion": two.table.pk}))
    assert f"/answers/{alpha}/review/" in again["Location"]
    # In the whole queue the skipped item is passed over while others remain: after
    # alpha's second twin comes beta's first twin, not alpha's (skipped) table.
    whole = client.get(nxt + "?" + urlencode(
        {"queue": "disagreement", "answer": alpha, "criterion": two.twins[1].pk}
    ))  # fmt: skip
    assert f"/answers/{beta}/review/" in whole["Location"]
    assert f"criterion={two.twins[0].pk}" in whole["Location"]
    assert not HumanLabel.objects.exists()  # skipping labels nothing


def test_label_buttons_pressed_and_in_the_tab_order(client, two, reviewer):
    client.force_login(reviewer)
    answer = two.answers["alpha"]
    HumanLabel.objects.create(answer=answer, criterion=two.twins[0], rater="reviewer", label="fail")
    page = client.get(reverse("answer-review", args=[answer.pk])).content.decode()
    assert 'tabindex="-1"' not in page
    block = page[page.index(f'id="row-{two.twins[0].pk}"') :]
    block = block[: block.index("</form>")]
    assert 'value="fail" aria-pressed="true"' in block
    assert 'value="pass" aria-pressed="false"' in block


def test_an_adjudicated_pass_replaces_the_fail_bar(client, two, reviewer):
    client.force_login(reviewer)
    answer = two.answers["alpha"]
    url = reverse("answer-review", args=[answer.pk])
    before = client.get(url).content.decode()
    assert re.search(rf'id="row-{two.table.pk}" class="[^"]*final-fail', before)
    Adjudication.objects.create(answer=answer, criterion=two.table, label="pass")
    after = client.get(url).content.decode()
    assert re.search(rf'id="row-{two.table.pk}" class="[^"]*final-pass', after)
    assert "adjudicated pass" in after


def test_the_queue_item_is_singled_out(client, two, reviewer):
    client.force_login(reviewer)
    answer = two.answers["alpha"]
    url = reverse("answer-review", args=[answer.pk])
    page = client.get(f"{url}?queue=disagreement&criterion={two.table.pk}").content.decode()
    assert re.search(rf'id="row-{two.table.pk}" class="[^"]*queue-item', page)
    assert re.search(rf'id="row-{two.twins[0].pk}" class="[^"]*other-item', page)
    assert f'data-current="{two.table.pk}"' in page
