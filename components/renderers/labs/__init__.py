"""Learning labs: namespaces, quota, limits, fences, the lab-member Role, the GPU admission guard and the demo
(the EC2 vCPU quotas: `ResolvedStack.quota_needs`).

Pure renderers: settings in, plain dicts and strings out."""
