"""The NodeResources plugin family: NodeResourcesFit and NodeResourcesBalancedAllocation."""
