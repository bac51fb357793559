from __future__ import annotations

from rest_framework import serializers

from annotation.models import Dataset, Query


class DatasetSerializer(serializers.ModelSerializer):
    query_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = Dataset
        fields = [
            "id",
            "name",
            "description",
            "experts_per_query",
            "show_submitted_checklists",
            "query_count",
            "created_at",
        ]
        read_only_fields = ["id", "created_at", "query_count"]


class QuerySerializer(serializers.ModelSerializer):
    class Meta:
        model = Query
        fields = ["id", "dataset", "text", "query_date", "category", "status", "created_at"]
        read_only_fields = fields
