"""ksched scheduler service."""
