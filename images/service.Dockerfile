# The modelplane service images for machines with Docker (`make images` builds the same images
# without Docker, scripts/build-images.sh). One Dockerfile, one target per service:
#   docker build -f images/service.Dockerfile --target proxy -t ghcr.io/modelplane/proxy:0.1.0 .
# Targets: proxy, operator, console, simulator. Non-root (65532), no shell at run time
# (distroless), production dependencies only.
FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund
COPY . .
# /out/app holds what images/app-contents.txt lists, staged by the script `make images` runs too.
RUN scripts/build.sh && npx vite build --config console/web/vite.config.ts \
  && scripts/stage-app.sh /out

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund && rm -f node_modules/.package-lock.json

FROM gcr.io/distroless/nodejs24-debian12:nonroot AS base
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.source="https://github.com/modelplane/modelplane" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app /app
COPY --from=build /out/app /app
USER 65532:65532

FROM base AS proxy
EXPOSE 8080
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=64", "/app/dist/proxy/main.js"]

FROM base AS operator
EXPOSE 9090
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=64", "/app/dist/operator/main.js"]

FROM base AS console
EXPOSE 3000
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=64", "--import", "tsx", "/app/src/console/main.ts"]

FROM base AS simulator
EXPOSE 9000
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=64", "/app/dist/engines/simulator/main.js"]
