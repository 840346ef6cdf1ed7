# syntax=docker/dockerfile:1
# One image for `gpufit serve` and `gpufit worker`.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY recommender ./recommender
COPY bot ./bot
RUN python -m venv /opt/gpufit \
 && /opt/gpufit/bin/pip install --upgrade pip \
 && /opt/gpufit/bin/pip install .

FROM python:3.11-slim AS runtime
RUN useradd --create-home --uid 10001 gpufit
COPY --from=build /opt/gpufit /opt/gpufit
ENV PATH=/opt/gpufit/bin:$PATH PYTHONUNBUFFERED=1 GPUFIT_PORT=3000
USER gpufit
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s --retries=3 \
  CMD python -c "import urllib.request,os; urllib.request.urlopen(f'http://127.0.0.1:{os.environ.get(\"GPUFIT_PORT\",\"3000\")}/healthz', timeout=2)"
ENTRYPOINT ["gpufit"]
CMD ["serve"]
