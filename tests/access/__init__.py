"""Tests of cluster access entries."""
