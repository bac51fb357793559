"""Create the site-wide groups Expert, Reviewer and Admin with their model permissions."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

GROUPS = {
    "Expert": (),
    "Reviewer": (),
    "Admin": ("add_dataset",),
}


def create_groups(apps, schema_editor):
    # Permissions are normally created after all migrations ran; make sure they exist now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        perms = Permission.objects.filter(content_type__app_label="annotation", codename__in=codenames)
        group.permissions.add(*perms)


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
