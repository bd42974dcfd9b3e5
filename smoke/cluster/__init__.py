"""What runs beside a cluster: the run's sources (a stack, its outputs), cluster access, the
rendered workloads and their templates, the launcher that submits them and reads each node's
report back, the quarantine and release of failed nodes."""
