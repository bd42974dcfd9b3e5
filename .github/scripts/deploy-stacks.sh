#!/usr/bin/env bash
# Which stacks deploy.yml deploys, as `stacks=<JSON list>` for $GITHUB_OUTPUT.
#
# Environment (set by the workflow):
#   EVENT          github.event_name: `push` or `workflow_dispatch`
#   DEPLOY_ON_PUSH the repository variable ACCELFLEET_DEPLOY_ON_PUSH: a push to main deploys
#                  only when it is `true` (the opt-in; docs/ci.md)
#   INPUT_STACK    workflow_dispatch's `stack` input: the one stack a person chose to deploy
#   BEFORE, AFTER  the push's first parent and head commits
#
# A push deploys each stack whose file changed (every stack when the code they are all built
# from changed; never the example); a manual run deploys the stack it names, which must exist.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

case "${EVENT:?EVENT is the github.event_name}" in
  workflow_dispatch)
    stack="${INPUT_STACK:?the stack input is required}"
    if ! [[ "$stack" =~ ^[A-Za-z0-9._-]+$ ]] || [ ! -f "stacks/Pulumi.${stack}.yaml" ]; then
      echo "::error::no stack file stacks/Pulumi.${stack}.yaml" >&2
      exit 2
    fi
    echo "stacks=[\"${stack}\"]"
    ;;
  push)
    if [ "${DEPLOY_ON_PUSH-}" != "true" ]; then
      echo "::notice::a push deploys nothing until the repository variable" \
        "ACCELFLEET_DEPLOY_ON_PUSH is true (docs/ci.md)" >&2
      echo "stacks=[]"
      exit 0
    fi
    echo "stacks=$("$here/changed-stacks.sh" "${BEFORE-}" "${AFTER:?AFTER is the pushed commit}")"
    ;;
  *)
    echo "::error::deploy runs on push and workflow_dispatch, not ${EVENT}" >&2
    exit 2
    ;;
esac
