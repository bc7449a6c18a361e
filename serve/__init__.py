"""fastslow's entry points: the command line (train, score, eval) and batch scoring."""
