"""ksched kubesim service."""
