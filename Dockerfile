# The payments service. TypeScript runs directly through tsx (a runtime dependency), so there is no build step.
FROM node:20-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, so a source change does not reinstall them.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY . .
# The embedded mode keeps its data in ./data; the service runs unprivileged.
RUN mkdir -p /app/data && chown node:node /app/data
USER node

EXPOSE 3000
CMD ["npm", "start"]
