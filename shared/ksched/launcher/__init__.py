"""Starting a whole ksched installation on this machine: NATS, kubesim and every service as its
own process (``ksched up``, the ``make run`` demo, end-to-end tests and benchmarks)."""
