from django.db import migrations, models


def forget_kept_queues(apps, schema_editor):
    # Kept queues are derived: the next reader orders them again. Their rows carry 1..N
    # positions, not the sort keys the new order reads, so they go with their headers.
    apps.get_model("evaluation", "KeptQueueRow").objects.all().delete()
    apps.get_model("evaluation", "KeptFigure").objects.filter(
        kind__in=["labelling-queue", "disagreement-queue"]
    ).delete()


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0018_kept_figures_and_refreshes'),
    ]

    operations = [
        migrations.RunPython(forget_kept_queues, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name='keptqueuerow', name='kept_queue_order'),
        migrations.RemoveField(model_name='keptqueuerow', name='position'),
        migrations.AddField(
            model_name='keptqueuerow',
            name='sort_key',
            field=models.CharField(default='', max_length=80),
            preserve_default=False,
        ),
        migrations.AddIndex(
            model_name='keptqueuerow',
            index=models.Index(
                fields=['kept', 'adjudicated', 'sort_key'], name='kept_queue_order'
            ),
        ),
    ]
