"""The site adapters: schedulers and launchers, system files, containers, energy."""
