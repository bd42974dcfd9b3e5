#!/usr/bin/env bash
# The preview workflow's offline plan of every stack, written as ONE PR comment.
#
#   plan-comment.sh BASE_REF [ACCELFLEET]
#
# For each stacks/Pulumi.*.yaml: the plan as JSON (plans/<file>.json, stderr in
# plans/<file>.err) and, appended to
# comment.md, the plan diffed against BASE_REF with the policies checked (markdown). Every
# command runs to the end whatever it exits (an invalid stack exits 2): the comment is always
# complete, and the worst exit code is written as `status=N` to $GITHUB_OUTPUT (or stdout), for
# a later step to fail the job AFTER the comment is posted. The script itself exits 0.
set -uo pipefail

base_ref="${1:?usage: plan-comment.sh BASE_REF [ACCELFLEET]}"
accelfleet="${2:-.venv/bin/accelfleet}"
mkdir -p plans
: > comment.md
status=0
worst() {
  if [ "$1" -gt "$status" ]; then status=$1; fi
}
shopt -s nullglob
for f in stacks/Pulumi.*.yaml; do
  name="$(basename "$f" .yaml)"
  rc=0
  "$accelfleet" plan "$f" --json --out "plans/${name}.json" > /dev/null 2> "plans/${name}.err" \
    || rc=$?
  worst "$rc"
  rc=0
  "$accelfleet" plan "$f" --base-ref "$base_ref" --format markdown --policies >> comment.md \
    2>> "plans/${name}.err" || rc=$?
  worst "$rc"
  printf '\n' >> comment.md
done
find plans -name '*.err' -empty -delete  # what a stack's plans said on stderr, if anything
if [ ! -s comment.md ]; then
  echo "accelfleet plan: no stack file in stacks/" > comment.md
fi
echo "status=${status}" >> "${GITHUB_OUTPUT:-/dev/stdout}"
exit 0
