"""EKS access entries (who may do what in the cluster) and the Pod Identity roles' documents.

Pure renderers: settings in, plain dicts and strings out."""
