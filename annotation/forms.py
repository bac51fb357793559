from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from annotation.models import Dataset
from annotation.roles import DatasetRole


class DatasetForm(forms.ModelForm):
    class Meta:
        model = Dataset
        fields = ["name", "description", "experts_per_query", "show_submitted_checklists"]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=[(r.value, r.value.title()) for r in DatasetRole])

    def clean_username(self) -> object:
        username = self.cleaned_data["username"]
        try:
            return get_user_model().objects.get(username=username, is_active=True)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError(f"No active user is called {username!r}.") from None


class QueryFilterForm(forms.Form):
    q = forms.CharField(required=False, label="Search")
    status = forms.ChoiceField(required=False)

    def __init__(self, *args: object, **kwargs: object) -> None:
        from annotation.models import Query

        super().__init__(*args, **kwargs)
        self.fields["status"].choices = [("", "Any status"), *Query.Status.choices]
