"""The checks across sections, run by `load_settings` once every section is valid on its own and `StackSettings` is
built: `sections.check_stack` runs them in the order they are reported (pools, hubs, labs, then the fit model)."""
