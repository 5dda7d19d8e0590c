//! CPython's hashes of ints and tuples (Objects/longobject.c, Objects/tupleobject.c): `hash(int)`
//! and `hash(tuple)` are deterministic and cheap to reproduce, so the canonical hashes are the
//! numbers the oracle computes.

const MODULUS: i128 = (1 << 61) - 1;

/// `hash(x)` of a Python int.
pub(crate) fn int_hash(x: i128) -> i64 {
    const P: u64 = MODULUS as u64;
    if (0..MODULUS).contains(&x) {
        return x as i64;
    }
    // Every value here fits in 64 bits, signed or not: u64 arithmetic, not i128's slow `%`.
    let r = if x >= 0 {
        ((x as u64) % P) as i64
    } else {
        -((x.unsigned_abs() as u64 % P) as i64)
    };
    if r == -1 {
        -2
    } else {
        r
    }
}

const P1: u64 = 11400714785074694791;
const P2: u64 = 14029467366897019727;
const P5: u64 = 2870177450012600261;

/// CPython's tuple hash, fed one item hash at a time.
pub(crate) struct TupleHash {
    acc: u64,
    len: u64,
}

impl TupleHash {
    pub(crate) fn new() -> Self {
        TupleHash { acc: P5, len: 0 }
    }

    #[inline]
    pub(crate) fn add(&mut self, lane: i64) {
        self.acc = self.acc.wrapping_add((lane as u64).wrapping_mul(P2));
        self.acc = self.acc.rotate_left(31);
        self.acc = self.acc.wrapping_mul(P1);
        self.len += 1;
    }

    pub(crate) fn finish(&self) -> i64 {
        let acc = self.acc.wrapping_add(self.len ^ (P5 ^ 3527539));
        if acc == u64::MAX {
            1546275796
        } else {
            acc as i64
        }
    }
}

/// `hash(t)` of a tuple whose items hash to `lanes`.
pub(crate) fn tuple_hash(lanes: &[i64]) -> i64 {
    let mut t = TupleHash::new();
    for &lane in lanes {
        t.add(lane);
    }
    t.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_hashes() {
        // hash((1, 2)), hash(()), hash(-1), hash(2**64 - 1) in CPython 3.11.
        assert_eq!(tuple_hash(&[1, 2]), -3550055125485641917);
        assert_eq!(tuple_hash(&[]), 5740354900026072187);
        assert_eq!(int_hash(-1), -2);
        assert_eq!(int_hash(u64::MAX as i128), 7);
    }
}
