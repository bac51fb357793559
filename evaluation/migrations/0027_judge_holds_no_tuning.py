"""The judge's tuning fields go, and every kept version names its dataset (the second step
of issue 38's move; 0025 moved the rows)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0026_tuning_rows_to_datasets")]

    operations = [
        migrations.AlterField(
            model_name="judgeversion",
            name="dataset",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judge_versions",
                to="annotation.dataset",
            ),
        ),
        migrations.AddConstraint(
            model_name="judgeversion",
            constraint=models.UniqueConstraint(
                fields=("judge", "dataset", "version"), name="one_row_per_dataset_judge_version"
            ),
        ),
        migrations.RemoveField(model_name="judge", name="examples"),
        migrations.RemoveField(model_name="judge", name="instructions"),
    ]
