"""``ksched differential``: random cases played on the real kube-scheduler and replayed through
``ksched simulate`` (docs/differential.md)."""
