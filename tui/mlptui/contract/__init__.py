"""The runner<->viewer contract: the run folder's manifest and the words both sides use."""
