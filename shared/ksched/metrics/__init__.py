"""Metrics the services share: the histogram and labelled children their per-pod paths observe
(:mod:`~ksched.metrics.histogram`, :mod:`~ksched.metrics.metric_children`), the framework and plugin
series more than one service exports (:mod:`~ksched.metrics.framework_metrics`,
:mod:`~ksched.metrics.plugin_metrics`), and CPU time by event-loop callback
(:mod:`~ksched.metrics.loop_cpu`)."""
