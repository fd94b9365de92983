/**
 * Which URLs an endpoint may have, and which addresses a delivery may reach. A webhook makes the service send
 * requests where a client says, so without a rule a client could aim it at the service's own network (the
 * database, a metadata endpoint). Private, loopback, link-local and other non-public addresses are refused
 * unless WEBHOOK_ALLOW_PRIVATE=true (development, tests, the embedded demo): at registration for an address
 * written in the URL (and `localhost`), and at delivery again for those, and for whatever the host name resolves
 * to when the connection is made. The URL parser has already turned other spellings of an IPv4 address
 * (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.0.0.1.`) into the dotted one.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Longest URL accepted, in characters. */
export const MAX_WEBHOOK_URL_CHARS = 2_048;

/** The IPv4 address in its 32 bits, from two 16-bit IPv6 parts. */
function ipv4Of(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * The IPv4 addresses that an IPv6 address carries and reaches through a translator, a tunnel or a host's own
 * stack; [] for one that carries none. Which block an address is in is ipaddr.js's classification; where each
 * scheme puts the IPv4 address is its RFC's.
 */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = address.parts;
  switch (address.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d (RFC 4291)
    case 'rfc6145': // ::ffff:0:a.b.c.d (RFC 6145)
      return [ipv4Of(p[6]!, p[7]!)];
    case 'rfc6052': // NAT64: the well-known prefix 64:ff9b::/96 ends with the address (RFC 6052)
      return [ipv4Of(p[6]!, p[7]!)];
    case '6to4': // 2002:AABB:CCDD::/48 (RFC 3056)
      return [ipv4Of(p[1]!, p[2]!)];
    case 'teredo': // 2001:0:server:flags:port:~client (RFC 4380): the server, and the client's address inverted
      return [ipv4Of(p[2]!, p[3]!), ipv4Of(~p[6]! & 0xffff, ~p[7]! & 0xffff)];
    default:
      // IPv4-compatible ::a.b.c.d (RFC 4291, deprecated): the first 96 bits zero. `::` and `::1` are classified
      // as unspecified and loopback before they get here.
      return p.slice(0, 6).every((part) => part === 0) ? [ipv4Of(p[6]!, p[7]!)] : [];
  }
}

/**
 * Why `address` (an IP address in any spelling ipaddr.js reads: dotted, octal, hex, a 32-bit number, IPv6 with
 * or without a zone) is not a public unicast one, or null when it is. Refused: every block ipaddr.js does not
 * classify `unicast` (private, loopback, link-local, unique-local, carrier-grade NAT, multicast, broadcast,
 * reserved, unspecified, documentation, benchmarking …), and an IPv6 address that carries such an IPv4 one
 * (IPv4-mapped and -compatible, NAT64, 6to4, Teredo). NAT64's local-use prefix 64:ff9b:1::/48 (RFC 8215) puts the
 * address where the network decides, so it is refused whole. Not an IP address at all: null.
 */
export function nonPublicAddressReason(address: string): string | null {
  if (!ipaddr.isValid(address)) return null;
  const parsed = ipaddr.parse(address);
  const range = parsed.range();
  if (parsed.kind() === 'ipv4') return range === 'unicast' ? null : `${range} address`;
  const v6 = parsed as ipaddr.IPv6;
  if (range === 'rfc6052' && v6.parts[2] !== 0) return 'local-use NAT64 address (64:ff9b:1::/48)';
  for (const inner of embeddedIpv4(v6)) {
    const innerRange = inner.range();
    if (innerRange !== 'unicast') return `${range} address carrying the ${innerRange} IPv4 address ${inner.toString()}`;
  }
  if (['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo', 'unicast'].includes(range)) return null;
  return `${range} address`;
}

/** True for an IP address that is not a public unicast one (see nonPublicAddressReason). */
export function isNonPublicAddress(address: string): boolean {
  return nonPublicAddressReason(address) !== null;
}

/** A host name of the loopback (`localhost`, `*.localhost`, RFC 6761), written with or without trailing dots. */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Why a delivery must not go to `hostname` (a URL's hostname, brackets and all), judged before any DNS lookup,
 * or null. What a name resolves to is judged when the connection is made (the dispatcher's lookup).
 */
export function refusedHostReason(hostname: string): string | null {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const reason = nonPublicAddressReason(host);
    return reason && `${host} is not a public address (${reason}; WEBHOOK_ALLOW_PRIVATE is off)`;
  }
  return isLoopbackName(host) ? `${host} is a loopback host (WEBHOOK_ALLOW_PRIVATE is off)` : null;
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
  const refused = refusedHostReason(url.hostname);
  return refused && `url: ${refused}`;
}
