"""Tests of the learning labs: RBAC, quota, the GPU admission guard, the demo, the egress fence."""
