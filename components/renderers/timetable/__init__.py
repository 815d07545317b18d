"""The lab timetable: the CronJobs that move each pool's warm headroom (its figures in the summary:
`KarpenterPool` in `components/settings/resolved.py`).

Pure renderers: settings in, plain dicts and strings out."""
