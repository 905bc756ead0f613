"""The scheduling framework: extension-point interfaces, cluster snapshot, and the runtime
that runs a profile's plugins through one scheduling cycle, as upstream kube-scheduler does."""
