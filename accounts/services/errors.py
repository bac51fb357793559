from __future__ import annotations


class Refused(Exception):
    """A change the rules forbid. The message is for the person; `field` is the form field
    it belongs to (None: the form as a whole)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvitationUnusable(Exception):
    """The invitation cannot be accepted (any more); `state` says why
    (accounts.selectors.InvitationState)."""

    def __init__(self, state: str) -> None:
        super().__init__(state)
        self.state = state
