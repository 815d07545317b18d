"""Learning labs: namespaces, quota, limits, fences, the lab-member Role, the GPU admission guard and the demo.

Pure renderers: settings in, plain dicts and strings out."""
