"""GPU health and use: the add-ons' configuration, the platform's dcgm-exporter, which DaemonSet runs the
DCGM host engine, the dashboard and the alarms.

Pure renderers: settings in, plain dicts and strings out."""
