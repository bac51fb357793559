"""Reference data a new installation starts with: query categories, source types and the
Finance guideline, version 1.

Seeded after every migrate, but only into an empty table: an admin who deletes or renames
a seeded row is not overruled by the next upgrade. (The test runner's flush also emits
post_migrate, which is how flushed test databases get their reference data back.)
"""

from __future__ import annotations

from django.db import transaction
from django.utils.text import slugify

from annotation.models import Guideline, QueryCategory, SourceType
from annotation.validation import FINANCE

CATEGORIES = (
    "Point-fact retrieval",
    "Time series and deltas",
    "Event digest",
    "Forward guidance and comparison",
    "Thematic extraction",
    "Strategic analysis",
    "Other",
)

SOURCE_TYPES = (
    ("Filings", "Annual and quarterly reports and other regulatory filings (10-K, 10-Q, 8-K)."),
    ("Earnings call transcript", ""),
    ("Earnings release", ""),
    ("Press release", ""),
    ("Consensus data", "Analysts' consensus estimates."),
    ("Stock price data", ""),
    ("Professional analyses", "Broker and rating-agency research."),
    ("Industry news", ""),
    ("Financial news", ""),
    ("Regulatory release", "Releases of regulators and central banks."),
    ("Industry report", ""),
    ("Market data", ""),
)
BANNED_SOURCE_TYPES = (("AI tools", "Chatbots and other generative AI: never a source."),)

FINANCE_GUIDELINE = "Finance"


@transaction.atomic
def seed_reference_data() -> None:

    if not QueryCategory.objects.exists():
        QueryCategory.objects.bulk_create(
            QueryCategory(name=name, position=i) for i, name in enumerate(CATEGORIES)
        )
    if not SourceType.objects.exists():
        SourceType.objects.bulk_create(
            SourceType(name=name, slug=slugify(name), description=text, is_banned=banned)
            for banned, entries in ((False, SOURCE_TYPES), (True, BANNED_SOURCE_TYPES))
            for name, text in entries
        )
    if not Guideline.objects.exists():
        Guideline.objects.create(
            name=FINANCE_GUIDELINE,
            version=1,
            description="Action verbs, one sentence, sourced facts, no hindsight leakage.",
            config=FINANCE.to_dict(),
        )
