"""ksched informer service."""
