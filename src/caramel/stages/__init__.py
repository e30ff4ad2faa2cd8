"""The pipeline's stages: spec → expand → engine → state → analyse → report."""
