//! The AGLs handed out, held once each: registrations given the same AGL share it.
//!
//! An AGL is a list of C-LANs built per phone (domain.md §3), but a region's phones get one
//! of a handful of lists — the same tiers, rotated — so 100,000 registrations hold a few
//! dozen distinct AGLs. Each registration keeps a reference-counted pointer to its list
//! instead of a copy of it; lists no registration holds any more are dropped as the table
//! grows, so the table never outgrows twice what is in use.

use std::collections::HashSet;
use std::sync::Arc;

use super::topology::ClanIdx;

/// An AGL: C-LAN indices, most preferred first.
pub type Agl = Arc<[ClanIdx]>;

/// The distinct AGLs in use.
#[derive(Debug, Default, Clone)]
pub struct Agls {
    lists: HashSet<Agl>,
    /// Size at which the next sweep of unused lists runs.
    sweep_at: usize,
}

/// Lists kept before the first sweep.
const FIRST_SWEEP: usize = 64;

impl Agls {
    /// The shared copy of `agl`.
    pub fn intern(&mut self, agl: &[ClanIdx]) -> Agl {
        if let Some(shared) = self.lists.get(agl) {
            return shared.clone();
        }
        if self.lists.len() >= self.sweep_at.max(FIRST_SWEEP) {
            // Only the table holds these: no registration has them any more.
            self.lists.retain(|list| Arc::strong_count(list) > 1);
            self.sweep_at = 2 * self.lists.len();
        }
        let shared: Agl = agl.into();
        self.lists.insert(shared.clone());
        shared
    }

    /// Distinct lists held.
    pub fn len(&self) -> usize {
        self.lists.len()
    }

    /// None held?
    pub fn is_empty(&self) -> bool {
        self.lists.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_lists_are_one_list() {
        let mut agls = Agls::default();
        let a = agls.intern(&[1, 2, 3]);
        let b = agls.intern(&[1, 2, 3]);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(agls.len(), 1);
    }

    #[test]
    fn unused_lists_are_swept() {
        let mut agls = Agls::default();
        let kept = agls.intern(&[0]);
        for i in 1..10_000 {
            drop(agls.intern(&[i]));
        }
        assert!(agls.len() <= FIRST_SWEEP + 1, "{}", agls.len());
        assert!(Arc::ptr_eq(&kept, &agls.intern(&[0])));
    }
}
