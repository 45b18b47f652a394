"""Aggregations of grouped streams: per key (``stream``), over time and session windows
(``windowed``) and sliding windows (``sliding``); the window definitions and windowed keys
(``windows``) and the emit strategies of windowed results (``emit``)."""
