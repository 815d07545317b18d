"""Tests of the deploy preflight."""
