"""Tests of the house rules: sizes, layers, function length, suite layout, README, docs, workflows."""
