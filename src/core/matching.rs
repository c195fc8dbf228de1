//! The matching engine: the one owner of posted-receive and unexpected-message
//! queues for every communicator.
//!
//! Transports hand it arriving envelopes (`arrive`); receives are matched
//! against already-arrived messages (`post`). MPI's rules hold: a message
//! matches the earliest posted receive that accepts it, a receive takes the
//! earliest arrived message it accepts, which gives non-overtaking order per
//! (context, source, tag).
//!
//! Structure: exact receives are bucketed by (context, source, tag); receives
//! with a wildcard sit in one ordered list; every entry carries a sequence
//! number so the earliest of the two candidates wins. Unexpected messages are
//! bucketed by their (concrete) key and also kept in arrival order for
//! wildcard receives. Within one bucket the front entry is always the earliest
//! match, so no search inside a bucket is needed. `NaiveMatcher` below is the
//! linear-scan reference it is tested against.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher for the small integer keys of the queues (the
/// default SipHash costs more than the rest of a match).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_i32(&mut self, i: i32) {
        self.write_u64(i as u32 as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type Buckets<T> = HashMap<Key, VecDeque<T>, BuildHasherDefault<KeyHasher>>;

/// Empty buckets are kept (their allocation is reused by the next message with
/// the same envelope) until this many keys exist.
const KEEP_EMPTY_BUCKETS: usize = 4096;

pub const ANY_SOURCE: i32 = -2;
pub const ANY_TAG: i32 = -1;

type Key = (u32, i32, i32);

/// A key no envelope has (sources are ranks, never `i32::MIN`): the mark of
/// a free slot in `ExactQueues`.
const NO_KEY: Key = (u32::MAX, i32::MIN, i32::MIN);

/// The exact-envelope receive queues, one per (context, source, tag) key,
/// found through a hash index. The slot used last is remembered (`hot`):
/// a stream of receives and messages with one envelope, the common case,
/// checks one key instead of hashing twice per message.
struct ExactQueues<P> {
    index: HashMap<Key, u32, BuildHasherDefault<KeyHasher>>,
    qs: Vec<(Key, VecDeque<(u64, P)>)>,
    free: Vec<u32>,
    hot: usize,
    /// Receives queued in all slots.
    len: usize,
}

impl<P> Default for ExactQueues<P> {
    fn default() -> Self {
        ExactQueues {
            index: HashMap::default(),
            qs: Vec::new(),
            free: Vec::new(),
            hot: 0,
            len: 0,
        }
    }
}

impl<P> ExactQueues<P> {
    /// The slot of `key`, if it has one.
    #[inline(always)]
    fn slot(&self, key: Key) -> Option<usize> {
        match self.qs.get(self.hot) {
            Some(q) if q.0 == key => Some(self.hot),
            _ => self.index.get(&key).map(|&i| i as usize),
        }
    }

    #[inline]
    fn push(&mut self, key: Key, seq: u64, p: P) {
        let i = match self.slot(key) {
            Some(i) => i,
            None => {
                let i = match self.free.pop() {
                    Some(i) => {
                        self.qs[i as usize].0 = key;
                        i as usize
                    }
                    None => {
                        self.qs.push((key, VecDeque::new()));
                        self.qs.len() - 1
                    }
                };
                self.index.insert(key, i as u32);
                i
            }
        };
        self.hot = i;
        self.qs[i].1.push_back((seq, p));
        self.len += 1;
    }

    /// Sequence number of the earliest receive queued for `key`.
    #[inline]
    fn front_seq(&self, key: Key) -> Option<u64> {
        self.slot(key)
            .and_then(|i| self.qs[i].1.front())
            .map(|e| e.0)
    }

    /// Takes the earliest receive queued for `key`. Empty slots are kept
    /// (their queue's allocation serves the next receive with that key)
    /// until `KEEP_EMPTY_BUCKETS` keys exist.
    #[inline(always)]
    fn pop(&mut self, key: Key) -> Option<P> {
        let i = self.slot(key)?;
        self.hot = i;
        let q = &mut self.qs[i].1;
        let p = q.pop_front()?.1;
        self.len -= 1;
        if q.is_empty() && self.index.len() > KEEP_EMPTY_BUCKETS {
            self.free_slot(i);
        }
        Some(p)
    }

    #[cold]
    fn free_slot(&mut self, i: usize) {
        self.index.remove(&self.qs[i].0);
        self.qs[i].0 = NO_KEY;
        self.free.push(i as u32);
    }

    /// Removes the first receive for which `pred` holds. True if found.
    fn remove_first(&mut self, mut pred: impl FnMut(&P) -> bool) -> bool {
        for (key, q) in self.qs.iter_mut() {
            if *key == NO_KEY {
                continue;
            }
            if let Some(i) = q.iter().position(|e| pred(&e.1)) {
                q.remove(i);
                self.len -= 1;
                return true;
            }
        }
        false
    }
}

#[inline]
fn accepts(ctx: u32, src: i32, tag: i32, m: Key) -> bool {
    ctx == m.0 && (src == ANY_SOURCE || src == m.1) && (tag == ANY_TAG || tag == m.2)
}

/// P: what a posted receive carries (a request id); U: what an unexpected message carries.
pub struct Matcher<P, U> {
    seq: u64,
    posted_exact: ExactQueues<P>,
    posted_wild: VecDeque<(u64, Key, P)>,
    unexp: Buckets<(u64, U)>,
    unexp_order: BTreeMap<u64, Key>,
}

impl<P, U> Default for Matcher<P, U> {
    fn default() -> Self {
        Matcher {
            seq: 0,
            posted_exact: ExactQueues::default(),
            posted_wild: VecDeque::new(),
            unexp: Buckets::default(),
            unexp_order: BTreeMap::new(),
        }
    }
}

impl<P, U> Matcher<P, U> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The envelopes (ctx, source, tag) of the posted receives, oldest
    /// first within each kind (for the hang report).
    pub fn posted_keys(&self) -> Vec<(u32, i32, i32)> {
        let mut v: Vec<(u64, Key)> = self
            .posted_exact
            .qs
            .iter()
            .filter(|(k, _)| *k != NO_KEY)
            .flat_map(|(k, q)| q.iter().map(move |e| (e.0, *k)))
            .collect();
        v.extend(self.posted_wild.iter().map(|e| (e.0, e.1)));
        v.sort_by_key(|e| e.0);
        v.into_iter().map(|e| e.1).collect()
    }

    /// A message with envelope (ctx, src, tag) arrived: returns the posted receive it
    /// matches (removed), or stores `item` as unexpected and returns None.
    pub fn arrive(&mut self, ctx: u32, src: i32, tag: i32, item: U) -> Option<P> {
        if let Some(p) = self.take_posted(ctx, src, tag) {
            return Some(p);
        }
        self.seq += 1;
        let key = (ctx, src, tag);
        self.unexp
            .entry(key)
            .or_default()
            .push_back((self.seq, item));
        self.unexp_order.insert(self.seq, key);
        None
    }

    /// Removes and returns the earliest posted receive accepting (ctx, src, tag).
    #[inline]
    pub fn take_posted(&mut self, ctx: u32, src: i32, tag: i32) -> Option<P> {
        let key = (ctx, src, tag);
        if self.posted_wild.is_empty() {
            // Only exact receives: one queue.
            return self.posted_exact.pop(key);
        }
        let exact_seq = self.posted_exact.front_seq(key);
        let wild = self
            .posted_wild
            .iter()
            .position(|(_, k, _)| accepts(k.0, k.1, k.2, key));
        let wild_seq = wild.map(|i| self.posted_wild[i].0);
        match (exact_seq, wild_seq) {
            (None, None) => None,
            (Some(e), w) if w.is_none_or(|w| e < w) => self.posted_exact.pop(key),
            _ => self.posted_wild.remove(wild.unwrap()).map(|e| e.2),
        }
    }

    /// A receive for (ctx, src, tag) (wildcards allowed): returns the earliest unexpected
    /// message it accepts (removed), or stores `item` as posted and returns None.
    #[inline]
    pub fn post(&mut self, ctx: u32, src: i32, tag: i32, item: P) -> Option<U> {
        if !self.unexp_order.is_empty() {
            if let Some(u) = self.take_unexpected(ctx, src, tag) {
                return Some(u);
            }
        }
        self.seq += 1;
        if src == ANY_SOURCE || tag == ANY_TAG {
            self.posted_wild
                .push_back((self.seq, (ctx, src, tag), item));
        } else {
            self.posted_exact.push((ctx, src, tag), self.seq, item);
        }
        None
    }

    fn find_unexpected(&self, ctx: u32, src: i32, tag: i32) -> Option<Key> {
        if self.unexp_order.is_empty() {
            return None;
        }
        if src != ANY_SOURCE && tag != ANY_TAG {
            let key = (ctx, src, tag);
            return self
                .unexp
                .get(&key)
                .is_some_and(|q| !q.is_empty())
                .then_some(key);
        }
        self.unexp_order
            .values()
            .find(|k| accepts(ctx, src, tag, **k))
            .copied()
    }

    /// Removes and returns the earliest unexpected message accepted by (ctx, src, tag).
    pub fn take_unexpected(&mut self, ctx: u32, src: i32, tag: i32) -> Option<U> {
        let key = self.find_unexpected(ctx, src, tag)?;
        let q = self.unexp.get_mut(&key).unwrap();
        let (seq, u) = q.pop_front().unwrap();
        if q.is_empty() && self.unexp.len() > KEEP_EMPTY_BUCKETS {
            self.unexp.remove(&key);
        }
        self.unexp_order.remove(&seq);
        Some(u)
    }

    /// The earliest unexpected message accepted by (ctx, src, tag), left in place (probe).
    pub fn peek_unexpected(&self, ctx: u32, src: i32, tag: i32) -> Option<(Key, &U)> {
        let key = self.find_unexpected(ctx, src, tag)?;
        self.unexp
            .get(&key)
            .and_then(|q| q.front())
            .map(|e| (key, &e.1))
    }

    /// Mutable access to unexpected messages, for filling in data that arrives in pieces.
    pub fn unexpected_mut(&mut self) -> impl Iterator<Item = &mut U> {
        self.unexp
            .values_mut()
            .flat_map(|q| q.iter_mut().map(|e| &mut e.1))
    }

    /// Removes the unexpected message for which `pred` holds (a send the
    /// sender cancelled); returns it.
    pub fn cancel_unexpected(&mut self, mut pred: impl FnMut(&U) -> bool) -> Option<U> {
        let (key, i) = self
            .unexp
            .iter()
            .find_map(|(k, q)| q.iter().position(|e| pred(&e.1)).map(|i| (*k, i)))?;
        let q = self.unexp.get_mut(&key).unwrap();
        let (seq, u) = q.remove(i).unwrap();
        self.unexp_order.remove(&seq);
        Some(u)
    }

    /// Removes the posted receive for which `pred` holds (cancel). True if found.
    pub fn cancel_posted(&mut self, mut pred: impl FnMut(&P) -> bool) -> bool {
        if let Some(i) = self.posted_wild.iter().position(|e| pred(&e.2)) {
            self.posted_wild.remove(i);
            return true;
        }
        self.posted_exact.remove_first(pred)
    }

    pub fn posted_len(&self) -> usize {
        self.posted_exact.len + self.posted_wild.len()
    }

    /// No receive posted and no message waiting: the next arriving message
    /// that a receive accepts belongs to that receive.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.posted_exact.len == 0 && self.posted_wild.is_empty() && self.unexp_order.is_empty()
    }

    pub fn unexpected_len(&self) -> usize {
        self.unexp_order.len()
    }
}

