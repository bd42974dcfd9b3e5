"""Issue 21: every reader refuses bad input with exit 2, and nothing the user did not ask to
change is changed."""
