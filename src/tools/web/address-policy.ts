/**
 * Which addresses `fetch_url` may connect to: public unicast only. Private (RFC 1918, unique
 * local), loopback, link-local (cloud metadata at 169.254.169.254), carrier-grade NAT,
 * unspecified, multicast, broadcast, reserved, benchmarking and the IPv6 forms that embed an IPv4
 * address (mapped, 6to4, Teredo, NAT64) are refused. ipaddr.js classifies; a test may allow
 * exact addresses (a loopback fixture server), which no configuration key reaches.
 */
import ipaddr from "ipaddr.js";

/** Deprecated site-local IPv6 (fec0::/10): ipaddr.js calls it unicast, but it is private by intent. */
const SITE_LOCAL = ipaddr.IPv6.parseCIDR("fec0::/10");

export interface AddressPolicy {
  /** Whether a connection to this literal address may be made; anything unparsable is refused. */
  allows(address: string): boolean;
}

export function publicAddressPolicy(testAllow: readonly string[] = []): AddressPolicy {
  const allowed = new Set(testAllow.map(normalise));
  return {
    allows(address) {
      const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
      if (!ipaddr.isValid(bare)) return false;
      if (allowed.has(normalise(bare))) return true;
      // IPv4-mapped IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it carries.
      const parsed = ipaddr.process(bare);
      if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).match(SITE_LOCAL)) return false;
      return parsed.range() === "unicast";
    },
  };
}

function normalise(address: string): string {
  return ipaddr.isValid(address) ? ipaddr.process(address).toNormalizedString() : address;
}
