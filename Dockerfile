# The payments service, compiled to dist/ when the image is built; `npm start` runs it with plain node.
FROM node:20-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so a source change does not reinstall them. The build needs the dev dependencies
# (TypeScript) and the sources, so the project's own scripts (`prepare` is the build) wait for them.
COPY package.json package-lock.json ./
RUN npm ci --include=dev --ignore-scripts && npm cache clean --force

COPY . .
# Compile, make the PGlite template that new embedded data directories are copied from, then drop the dev
# dependencies: dist/ matches the sources in the image, so `npm start` never needs to rebuild here.
RUN npm rebuild && npm run build && npm prune --omit=dev && npm cache clean --force
# The embedded mode keeps its data in ./data; the service runs unprivileged.
RUN mkdir -p /app/data && chown node:node /app/data
USER node

EXPOSE 3000
CMD ["npm", "start"]
