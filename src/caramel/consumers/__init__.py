"""What reads the results: the history, the pages, predictions, the catalogue."""
