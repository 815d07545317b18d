"""Tests of the GPU idle reaper."""
