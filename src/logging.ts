import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = Pick<PinoLogger, 'info' | 'warn' | 'error' | 'debug' | 'child'>;

/** JSON lines by default; human-readable when stdout is a terminal. Secrets never reach a log line. */
export function createLogger(level = 'info'): PinoLogger {
  const pretty = process.stdout.isTTY && process.env.LOG_FORMAT !== 'json';
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-operator-key"]',
        '*.clientSecret', '*.apiKey', '*.secretKey', '*.password', 'clientSecret', 'apiKey', 'secretKey',
      ],
      censor: '[redacted]',
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:standard' } } } : {}),
  });
}

export const silentLogger: Logger = pino({ level: 'silent' });
