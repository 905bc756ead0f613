"""Contract tests: Kubernetes API behaviour, against kubesim or a real cluster (KSCHED_TEST_KUBECONFIG)."""
