"""What Kubernetes' apimachinery (and the Go runtime under it) defines, implemented once.

Every part of ksched that needs one of these semantics (the plugins, the configuration, kubesim,
the services) imports it from here; there is no second copy.

- :mod:`~ksched.apimachinery.quantity`: resource quantities (``resource.Quantity``).
- :mod:`~ksched.apimachinery.labels`: label requirements and selectors (``labels``,
  ``metav1.LabelSelectorAsSelector``, the ``labelSelector`` query grammar).
- :mod:`~ksched.apimachinery.fields`: field selectors (the ``fieldSelector`` query grammar).
- :mod:`~ksched.apimachinery.nodeselector`: node selectors (component-helpers ``nodeaffinity``).
- :mod:`~ksched.apimachinery.field`: field paths and ``field.Error`` texts.
- :mod:`~ksched.apimachinery.validation`: label key/value and DNS name rules with upstream's texts.
- :mod:`~ksched.apimachinery.strconv`: Go's ``strconv.Quote`` and ``strconv.ParseInt``.
- :mod:`~ksched.apimachinery.duration`: Go ``time.Duration`` text.
- :mod:`~ksched.apimachinery.gomath`: Go integer and float arithmetic (wrapping, rounding).
- :mod:`~ksched.apimachinery.typed`: the scheduler's ``util.As`` for queueing hints.

It sits just above :mod:`ksched.api` (node selectors read its structs) and below everything else.
"""
