"""Privacy: secrets found in text before it is stored, embedded or sent to a model."""
