"""The logical topology as plain data, and how it becomes engine nodes."""
