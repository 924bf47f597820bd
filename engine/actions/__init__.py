"""The actions a state runs, each module named after the actions it holds."""
