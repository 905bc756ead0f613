"""Offline simulation: schedule the pending pods of a cluster file as kube-scheduler would."""
