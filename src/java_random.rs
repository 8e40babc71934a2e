//! `java.util.Random`, bit for bit: Storm's partial-key grouping seeds one from each key to draw
//! the key's two candidate tasks, so storm must draw the same numbers to place keys as Storm does.

/// The 48-bit linear congruential generator of `java.util.Random`.
#[derive(Debug, Clone)]
pub(crate) struct JavaRandom {
    seed: u64,
}

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const ADDEND: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

impl JavaRandom {
    /// `new Random(seed)`: the seed is scrambled with the multiplier.
    pub(crate) fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            seed: (seed as u64 ^ MULTIPLIER) & MASK,
        }
    }

    /// `next(bits)`: advance the generator and return its top `bits` bits (1..=32).
    fn next(&mut self, bits: u32) -> i32 {
        self.seed = self.seed.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND) & MASK;
        (self.seed >> (48 - bits)) as i32
    }

    /// `nextInt(bound)` for `bound >= 1`: a power of two takes the high bits; any other bound
    /// rejects the draws that would bias the remainder, exactly as Java's loop does.
    pub(crate) fn next_int(&mut self, bound: i32) -> i32 {
        let bound = bound.max(1);
        let r = self.next(31);
        let m = bound - 1;
        if bound & m == 0 {
            return ((i64::from(bound) * i64::from(r)) >> 31) as i32;
        }
        let mut u = r;
        loop {
            let r = u % bound;
            // Java: `u - r + m < 0` in int arithmetic, i.e. the sum overflows.
            if u.wrapping_sub(r).wrapping_add(m) >= 0 {
                return r;
            }
            u = self.next(31);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `random SEED BOUND V...` lines of the vectors Java printed
    /// (tests/fixtures/java/PartialKeyVectors.java).
    #[test]
    fn next_int_matches_java_vectors() {
        let text = include_str!("../tests/fixtures/java/partial_key_vectors.txt");
        let mut checked = 0;
        for line in text.lines().filter(|l| l.starts_with("random ")) {
            let nums: Vec<i64> = line
                .split_whitespace()
                .skip(1)
                .map(|n| n.parse().expect("a number in the vectors"))
                .collect();
            let (seed, bound) = (nums[0], nums[1] as i32);
            let mut r = JavaRandom::new(seed);
            let drawn: Vec<i64> = (2..nums.len())
                .map(|_| i64::from(r.next_int(bound)))
                .collect();
            assert_eq!(drawn, nums[2..], "{line}");
            checked += 1;
        }
        assert!(checked >= 80, "only {checked} vectors");
    }

    #[test]
    fn known_first_draws() {
        // new Random(42).nextInt(10) == 0 and new Random(0).nextInt(100) == 60 in Java.
        assert_eq!(JavaRandom::new(42).next_int(10), 0);
        assert_eq!(JavaRandom::new(0).next_int(100), 60);
    }
}
