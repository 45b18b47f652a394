"""The demo: page views in, long reads out, on Spark against a local broker."""
