# syntax=docker/dockerfile:1
# One image for every ksched service: `docker run IMAGE informer|queue|scheduler|binder|kubesim ...`.
# Pinned base image (Debian bookworm, CPython 3.11 as the virtualenv the tests run on).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- build: a virtualenv with the locked dependencies, then ksched itself without resolving again
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/ksched
WORKDIR /src
COPY requirements.lock requirements-build.lock requirements-otel.lock ./
# With the `otel` extra, so --tracing-config-file works in the image (nothing of it is imported without)
RUN /opt/ksched/bin/pip install --require-hashes -r requirements.lock -r requirements-build.lock -r requirements-otel.lock
COPY pyproject.toml setup.py ./
COPY shared ./shared
COPY services ./services
# the wheel leaves out the *_test.py modules (setup.py); no build dependency is fetched unpinned
RUN /opt/ksched/bin/pip install --no-deps --no-build-isolation . \
    && /opt/ksched/bin/python -m compileall -q /opt/ksched/lib

# --- runtime: the virtualenv only, run as an unprivileged user
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="ksched" \
      org.opencontainers.image.description="kube-scheduler 1.36 as asyncio services over NATS" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 ksched \
    && useradd --system --uid 10001 --gid ksched --home-dir /nonexistent --no-create-home \
       --shell /usr/sbin/nologin ksched \
    && install -d -o ksched -g ksched /var/lib/ksched
COPY --from=build /opt/ksched /opt/ksched
ENV PATH=/opt/ksched/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    KSCHED_HTTP_HOST=0.0.0.0 \
    KSCHED_LOG_FORMAT=json
USER 10001:10001
# /metrics, /livez, /readyz: scheduler 10259, informer 10260, queue 10261, binder 10262; ui 10263 (its page too)
EXPOSE 10259 10260 10261 10262 10263
ENTRYPOINT ["ksched"]
CMD ["--help"]
