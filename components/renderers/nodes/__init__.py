"""How nodes are built: the GPU nodes' userData (nodeadm) and the network layout.

Pure renderers: settings in, plain dicts and strings out."""
