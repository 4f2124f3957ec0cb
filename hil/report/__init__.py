"""What people look at: the HTML report, per-run Chrome/Perfetto traces, JUnit properties, OpenMetrics."""
