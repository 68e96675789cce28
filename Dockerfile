# sonnx-check in a container: pinned onnx and onnxruntime (integrations/constraints.txt), so a --compare
# run gives the same verdict wherever the image runs. Runs as an unprivileged user, by number (uid 10001), so
# that a host or a runAsNonRoot check can resolve it without the image's passwd; mount the models:
#   docker build -t sonnx-check .
#   docker run --rm -v "$PWD:/work" sonnx-check --format sarif --output sonnx-check.sarif models/
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

COPY . /tmp/sonnx-check
RUN python -m pip install --constraint /tmp/sonnx-check/integrations/constraints.txt /tmp/sonnx-check \
    && rm -rf /tmp/sonnx-check \
    && groupadd --gid 10001 sonnx \
    && useradd --create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin sonnx

USER 10001:10001
WORKDIR /work
ENTRYPOINT ["sonnx-check"]
CMD ["--help"]
