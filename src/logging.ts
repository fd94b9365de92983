import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

/**
 * JSON lines by default; human-readable when stdout is a terminal. Secrets never reach a log line. Writes to
 * stdout, or as JSON lines to `destination` when one is given.
 */
export function createLogger(level = 'info', destination?: DestinationStream): Logger {
  const pretty = destination === undefined && process.stdout.isTTY && process.env.LOG_FORMAT !== 'json';
  return pino({
    level,
    redact: {
      paths: [
        'req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers["x-operator-key"]',
        '*.clientSecret', '*.apiKey', '*.secretKey', '*.password', '*.accessToken', '*.token',
        'clientSecret', 'apiKey', 'secretKey', 'password', 'accessToken', 'token',
      ],
      censor: '[redacted]',
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:standard' } } } : {}),
  }, destination);
}

export const silentLogger: Logger = pino({ level: 'silent' });
