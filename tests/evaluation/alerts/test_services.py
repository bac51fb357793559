"""An alert is written through evaluation.alerts.services from the page and the API alike."""

from __future__ import annotations

import pytest

from evaluation.alerts import services as alerts
from evaluation.alerts.models import RegressionAlert
from tests.factories import DatasetFactory


def test_an_alert_of_another_dataset_is_refused(dataset, owner):
    alert = alerts.alert_save(dataset=dataset, by=owner, emails="a@example.com")
    assert (alert.dataset, alert.created_by, alert.emails) == (dataset, owner, "a@example.com")
    with pytest.raises(ValueError):
        alerts.alert_save(dataset=DatasetFactory(), alert=alert, threshold=0.5)
    with pytest.raises(TypeError):
        alerts.alert_save(dataset=dataset, alert=alert, created_by=None)
    alerts.alert_delete(alert=alert)
    assert not RegressionAlert.objects.exists()
