"""A run's verdicts in id order (the verdicts API's pages), built without locking the table
on PostgreSQL: CREATE INDEX CONCURRENTLY, outside a transaction, so that a site with a
year of verdicts keeps grading and labelling while it is built (minutes at 260 million)."""

from django.db import migrations, models

NAME = "verdict_run_in_id_order"


def create(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(
        f"CREATE INDEX {concurrently}IF NOT EXISTS {NAME} ON evaluation_verdict (run_id, id)"
    )


def drop(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {NAME}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run inside a transaction

    dependencies = [
        ("evaluation", "0035_dataset_refresh_markers"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(
                    model_name="verdict",
                    index=models.Index(fields=["run", "id"], name=NAME),
                ),
            ],
            database_operations=[migrations.RunPython(create, drop)],
        ),
    ]
