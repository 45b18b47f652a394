"""The one engine: tasks, processor nodes, stream time. Hosted by the test driver and by Spark."""
