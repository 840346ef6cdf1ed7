# syntax=docker/dockerfile:1
# One image for `gpufit serve` (HTTP, port $GPUFIT_PORT) and `gpufit worker`:
#   docker build -t gpufit .
#   docker run --env-file deploy/.env -p 3000:3000 gpufit            # serve (the default)
#   docker run --env-file deploy/.env gpufit worker                    # the alert worker
# Every third-party file comes from requirements.lock, pinned by version and sha256.
# Settings come from the environment at run time (see the settings table in the README);
# nothing secret is baked into the image.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---------------------------------------------------------------------------------- build
FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/gpufit
# Dependencies first, from the lock only, so this layer is cached until the lock changes.
COPY requirements.lock ./
RUN /opt/gpufit/bin/pip install --require-hashes --no-deps -r requirements.lock
# Then gpufit itself: no dependency resolution, no build isolation (the pinned setuptools
# from the lock builds it), so nothing unpinned is fetched.
COPY pyproject.toml README.md ./
COPY recommender ./recommender
COPY bot ./bot
RUN /opt/gpufit/bin/pip install --no-deps --no-build-isolation . \
 && /opt/gpufit/bin/pip check \
 && /opt/gpufit/bin/python -m compileall -q /opt/gpufit/lib

# -------------------------------------------------------------------------------- runtime
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="gpufit" \
      org.opencontainers.image.description="Which cloud GPUs to rent for a training job, and what it will really cost." \
      org.opencontainers.image.licenses="Apache-2.0"
# A fixed numeric uid/gid so Kubernetes can check runAsNonRoot without a name lookup.
RUN groupadd --system --gid 10001 gpufit \
 && useradd --system --uid 10001 --gid gpufit --home-dir /home/gpufit --create-home \
      --shell /usr/sbin/nologin gpufit
COPY --from=build /opt/gpufit /opt/gpufit
ENV PATH=/opt/gpufit/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    GPUFIT_PORT=3000 \
    GPUFIT_HEALTH_PORT=3001 \
    GPUFIT_METRICS_PORT=9090 \
    GPUFIT_LOG_FORMAT=json \
    GPUFIT_STATE_DIR=/var/lib/gpufit
# The embedded-Redis fallback (no REDIS_URL) keeps its data here; mount a volume over it.
RUN mkdir -p /var/lib/gpufit && chown gpufit:gpufit /var/lib/gpufit
VOLUME ["/var/lib/gpufit"]
WORKDIR /home/gpufit
USER 10001:10001
EXPOSE 3000 3001 9090
# `serve` answers /healthz on GPUFIT_HEALTH_PORT, the worker on GPUFIT_METRICS_PORT; the check
# asks each on loopback, so one health check fits both commands (Kubernetes uses its own probes).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-m", "bot.health"]
ENTRYPOINT ["gpufit"]
CMD ["serve"]
