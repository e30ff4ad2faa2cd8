"""The `bench` command: one module per subcommand, each only parsing arguments and calling the
stages."""
