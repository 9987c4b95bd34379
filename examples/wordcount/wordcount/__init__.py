"""Count words in text. The functions are added by the plan."""