/// The straightforward reference: two lists scanned front to back.
#[derive(Default)]
pub struct NaiveMatcher<P, U> {
    posted: Vec<(Key, P)>,
    unexp: Vec<(Key, U)>,
}

impl<P, U> NaiveMatcher<P, U> {
    pub fn arrive(&mut self, ctx: u32, src: i32, tag: i32, item: U) -> Option<P> {
        if let Some(i) = self
            .posted
            .iter()
            .position(|(k, _)| accepts(k.0, k.1, k.2, (ctx, src, tag)))
        {
            return Some(self.posted.remove(i).1);
        }
        self.unexp.push(((ctx, src, tag), item));
        None
    }
    pub fn post(&mut self, ctx: u32, src: i32, tag: i32, item: P) -> Option<U> {
        if let Some(i) = self
            .unexp
            .iter()
            .position(|(k, _)| accepts(ctx, src, tag, *k))
        {
            return Some(self.unexp.remove(i).1);
        }
        self.posted.push(((ctx, src, tag), item));
        None
    }
    pub fn peek_unexpected(&self, ctx: u32, src: i32, tag: i32) -> Option<&U> {
        self.unexp
            .iter()
            .find(|(k, _)| accepts(ctx, src, tag, *k))
            .map(|e| &e.1)
    }
    pub fn cancel_posted(&mut self, mut pred: impl FnMut(&P) -> bool) -> bool {
        if let Some(i) = self.posted.iter().position(|(_, p)| pred(p)) {
            self.posted.remove(i);
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Randomized differential test against the linear-scan matcher.
    #[test]
    fn matches_naive_reference() {
        for seed in 1..=300u64 {
            let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut fast: Matcher<u64, u64> = Matcher::new();
            let mut slow: NaiveMatcher<u64, u64> = NaiveMatcher::default();
            let nctx = 1 + r.below(3) as u32;
            let nsrc = 1 + r.below(4) as i32;
            let ntag = 1 + r.below(4) as i32;
            for id in 0..400u64 {
                let ctx = r.below(nctx as u64) as u32;
                match r.below(10) {
                    0..=3 => {
                        let (s, t) = (r.below(nsrc as u64) as i32, r.below(ntag as u64) as i32);
                        assert_eq!(
                            fast.arrive(ctx, s, t, id),
                            slow.arrive(ctx, s, t, id),
                            "seed {seed} op {id}"
                        );
                    }
                    4..=7 => {
                        let s = if r.below(4) == 0 {
                            ANY_SOURCE
                        } else {
                            r.below(nsrc as u64) as i32
                        };
                        let t = if r.below(4) == 0 {
                            ANY_TAG
                        } else {
                            r.below(ntag as u64) as i32
                        };
                        assert_eq!(
                            fast.post(ctx, s, t, id),
                            slow.post(ctx, s, t, id),
                            "seed {seed} op {id}"
                        );
                    }
                    8 => {
                        let s = if r.below(3) == 0 {
                            ANY_SOURCE
                        } else {
                            r.below(nsrc as u64) as i32
                        };
                        let t = if r.below(3) == 0 {
                            ANY_TAG
                        } else {
                            r.below(ntag as u64) as i32
                        };
                        assert_eq!(
                            fast.peek_unexpected(ctx, s, t).map(|e| *e.1),
                            slow.peek_unexpected(ctx, s, t).copied()
                        );
                    }
                    _ => {
                        let victim = r.below(id + 1);
                        assert_eq!(
                            fast.cancel_posted(|p| *p == victim),
                            slow.cancel_posted(|p| *p == victim)
                        );
                    }
                }
                assert_eq!(fast.posted_len(), slow.posted.len());
                assert_eq!(
                    fast.is_idle(),
                    slow.posted.is_empty() && slow.unexp.is_empty()
                );
                assert_eq!(fast.unexpected_len(), slow.unexp.len());
            }
        }
    }

    /// Past `KEEP_EMPTY_BUCKETS` keys, emptied queues give their slots back
    /// and later keys reuse them; matching stays exact throughout.
    #[test]
    fn many_keys_free_and_reuse_slots() {
        let mut m: Matcher<u64, u64> = Matcher::new();
        let n = KEEP_EMPTY_BUCKETS as i32 + 500;
        let mut most = 0;
        for round in 0..3u64 {
            for t in 0..n {
                assert!(m
                    .post(7, 1, t + round as i32, round * 100_000 + t as u64)
                    .is_none());
            }
            most = most.max(m.posted_exact.qs.len());
            for t in (0..n).rev() {
                let got = m.arrive(7, 1, t + round as i32, 0);
                assert_eq!(
                    got,
                    Some(round * 100_000 + t as u64),
                    "round {round} tag {t}"
                );
            }
            assert!(m.is_idle());
            // A message with a key that has no receive is unexpected.
            assert!(m.arrive(7, 1, -5, 9).is_none());
            assert_eq!(m.post(7, 1, -5, 1), Some(9));
        }
        assert!(most <= n as usize + 2, "{most} slots for {n} keys");
    }

    #[test]
    fn non_overtaking_same_envelope() {
        let mut m: Matcher<u32, u32> = Matcher::new();
        for i in 0..10 {
            assert!(m.arrive(0, 1, 5, i).is_none());
        }
        for i in 0..10 {
            assert_eq!(m.post(0, ANY_SOURCE, ANY_TAG, 100), Some(i));
        }
    }
}
