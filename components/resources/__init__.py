"""Resource helpers the ComponentResources in `components/` call: single resources or small groups of them
(a launch template, a node role, the Karpenter AWS side, warm headroom, node repair) and the runtime glue."""
