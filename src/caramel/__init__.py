"""caramel: a JUBE-compatible benchmark-set framework for machine learning on HPC systems."""

__version__ = "0.1.0"
