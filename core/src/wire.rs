//! Byte-level helpers for the snapshot format (and the profile blocks of
//! `odp-profile`): LEB128 varints, zigzag integers and length-prefixed
//! strings. The reader checks every length
//! against the bytes that remain, so a hostile length can neither panic nor
//! make us allocate more than the input could hold.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("input ends early: needed {needed} more bytes at offset {offset}")]
    Truncated { offset: usize, needed: usize },
    #[error("varint at offset {offset} is longer than 10 bytes or overflows 64 bits")]
    VarintOverflow { offset: usize },
    #[error("string at offset {offset} is not valid UTF-8")]
    InvalidUtf8 { offset: usize },
    #[error("{what} is {value}, more than the maximum {max}")]
    TooLarge {
        what: &'static str,
        value: u64,
        max: u64,
    },
}

#[derive(Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    pub fn bytes(&mut self, v: &[u8]) {
        self.buf.extend_from_slice(v);
    }

    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    pub fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    pub fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.bytes(s.as_bytes());
    }
}

pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn offset(&self) -> usize {
        self.pos
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.remaining() {
            return Err(WireError::Truncated {
                offset: self.pos,
                needed: n - self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    /// An unsigned LEB128 varint. Most in a block are one byte (deltas,
    /// small indexes): those take the inlined path.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, WireError> {
        match self.buf.get(self.pos) {
            Some(&byte) if byte < 0x80 => {
                self.pos += 1;
                Ok(u64::from(byte))
            }
            _ => self.long_varint(),
        }
    }

    /// A varint of several bytes (or none left).
    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, WireError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = self.u8()?;
            let low = u64::from(byte & 0x7f);
            if shift == 63 && low > 1 {
                return Err(WireError::VarintOverflow { offset: start });
            }
            value |= low << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::VarintOverflow { offset: start })
    }

    #[inline]
    pub fn zigzag(&mut self) -> Result<i64, WireError> {
        let v = self.varint()?;
        Ok(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    /// A varint that is a count of items each at least `min_item_bytes`
    /// long: bounded by what remains, so `Vec::with_capacity(count)` is safe.
    pub fn count(&mut self, what: &'static str, min_item_bytes: usize) -> Result<usize, WireError> {
        let n = self.varint()?;
        let max = (self.remaining() / min_item_bytes.max(1)) as u64;
        if n > max {
            return Err(WireError::TooLarge {
                what,
                value: n,
                max,
            });
        }
        Ok(n as usize)
    }

    #[inline]
    pub fn u32_varint(&mut self, what: &'static str) -> Result<u32, WireError> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| WireError::TooLarge {
            what,
            value: v,
            max: u64::from(u32::MAX),
        })
    }

    pub fn str(&mut self) -> Result<String, WireError> {
        let len = self.count("string length", 1)?;
        let offset = self.pos;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| WireError::InvalidUtf8 { offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(v in any::<u64>(), z in any::<i64>(), s in ".*") {
            let mut w = Writer::default();
            w.varint(v);
            w.zigzag(z);
            w.str(&s);
            let bytes = w.into_inner();
            let mut r = Reader::new(&bytes);
            prop_assert_eq!(r.varint().unwrap(), v);
            prop_assert_eq!(r.zigzag().unwrap(), z);
            prop_assert_eq!(r.str().unwrap(), s);
            prop_assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn overlong_varint_is_an_error() {
        let bytes = [0xff; 11];
        assert!(matches!(
            Reader::new(&bytes).varint(),
            Err(WireError::VarintOverflow { .. })
        ));
        let mut max = vec![0xff; 9];
        max.push(0x01);
        assert_eq!(Reader::new(&max).varint().unwrap(), u64::MAX);
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert!(Reader::new(&over).varint().is_err());
    }

    #[test]
    fn hostile_string_length_is_refused_before_allocating() {
        let mut w = Writer::default();
        w.varint(u64::MAX / 2);
        let bytes = w.into_inner();
        assert!(matches!(
            Reader::new(&bytes).str(),
            Err(WireError::TooLarge { .. })
        ));
    }
}
