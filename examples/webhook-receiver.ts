/**
 * A webhook receiver: checks every delivery with the typed client's verifyWebhook, on the raw body, then answers
 * 204 and prints the payload as one JSON line on stdout. A delivery that does not verify (a wrong signature, an old
 * or replayed timestamp) gets 400 and is not printed.
 *
 *   WEBHOOK_SECRET=whsec_… RECEIVER_PORT=4000 node --import tsx examples/webhook-receiver.ts >> deliveries.jsonl
 */
import { createServer } from 'node:http';
import { verifyWebhook, WebhookVerificationError } from '../clients/typescript/src/index.ts';

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  console.error('WEBHOOK_SECRET is not set: the secretKey the endpoint was registered with');
  process.exit(2);
}
const port = Number(process.env.RECEIVER_PORT ?? 4000);
/** The service's payloads are a few kB; anything far larger is not one of its deliveries. */
const MAX_BODY_BYTES = 1_048_576;

createServer((request, response) => {
  const chunks: Buffer[] = [];
  let size = 0;
  request.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      response.writeHead(413).end();
      request.destroy();
    } else chunks.push(chunk);
  });
  request.on('end', () => {
    try {
      const payload = verifyWebhook(Buffer.concat(chunks), request.headers, secret);
      console.log(JSON.stringify(payload));
      response.writeHead(204).end();
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      console.error(`refused a delivery: ${error.message}`);
      response.writeHead(400).end();
    }
  });
}).listen(port, '127.0.0.1', () => console.error(`webhook receiver listening on http://127.0.0.1:${port}`));
