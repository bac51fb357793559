"""Every query gets an external id: `query-<pk>` for those without one (the name exports
already gave them, so files exported before still match), `query-<pk>-<n>` where another
query of the dataset holds that. Ids given before came from imported files: they are
marked fixed ("import"). Separate from 0010, which alters the table: on PostgreSQL a data
migration and an ALTER of the same table in one transaction fail ("pending trigger
events")."""

from django.db import migrations
from django.utils import timezone


def default_id(pk: int, attempt: int) -> str:  # annotation.query_ids.default_external_id
    return f"query-{pk}" if attempt == 1 else f"query-{pk}-{attempt}"


def give_ids(apps, schema_editor):
    Query = apps.get_model("annotation", "Query")
    now = timezone.now()
    Query.objects.exclude(external_id="").filter(external_id_fixed_by="").update(
        external_id_fixed_by="import", external_id_fixed_at=now
    )
    missing = Query.objects.filter(external_id="").values_list("pk", "dataset_id")
    by_dataset: dict[int, list[int]] = {}
    for pk, dataset_id in missing.iterator(chunk_size=5000):
        by_dataset.setdefault(dataset_id, []).append(pk)
    for dataset_id, pks in by_dataset.items():
        taken = set(
            Query.objects.filter(dataset_id=dataset_id)
            .exclude(external_id="")
            .values_list("external_id", flat=True)
        )
        changed = []
        for pk in pks:
            attempt = 1
            while default_id(pk, attempt) in taken:
                attempt += 1
            taken.add(default_id(pk, attempt))
            changed.append(Query(pk=pk, external_id=default_id(pk, attempt)))
        Query.objects.bulk_update(changed, ["external_id"], batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_query_external_id_fixed"),
    ]

    operations = [
        migrations.RunPython(give_ids, migrations.RunPython.noop),
    ]
