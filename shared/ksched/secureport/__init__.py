"""The secure port of every service, as kube-scheduler's: delegated authentication and
authorization (:mod:`~ksched.secureport.delegated`) and its TLS context, given or self-signed
(:mod:`~ksched.secureport.selfsigned`)."""
