"""Tests of each lab's JupyterHub."""
