#!/usr/bin/env bash
# The stacks a change touches, as a JSON list for a job matrix: `["acme","prod"]`.
#
#   changed-stacks.sh BASE HEAD [--with-example]
#
# A stack is in the list when its file stacks/Pulumi.<stack>.yaml was added, modified or
# renamed between the commits BASE and HEAD. A change to what every stack is built from (the
# Pulumi program in stacks/__main__.py, Pulumi.yaml, components/, fleet/, policies/,
# pyproject.toml) puts every stack file HEAD holds in the list. With no BASE (an empty value,
# or the all-zero SHA GitHub gives for a new branch) every stack is in it too.
#
# The example stack (a sample, not a fleet anyone owns) is left out unless --with-example is
# given. Only names of letters, digits, `.`, `_` and `-` are listed (what a matrix value and
# `pulumi --stack` take); any other file name is reported on stderr and skipped.
set -euo pipefail

base="${1-}"
head="${2:?usage: changed-stacks.sh BASE HEAD [--with-example]}"
with_example=false
if [ "${3-}" = "--with-example" ]; then
  with_example=true
fi

all_stacks() {
  git ls-tree -z --name-only "$head" stacks/ | tr '\0' '\n' | grep -E '^stacks/Pulumi\.[^/]+\.yaml$' || true
}

if [ -z "$base" ] || [ -z "${base//0/}" ]; then
  files="$(all_stacks)"
else
  changed="$(git diff -z --name-only --no-renames --diff-filter=AMR "$base" "$head" \
    | tr '\0' '\n')"
  every=$(printf '%s\n' "$changed" | grep -cE \
    '^(stacks/__main__\.py|Pulumi\.yaml|pyproject\.toml|components/|fleet/|policies/)' || true)
  if [ "$every" -gt 0 ]; then
    files="$(all_stacks)"
  else
    files="$(printf '%s\n' "$changed" | grep -E '^stacks/Pulumi\.[^/]+\.yaml$' || true)"
  fi
fi

out=""
while IFS= read -r file; do
  [ -n "$file" ] || continue
  name="${file#stacks/Pulumi.}"
  name="${name%.yaml}"
  if ! [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]]; then
    echo "skipped ${file}: a stack name is letters, digits, '.', '_' and '-'" >&2
    continue
  fi
  if [ "$name" = "example" ] && [ "$with_example" != true ]; then
    continue
  fi
  out="${out:+${out},}\"${name}\""
done <<< "$files"
printf '[%s]\n' "$out"
