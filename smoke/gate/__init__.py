"""The gate: every node of a gated pool proven before it takes work (docs/gate.md).

- `controller`: the controller of one cluster (`Gate`, `GateOptions`, `GateSummary`);
- `nodes`: what the gate reads of a node (its state) and the patches it writes;
- `lifecycle`: the states as patches (a failed node's own taint, cordon and `on_fail`; a
  fresh proof; open and close), which `smoke release` uses too;
- `pools`: the pools' open state (`gate open`) and the controller's per-round follower;
- `session`: the controller as one library call over a stack's clusters (`run_gate`),
  `gate status`, `gate open` and `gate close`;
- private: `_watch` (list + watch), `_informer` (the pods bound to nodes, indexed by node:
  the idle check's cache), `_lease` (leader election), `_proof` (one proof pinned
  to its nodes, judged as `smoke run` judges), `_reproof` (the rolling re-proof's choice),
  `_kube` (the API calls), `_serve` (health and metrics endpoints), `_metrics`
  (OpenMetrics), `_hours` (the node-hours totals carried on the Lease).

Never imports pulumi (the import contracts hold it).
"""
