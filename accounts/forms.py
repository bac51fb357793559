"""Forms of the members, invitation and account pages (input validation only; the rules are
the services')."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.utils import timezone

from accounts.models import ROLE_CHOICES, ApiToken
from accounts.services import Refused
from annotation import roles
from annotation.models import Dataset
from annotation.selectors import datasets_for_user


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=ROLE_CHOICES)

    def clean_username(self) -> object:
        username = self.cleaned_data["username"]
        try:
            return get_user_model().objects.get(username=username, is_active=True)
        except get_user_model().DoesNotExist:
            raise forms.ValidationError(f"No active user is called {username!r}.") from None


class InviteForm(forms.Form):
    prefix = "invite"
    email = forms.EmailField(label="Email address")
    role = forms.ChoiceField(choices=ROLE_CHOICES)
    # Set by the confirmation step only: the role the address's account holds now, which
    # the inviter agreed to replace (accounts.services.people.invite).
    replaces = forms.ChoiceField(choices=ROLE_CHOICES, required=False, widget=forms.HiddenInput)


class NewAccountForm(UserCreationForm):
    """An account an admin makes with its initial password (Django's password validators
    apply, and usernames that differ only in case are refused)."""

    prefix = "account"
    role = forms.ChoiceField(choices=ROLE_CHOICES)

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
        labels = {"email": "Email address"}

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["email"].required = True
        self.fields["username"].widget.attrs.pop("autofocus", None)
        password = self.fields["password1"]
        password.label = "Initial password"
        password.help_text = (
            "Tell it to them another way than email; they change it on their account page."
        )
        self.fields["password2"].label = "Initial password again"


class AcceptInvitationForm(UserCreationForm):
    """The invitee's username and password; the address is the invitation's."""

    def __init__(self, *args, email: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Read by the password validators (UserAttributeSimilarityValidator).
        self.instance.email = email


EXPIRY_CHOICES = [
    ("", "Never"), ("7", "In 7 days"), ("30", "In 30 days"), ("90", "In 90 days"),
    ("365", "In a year"),
]  # fmt: skip


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="What uses it, such as “nightly upload on ci-runner-2”."
    )
    scope = forms.ChoiceField(
        choices=ApiToken.Scope.choices,
        initial=ApiToken.Scope.READ,
        help_text=(
            "Read only refuses every request that would change something; rewards only may "
            "call the reward endpoints of the datasets you administer, for RL trainers."
        ),
    )
    datasets = forms.ModelMultipleChoiceField(
        queryset=Dataset.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Limited to",
        help_text="None ticked: every dataset you are a member of. A rewards token needs some.",
    )
    expires_in = forms.ChoiceField(choices=EXPIRY_CHOICES, required=False, label="Expires")

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["datasets"].queryset = datasets_for_user(user).order_by("name")
        if not datasets_for_user(user, roles.CHANGE).exists():
            # Only a dataset's admins make rewards tokens: not offered to anyone else.
            scope = self.fields["scope"]
            scope.choices = [c for c in scope.choices if c[0] != ApiToken.Scope.REWARDS]
            scope.help_text = "Read only refuses every request that would change something."

    def token_fields(self) -> dict[str, object]:
        """The cleaned data as accounts.services.api_token_create takes it."""
        days = self.cleaned_data.get("expires_in")
        return {
            "name": self.cleaned_data["name"],
            "scope": self.cleaned_data["scope"],
            "datasets": list(self.cleaned_data["datasets"]),
            "expires_at": timezone.now() + dt.timedelta(days=int(days)) if days else None,
        }


def refusal_on(form: forms.Form, refused: Refused) -> None:
    """Show a service's refusal on the field it names, or on the whole form."""
    field = refused.field if refused.field in form.fields else None
    form.add_error(field, refused.message)
