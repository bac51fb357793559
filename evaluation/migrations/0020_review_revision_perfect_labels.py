from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0019_kept_queue_sort_key'),
    ]

    operations = [
        migrations.AddField(
            model_name='reviewrevision',
            name='perfect_labels',
            field=models.BigIntegerField(db_default=0, default=0),
        ),
    ]
