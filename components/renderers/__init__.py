"""Pure renderers: settings in, plain dicts and strings out (manifests, IAM documents, userData, dashboards), one
subpackage per concern (`nodes`, `karpenter`, `device_plugin`, `hub`, `labs`, `timetable`, `observability`,
`access`, `report`; docs/architecture.md "Layers").

Nothing in this package imports Pulumi, directly or through the modules it imports; the
ComponentResources in `components/` call these functions and only register what they return.
tests/house/test_renderer_boundary.py enforces it.
"""
