"""What a run becomes for people and machines: the text tables, JUnit, the HTML report and
OpenMetrics, from a `smoke.cluster.run.RunReport`."""
