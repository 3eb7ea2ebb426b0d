/** CPU reference of unpackHalves: IEEE half bit patterns to their values. */
export function unpackHalvesRef(bits: Uint16Array): Float32Array {
  return Float32Array.from(bits, (h) => {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp === 0) return sign * mant * 2 ** -24; // subnormal (and zero)
    if (exp === 0x1f) return mant ? NaN : sign * Infinity;
    return sign * (1 + mant / 1024) * 2 ** (exp - 15);
  });
}
