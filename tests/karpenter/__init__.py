"""Tests of Karpenter: its pools, IAM, packing, warm headroom and the component."""
