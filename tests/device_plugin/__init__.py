"""Tests of the NVIDIA device plugin and the GPU sharing kinds."""
