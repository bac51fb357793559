"""The fault suite: runs, exports, imports, schedules and webhooks under infrastructure
faults (a database restart, a judge outage, a broker restart, a full disk), with the real
services. See docs/operations.md, "When the infrastructure fails"."""
