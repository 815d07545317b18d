"""Facts every layer reads: pinned versions and names, the GPU catalog, cron, quantities, node allocatable, the
timetable arithmetic and the config front door's wording rules. Pure; imports nothing above itself."""
