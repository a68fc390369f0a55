"""The compose page: transforms stacked in any order, and the article's compositions."""
