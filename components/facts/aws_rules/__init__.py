"""What the AWS provider accepts per resource input (terraform-provider-aws validators, cited), read by the
synth and `policy/provider_rules.py`."""
