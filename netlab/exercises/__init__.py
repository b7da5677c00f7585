"""Exercises: files for students to edit. Each function here starts as a stub that raises
NotImplementedError; ``netlab.check`` runs it against real ranks and tells what is wrong.
Reference solutions are kept out of the package (tests/solutions/), where CI proves they pass."""
