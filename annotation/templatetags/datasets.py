"""Template helpers of dataset pages: {% dataset_nav %} (the dataset's navigation, on the
pages it links to) and the `with_article` filter ("an expert", for role sentences)."""

from __future__ import annotations

from django import template

from annotation import dataset_nav as nav
from annotation import roles
from annotation.access import dataset_permissions
from annotation.models import Dataset

register = template.Library()


@register.filter
def with_article(role: object) -> str:
    return roles.with_article(str(role))


@register.inclusion_tag("annotation/_dataset_nav.html", takes_context=True)
def dataset_nav(context: template.Context) -> dict:
    """Shown on the pages the navigation links to, for the dataset the page is about."""
    request = context.get("request")
    dataset = context.get("dataset")
    match = getattr(request, "resolver_match", None)
    if (
        match is None
        or match.url_name not in nav.PAGES
        or not isinstance(dataset, Dataset)
        or match.kwargs.get("pk") != dataset.pk
    ):
        return {"groups": []}
    perms = dataset_permissions(request.user, dataset)
    return {"groups": nav.groups(dataset.pk, perms, match.url_name)}
