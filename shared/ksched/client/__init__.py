"""The Kubernetes client: the place client-go holds upstream. Every read, watch and write of
ksched to the API server goes through it; nothing else imports an HTTP client for the API server.

- :mod:`~ksched.client.rest`: :class:`~ksched.client.rest.Client`, requests (429 retried as
  client-go does), JSON reads and writes, watch streams.
- :mod:`~ksched.client.config`: the client of a kubeconfig, the in-cluster account or ``--master``.
- :mod:`~ksched.client.http1`: the keep-alive HTTP/1.1 connections requests are sent on.
- :mod:`~ksched.client.proxy`: the proxy from the environment (Go's ``ProxyFromEnvironment``),
  shared with the extenders' client.
- :mod:`~ksched.client.pager`: listing a collection page by page (client-go's pager).
- :mod:`~ksched.client.reviews`: TokenReview and SubjectAccessReview (the secure port's delegation).
- :mod:`~ksched.client.leader`: Lease-based leader election, renewed in a thread of its own.

Why this HTTP client, measured against the others: docs/client.md. It sits above
:mod:`ksched.apimachinery` and :mod:`ksched.api` and below the framework, the plugins and the services.
"""
