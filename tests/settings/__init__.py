"""Tests of the settings models and their rules (components/settings/)."""
