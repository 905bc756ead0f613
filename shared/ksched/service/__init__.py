"""What every ksched service shares: options, the health/metrics endpoint, task supervision,
and the Kubernetes client. Service packages (``ksched_*``) build on this."""
