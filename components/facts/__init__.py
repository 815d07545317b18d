"""Facts every layer reads: pinned versions and names, the GPU catalog, prices, cron, quantities, node
allocatable and pod requests, the timetable arithmetic, the upstream charts' names (JupyterHub, node monitoring),
the documentation placeholders and what the AWS provider accepts (`aws_rules/`). Pure; imports nothing above
itself."""
