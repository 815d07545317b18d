"""Tests of the lab timetable."""
