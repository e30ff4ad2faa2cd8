"""Energy measurement around a workload with jpwr's power methods, bounded in time, and its
combination."""
