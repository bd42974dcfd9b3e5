#!/usr/bin/env bash
# Whether a pushed image can be pulled with no credentials at all, as a node pulls it: an
# anonymous registry token (the Docker Registry token flow, which ghcr.io serves at /token),
# then its manifest (HEAD /v2/<repository>/manifests/<tag>). Exit 0 when it can; 1 with the
# one-time step when it cannot (release.yml, after pushing the gate's image).
#
#   .github/scripts/anonymous-pull.sh ghcr.io/acme/accelfleet-gate v0.1.0
#
# GitHub makes a new container package private, and no workflow can change that: a package
# linked to its repository inherits the repository's access permissions but not its visibility,
# and the REST API for packages has no call that sets a visibility (docs.github.com
# packages/learn-github-packages/configuring-a-packages-access-control-and-visibility, github/docs
# 00010c4cfb25eff82d5f8d2d6b377a4ab15ebc1e; docs.github.com/rest/packages: list, get, delete,
# restore only; read 2026-11-28). So a person makes it public once, and this says so.
set -euo pipefail

image="${1:?usage: anonymous-pull.sh REGISTRY/OWNER/NAME TAG}"
tag="${2:?usage: anonymous-pull.sh REGISTRY/OWNER/NAME TAG}"
registry="${image%%/*}"
repository="${image#*/}"
owner="${repository%%/*}"
package="${repository#*/}"

token=""
if answer="$(curl -fsS --max-time 30 "https://${registry}/token?scope=repository:${repository}:pull")"; then
  token="$(printf '%s' "$answer" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("token", ""))' || true)"
fi
accept="application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
if [ -n "$token" ] && curl -fsS --max-time 30 -o /dev/null --head \
    -H "Authorization: Bearer ${token}" -H "Accept: ${accept}" \
    "https://${registry}/v2/${repository}/manifests/${tag}"; then
  echo "anonymous pull: ${image}:${tag} is public: nodes pull it without credentials"
  exit 0
fi

cat >&2 <<MSG
error: ${image}:${tag} was pushed but cannot be pulled without credentials: the package is
private (GitHub makes every new container package private, and no workflow can change it).
Nodes could not pull it, so this release stops here. The one-time step, by an owner of the
package, then run this workflow again (re-run the failed job):
  1. https://github.com/orgs/${owner}/packages/container/package/${package}
     (a personal account: https://github.com/users/${owner}/packages/container/package/${package})
  2. Package settings -> Danger Zone -> Change visibility -> Public, and confirm.
  An organization allows public packages under Settings -> Packages -> Package creation.
Or keep it private: create a kubernetes.io/dockerconfigjson Secret in the smoke namespace and
name it in the stack's gate.image_pull_secrets (docs/gate.md, "How nodes pull the image").
MSG
exit 1
