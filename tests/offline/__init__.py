"""Tests of the offline synth, the whole program under mocks, the diff and the config front door."""
