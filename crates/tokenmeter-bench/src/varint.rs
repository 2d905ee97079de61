//! Variable-length integers (LEB128: 7 bits a byte, low bits first, the top bit set on every
//! byte but the last) and their zigzag form for signed differences: how a run packs its
//! settled requests ([`crate::packed`]), where most counts fit one byte and most times three.
//!
//! A `u64` takes 1 to 10 bytes; every value reads back exactly. Reading past the end of the
//! bytes, or a number longer than 10 bytes, gives `None`, never a panic.

/// Appends `n`.
#[inline]
pub(crate) fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends the signed `n` (zigzag: 0, −1, 1, −2, ... as 0, 1, 2, 3, ...).
#[inline]
pub(crate) fn put_signed(out: &mut Vec<u8>, n: i64) {
    put(out, ((n << 1) ^ (n >> 63)) as u64);
}

/// Reads a number from the front of `input`, which moves past it.
#[inline]
pub(crate) fn get(input: &mut &[u8]) -> Option<u64> {
    // Most numbers a run packs are one byte.
    if let Some((&byte, rest)) = input.split_first()
        && byte < 0x80
    {
        *input = rest;
        return Some(u64::from(byte));
    }
    let mut n = 0u64;
    for (k, &byte) in input.iter().enumerate().take(10) {
        n |= u64::from(byte & 0x7f) << (7 * k);
        if byte < 0x80 {
            *input = &input[k + 1..];
            return Some(n);
        }
    }
    None
}

/// Reads a signed number written by [`put_signed`].
#[inline]
pub(crate) fn get_signed(input: &mut &[u8]) -> Option<i64> {
    let n = get(input)?;
    Some((n >> 1) as i64 ^ -((n & 1) as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_exactly_in_as_few_bytes_as_their_bits_need() {
        for (n, bytes) in [
            (0u64, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (1_500_000, 3),
            (u64::from(u32::MAX), 5),
            (u64::MAX, 10),
        ] {
            let mut out = Vec::new();
            put(&mut out, n);
            assert_eq!(out.len(), bytes, "{n}");
            let mut input = &out[..];
            assert_eq!(get(&mut input), Some(n));
            assert!(input.is_empty());
        }
        for n in [0i64, -1, 1, -64, 64, i64::MIN, i64::MAX, -1_234_567] {
            let mut out = Vec::new();
            put_signed(&mut out, n);
            let mut input = &out[..];
            assert_eq!(get_signed(&mut input), Some(n));
        }
        let mut small = Vec::new();
        put_signed(&mut small, -63);
        assert_eq!(
            small.len(),
            1,
            "small differences of either sign take one byte"
        );
    }

    #[test]
    fn cut_or_overlong_numbers_read_as_none() {
        let mut out = Vec::new();
        put(&mut out, u64::MAX);
        assert_eq!(get(&mut &out[..9]), None, "cut");
        assert_eq!(get(&mut &[][..]), None, "empty");
        assert_eq!(get(&mut &[0x80u8; 11][..]), None, "longer than 10 bytes");
    }
}
