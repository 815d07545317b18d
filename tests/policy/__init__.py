"""Tests of the policy pack and the security linters over the plans."""
