"""ksched queue service."""
