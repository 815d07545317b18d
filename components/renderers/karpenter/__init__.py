"""Karpenter: its IAM and interruption handling, chart values, the GPU and CPU NodePools and EC2NodeClasses, the
packing model and the warm headroom.

Pure renderers: settings in, plain dicts and strings out."""
