//! Index-stable storage with generation-checked tokens, for requests and other
//! objects named by integer handles or by tokens that travel in cell headers.

pub struct Slab<T> {
    items: Vec<(u32, Option<T>)>,
    free: Vec<u32>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Slab<T> {
    /// An empty slab (usable in a `static`).
    pub const fn new() -> Slab<T> {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
        }
    }

    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        self.insert_with(|| v)
    }

    /// Inserts the value `make` returns, built straight into the free slot
    /// (inlined, the compiler writes its fields there instead of building
    /// it elsewhere and copying it over, which for a large value costs
    /// stalls on reading back the just-written pieces).
    #[inline(always)]
    pub fn insert_with(&mut self, make: impl FnOnce() -> T) -> u32 {
        if let Some(i) = self.free.pop() {
            let e = &mut self.items[i as usize];
            e.0 = e.0.wrapping_add(1);
            e.1 = Some(make());
            i
        } else {
            self.items.push((0, Some(make())));
            (self.items.len() - 1) as u32
        }
    }

    #[inline]
    pub fn get(&self, i: u32) -> Option<&T> {
        self.items.get(i as usize).and_then(|e| e.1.as_ref())
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> Option<&mut T> {
        self.items.get_mut(i as usize).and_then(|e| e.1.as_mut())
    }

    pub fn remove(&mut self, i: u32) -> Option<T> {
        let v = self.items.get_mut(i as usize)?.1.take();
        if v.is_some() {
            self.free.push(i);
        }
        v
    }

    /// Removes and drops slot `i`'s value in place (no move out). True if it held one.
    #[inline]
    pub fn discard(&mut self, i: u32) -> bool {
        let Some(e) = self.items.get_mut(i as usize) else {
            return false;
        };
        if e.1.is_none() {
            return false;
        }
        e.1 = None;
        self.free.push(i);
        true
    }

    /// A token naming slot `i` in its current generation.
    pub fn token(&self, i: u32) -> u64 {
        ((self.items[i as usize].0 as u64) << 32) | i as u64
    }

    /// The slot a token names, if it is still the same generation and occupied.
    pub fn from_token(&self, t: u64) -> Option<u32> {
        let i = (t & 0xffff_ffff) as u32;
        let g = (t >> 32) as u32;
        match self.items.get(i as usize) {
            Some((gen, Some(_))) if *gen == g => Some(i),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.items.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.items
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.1.as_ref().map(|v| (i as u32, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn stale_tokens_are_rejected() {
        let mut s = Slab::default();
        let a = s.insert(1);
        let t = s.token(a);
        assert_eq!(s.from_token(t), Some(a));
        s.remove(a);
        assert_eq!(s.from_token(t), None);
        let b = s.insert(2);
        assert_eq!(a, b);
        assert_eq!(s.from_token(t), None);
        assert_eq!(s.from_token(s.token(b)), Some(b));
        assert_eq!(s.len(), 1);
        assert!(s.discard(b));
        assert!(!s.discard(b));
        assert_eq!(s.from_token(s.token(b)), None);
        assert_eq!(s.len(), 0);
        assert_eq!(s.insert(3), b);
    }
}
