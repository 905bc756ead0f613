"""Benchmarks behind ``ksched bench`` and ``make bench``: they print figures; they are not tests."""
