# The simulator engine as an image, for clusters (e2e-kind): the operator's `simulator` engine
# template runs `npx tsx engines/simulator/main.ts` in /app with this tag by default.
# Build from the repo root: docker build -f test/k8s/simulator.Dockerfile -t ghcr.io/modelplane/simulator:dev .
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY engines ./engines
EXPOSE 9000
ENTRYPOINT ["npx", "tsx", "engines/simulator/main.ts"]
