"""Indexes of the Answers page (issue 40): a trigram index on the answers' text for its
search, and the systems' answers by query, system and run label for its counts and order.

The trigram index is PostgreSQL only: the search is Django's `icontains` (UPPER(text) LIKE UPPER('%…%')), which a
GIN index of pg_trgm's trigrams on UPPER(text) serves at any size. When the extension cannot
be created (a role without the right; docs/operations.md), the index is left out and the
search reads every answer of the dataset instead: slower, still right. SQLite has neither.
"""

from django.db import DatabaseError, migrations, models, transaction

INDEX = "answer_text_trgm"


def create_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        with transaction.atomic():
            schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError:
        return
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON evaluation_answer "
        "USING gin (UPPER(text) gin_trgm_ops)"
    )


def drop_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0027_judge_holds_no_tuning")]

    operations = [
        migrations.RunPython(create_index, drop_index),
        # The list's counts and order read from an index alone (evaluation.answers.models).
        migrations.AddIndex(
            model_name="answer",
            index=models.Index(
                condition=models.Q(("checklist__isnull", True)),
                fields=["query", "system", "run_label", "id"],
                name="answer_systems_listing",
            ),
        ),
    ]
