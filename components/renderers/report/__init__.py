"""The cost report: the learner demand model, the simulated week, the forecast and its chart.

Pure renderers: settings in, plain dicts and strings out."""
