# The gate controller's image (docs/gate.md): `accelfleet gate run --in-cluster ...`.
# It installs the project without its dev, torch or jax extras: the controller watches nodes
# and launches proof Jobs; the probes run in the proof pods' own framework images.
# Built and pushed by .github/workflows/release.yml on a `v*` tag. Nothing in this repository's
# test machines can run Docker: the file is checked by tests/ci/test_release.py, not built.
#
#   docker build -f docker/gate.Dockerfile -t ghcr.io/OWNER/accelfleet-gate:vX.Y.Z .
#
# The base is pinned by tag; pass a digest to pin it harder:
#   --build-arg PYTHON_IMAGE=python:3.12-slim-bookworm@sha256:<crane digest python:3.12-slim-bookworm>
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY fleet ./fleet
COPY components ./components
COPY smoke ./smoke
COPY cli ./cli
COPY policies ./policies
RUN python -m venv /opt/accelfleet \
 && /opt/accelfleet/bin/pip install . \
 && /opt/accelfleet/bin/accelfleet --version

FROM ${PYTHON_IMAGE}
# 65532: the non-root user the Deployment runs as (components/k8s/_gate.py USER_ID)
RUN groupadd --system --gid 65532 accelfleet \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin accelfleet
COPY --from=build /opt/accelfleet /opt/accelfleet
ENV PATH=/opt/accelfleet/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["accelfleet"]
CMD ["gate", "run", "--help"]
