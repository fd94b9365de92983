# The payments service, compiled to dist/ when the image is built and run with plain node.
FROM node:20-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so a source change does not reinstall them. The project's own `prepare` (the build)
# needs the sources, so scripts wait for them: the dependencies' install scripts run with `npm rebuild` below.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

COPY . .
# Compile to dist/ (TypeScript is a runtime dependency for this) and make the PGlite template that new embedded
# data directories are copied from; dist/ then matches the sources in the image, so `npm start` runs it as is.
RUN npm rebuild && npm run build
# The embedded mode keeps its data in ./data; the service runs unprivileged.
RUN mkdir -p /app/data && chown node:node /app/data
USER node

EXPOSE 3000
# What `npm start` runs, without npm and without a shell in between: `docker stop` sends its SIGTERM to node
# itself, which drains the requests in flight (SHUTDOWN_GRACE_MS) and exits (1 when the grace period ran out).
# Node handles SIGTERM and SIGINT itself, so it may be the container's first process.
CMD ["node", "scripts/run.mjs", "main"]
