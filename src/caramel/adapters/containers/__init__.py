"""Container runtimes: each builds the command line that runs a command inside an image."""
