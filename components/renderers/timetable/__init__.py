"""The lab timetable: the CronJobs that move each pool's warm headroom, and its report rows.

Pure renderers: settings in, plain dicts and strings out."""
