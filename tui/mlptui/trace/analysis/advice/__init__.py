"""Advice: the findings of a step at a glance, and the recommendations with the figures behind them."""
