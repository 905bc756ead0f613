"""ksched binder service."""
