"""gpu-platform components: pure renderers and the Pulumi components that use them."""
