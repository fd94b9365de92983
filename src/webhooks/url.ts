/**
 * Which URLs an endpoint may have, and which addresses a delivery may reach. A webhook makes the service send
 * requests where a client says, so without a rule a client could aim it at the service's own network (the
 * database, a metadata endpoint). Private, loopback, link-local and other non-public addresses are refused
 * unless WEBHOOK_ALLOW_PRIVATE=true (development, tests, the embedded demo): at registration for an address
 * written in the URL (and `localhost`), and at delivery for whatever the host name resolves to then.
 */
import { BlockList, isIP } from 'node:net';

/** Longest URL accepted, in characters. */
export const MAX_WEBHOOK_URL_CHARS = 2_048;

const nonPublic = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) nonPublic.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b:1::', 48],
] as const) nonPublic.addSubnet(network, prefix, 'ipv6');

/** True for an IP address that is not a public unicast one (loopback, private, link-local, reserved …). */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return nonPublic.check(address, 'ipv4');
  if (family !== 6) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return nonPublic.check(mapped[1]!, 'ipv4');
  return nonPublic.check(address, 'ipv6');
}

/**
 * The problem with `raw` as an endpoint URL, or null when it may be registered. `allowPrivate` lets loopback and
 * private addresses through.
 */
export function webhookUrlProblem(raw: string, allowPrivate: boolean): string | null {
  if (raw.length > MAX_WEBHOOK_URL_CHARS) return `url: at most ${MAX_WEBHOOK_URL_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url: not an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `url: the scheme must be http or https, not ${url.protocol.slice(0, -1)}`;
  if (url.username || url.password) return 'url: must not carry credentials (user:password@); sign with secretKey instead';
  if (url.hash) return 'url: must not carry a fragment (#…)';
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return 'url: a loopback host is refused (WEBHOOK_ALLOW_PRIVATE is off)';
  if (isIP(host) && isNonPublicAddress(host)) return `url: ${host} is not a public address (WEBHOOK_ALLOW_PRIVATE is off)`;
  return null;
}
