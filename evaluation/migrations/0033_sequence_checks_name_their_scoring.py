"""Every stored sequence check (tool_sequence, step_order) names its scoring. A check saved
before issue 41 has none and reads partial credit when its threshold is below 1, pass/fail
otherwise (evaluation.checks.trajectory.scoring_of): that reading is written into its
parameters, so its verdicts do not change, and the check page, which now saves pass/fail
unless partial is asked for, shows it and keeps it when the check is saved again. Files
exported before may still carry checks without one: scoring_of reads them as before."""

from django.db import migrations

SEQUENCE_KINDS = ("tool_sequence", "step_order")


def name_the_scoring(apps, schema_editor):
    CriterionCheck = apps.get_model("evaluation", "CriterionCheck")
    for check in CriterionCheck.objects.filter(kind__in=SEQUENCE_KINDS).iterator():
        params = check.params if isinstance(check.params, dict) else {}
        if "scoring" in params:
            continue
        # scoring_of, as it read this check until now (frozen here: a migration keeps it).
        partial = check.threshold is not None and check.threshold < 1
        check.params = {**params, "scoring": "partial" if partial else "pass_fail"}
        check.save(update_fields=["params"])


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0032_judge_canary")]

    operations = [migrations.RunPython(name_the_scoring, migrations.RunPython.noop)]
