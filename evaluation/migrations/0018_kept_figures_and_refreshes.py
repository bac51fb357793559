import django.db.models.deletion
from django.db import migrations, models


def forget_kept_rows(apps, schema_editor):
    # Kept figures are derived: the next reader computes them again. The rows kept before
    # have no kind, run or part to be replaced by, and their keys are built differently:
    # they would never be read or replaced again. Their queue rows go with them, and so do
    # the analytics refresh markers and back-off records kept among them (they expire).
    apps.get_model("evaluation", "KeptQueueRow").objects.all().delete()
    apps.get_model("evaluation", "KeptFigure").objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0008_dataset_deleting_since'),
        ('evaluation', '0017_review_revision_answers'),
    ]

    operations = [
        # The model is renamed, its table kept: first say that the table is named, so that
        # the rename leaves it where it is.
        migrations.AlterModelTable(name='agreementcache', table='evaluation_agreementcache'),
        migrations.RenameModel(old_name='AgreementCache', new_name='KeptFigure'),
        migrations.RunPython(forget_kept_rows, migrations.RunPython.noop),
        migrations.AddField(
            model_name='keptfigure',
            name='kind',
            field=models.CharField(default='', max_length=40),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name='keptfigure',
            name='part',
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddField(
            model_name='keptfigure',
            name='revision',
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name='keptfigure',
            name='run_id',
            field=models.BigIntegerField(null=True),
        ),
        migrations.AlterField(
            model_name='keptqueuerow',
            name='kept',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='evaluation.keptfigure'),
        ),
        migrations.AddIndex(
            model_name='keptfigure',
            index=models.Index(fields=['dataset', 'kind', 'run_id', 'part'], name='kept_figure_slot'),
        ),
        migrations.CreateModel(
            name='KeptRefresh',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('group', models.CharField(max_length=100)),
                ('claimed_at', models.DateTimeField()),
                ('error', models.CharField(blank=True, max_length=200)),
                ('failed_at', models.DateTimeField(null=True)),
                ('tries', models.PositiveIntegerField(default=0)),
                ('retry_at', models.DateTimeField(null=True)),
                ('dataset', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='annotation.dataset')),
                ('run', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='evaluation.run')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('run', 'group'), name='one_refresh_per_run_and_group')],
            },
        ),
    ]
