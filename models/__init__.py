"""fastslow models: the router, the subrequest splitter, the hard rules and the saved bundle."""
