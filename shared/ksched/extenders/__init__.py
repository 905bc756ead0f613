"""Scheduler extenders over HTTP(S), as kube-scheduler's ``extenders`` configuration describes them.

:class:`HTTPExtenders` builds the configured extenders (``ksched.config.types.Extender``); give its
``extenders`` to each Framework (``fw.extenders = ...``) and close it when done. The framework calls
them through the :class:`ksched.framework.extender.Extender` protocol. See docs/extenders.md.
"""

from ksched.extenders.http import ExtenderConfigError, HTTPExtender, HTTPExtenders

__all__ = ["ExtenderConfigError", "HTTPExtender", "HTTPExtenders"]
