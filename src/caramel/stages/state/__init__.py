"""The run state: one SQLite file per run (the truth), a lock, and the registry of recent runs."""
