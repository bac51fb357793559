# The delivery of each regression alert's email and webhook, recorded on its event: the
# webhook's attempts (count, log, last status or error, next try, delivered at) and the
# email's state, which replaces the `emailed` flag.

from django.db import migrations, models
from django.db.models import F, Q

STATES = [
    ("", "not asked"), ("pending", "queued"), ("sending", "sending"),
    ("retrying", "waiting to try again"), ("delivered", "delivered"), ("failed", "failed"),
]


def carry_over(apps, schema_editor):
    """Events sent before: one attempt each, as the flag and the status said."""
    AlertEvent = apps.get_model("evaluation", "AlertEvent")
    AlertEvent.objects.filter(emailed=True).update(
        email_state="delivered", emailed_at=F("created_at")
    )
    AlertEvent.objects.filter(webhook_status__gte=200, webhook_status__lt=300).update(
        webhook_state="delivered", webhook_attempts=1, webhook_attempted_at=F("created_at"),
        webhook_delivered_at=F("created_at"),
    )
    AlertEvent.objects.exclude(webhook_state="delivered").filter(
        Q(webhook_status__isnull=False) | ~Q(webhook_error="")
    ).update(webhook_state="failed", webhook_attempts=1, webhook_attempted_at=F("created_at"))


def carry_back(apps, schema_editor):
    AlertEvent = apps.get_model("evaluation", "AlertEvent")
    AlertEvent.objects.filter(email_state="delivered").update(emailed=True)


class Migration(migrations.Migration):

    dependencies = [
        ('evaluation', '0020_review_revision_perfect_labels'),
    ]

    operations = [
        migrations.AddField(
            model_name='alertevent',
            name='email_state',
            field=models.CharField(blank=True, choices=STATES, default='', max_length=10),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='email_error',
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='emailed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='webhook_state',
            field=models.CharField(blank=True, choices=STATES, default='', max_length=10),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='webhook_attempts',
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='webhook_attempted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='webhook_retry_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='webhook_delivered_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='alertevent',
            name='webhook_log',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(carry_over, carry_back),
        migrations.RemoveField(
            model_name='alertevent',
            name='emailed',
        ),
    ]
