"""Tests of the upstream facts (components/facts/)."""
