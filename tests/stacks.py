"""Stack text the tests share: one GKE cluster `c1` in us-central1 and a team `research`;
each test appends its own teams, pools and sections."""

ONE_GKE_CLUSTER = """\
config:
  accelfleet:fleet:
    clouds:
      gcp: {project: acme-ml-test, region: us-central1}
    clusters:
      - {name: c1, cloud: gcp}
    teams:
      - {name: research}
"""
