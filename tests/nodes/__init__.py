"""Tests of the cluster, its network and the GPU nodes: node group, userData, scheduler scoring."""
