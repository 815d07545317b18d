"""Tests of GPU health and utilisation: DCGM, alarms, dashboard, node repair."""
