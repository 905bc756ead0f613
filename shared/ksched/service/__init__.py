"""The shell every ksched service shares: its command (flags, options, typed configuration), its
lifecycle and graceful stop, named task supervision, the health and metrics endpoint, logging,
leader election of the singletons, and GC pacing. Service packages (``ksched_*``) build on this;
what the services write to the API server is :mod:`ksched.reporting`, their metrics
:mod:`ksched.metrics`, their flag syntax :mod:`ksched.flags`, their secure port
:mod:`ksched.secureport`."""
