"""`mlptui run` and `mlptui bench`: their arguments and what each command does with them."""
