"""Tests of the weekly cost report and forecast."""
