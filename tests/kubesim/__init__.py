"""Unit tests of kubesim internals and fixture comparisons with real API server captures."""
