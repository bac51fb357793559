from __future__ import annotations

from django import forms
from django.conf import settings

from evaluation.answers.models import System
from evaluation.judges.models import Panel

DAYS = [
    ("*", "Every day"),
    ("mon-fri", "Monday to Friday"),
    ("sat,sun", "Saturday and Sunday"),
]


class ScheduleForm(forms.Form):
    """A dataset's scheduled run: which system's newest answers, graded by which panel,
    at what time and on which days (the server's time zone)."""

    name = forms.CharField(max_length=120, help_text="Names the runs it starts.")
    system = forms.ModelChoiceField(System.objects.none(), help_text="Its newest answers.")
    panel = forms.ModelChoiceField(Panel.objects.all())
    at = forms.TimeField(
        label="Time",
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        help_text="Hours and minutes, in the server's time zone.",
    )
    days = forms.ChoiceField(choices=DAYS, initial="*")
    enabled = forms.BooleanField(required=False, initial=True)
    canary = forms.BooleanField(
        label="Judge canary",
        required=False,
        help_text="With each run, grade the dataset's labelled items again (past the cache: "
        "counted in the run's calls) and warn \u201cjudge changed?\u201d when a judge agrees "
        "with the human labels less than last time.",
    )
    canary_items = forms.IntegerField(
        label="Canary items",
        required=False,
        min_value=1,
        max_value=100_000,
        help_text="How many labelled items the canary grades: a fixed sample, the same every "
        "night while the labels stay, so that two nights compare the same items. Blank: "
        "all of them.",
    )

    def __init__(self, *args, dataset, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Named, so that 02:30 is not typed in one's own zone for a server in another.
        zone = settings.TIME_ZONE
        self.fields["at"].help_text = f"Hours and minutes, in the server's time zone ({zone})."
        self.fields["system"].queryset = System.objects.filter(
            answers__query__dataset=dataset, is_reference=False
        ).distinct()
