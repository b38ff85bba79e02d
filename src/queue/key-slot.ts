/**
 * A key's Redis Cluster slot (CRC16-XMODEM of the key's hash tag, or of the whole key, mod
 * 16384: the Cluster spec's `HASH_SLOT`), to find the node that holds a key without asking.
 */
const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/** The slot of `key`: only the part inside its first non-empty `{…}` counts, when there is one. */
export function keySlot(key: string): number {
  const bytes = Buffer.from(key, "utf8");
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16_384;
  }
  return crc16(bytes) % 16_384;
}
