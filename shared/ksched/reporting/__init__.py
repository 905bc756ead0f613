"""What the scheduler and the binder write to the API server besides bindings, off the scheduling
cycle: events.k8s.io Events, the pod's PodScheduled condition and nominatedNodeName, a PodGroup's
PodGroupScheduled (:mod:`~ksched.reporting.reporter`), and kube-scheduler-simulator's result
annotations (:mod:`~ksched.reporting.simulator_results`, written by
:mod:`~ksched.reporting.result_writer`)."""
