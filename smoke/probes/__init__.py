"""What runs on a node: the agent (`python -m smoke.probes.agent`), its probes per backend
(torch, JAX), the distributed ranks, the fabric proof, the expectations, verdicts and results.

This folder is the pod's code: `smoke.cluster._bundle` ships it whole in a ConfigMap, so a
stock framework image runs it. It imports the standard library, the framework of the probe
that runs, and the stdlib-only fleet modules `smoke.cluster._bundle.FLEET_MODULES` lists
(`fleet.errors`, `fleet.smoke_defaults`, `fleet.words`, `fleet.catalog.records`); an import-linter
contract keeps kubernetes, pydantic, ruamel, jinja2, pulumi and the rest of `smoke` out.
"""
