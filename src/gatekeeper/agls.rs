//! The AGLs handed out, held once each: registrations given the same AGL share it.
//!
//! An AGL is a list of C-LANs built per phone (docs/rules.md §6), but a region's phones get one
//! of a handful of lists — the same tiers, rotated — so 100,000 registrations hold a few
//! dozen distinct AGLs. Each registration keeps a reference-counted pointer to its list
//! instead of a copy of it; lists no registration holds any more are dropped as the table
//! grows, so the table never outgrows twice what is in use. Each list's encoding for an RCF
//! is made once too, the first time it is sent, and kept beside it, found by the address
//! of the shared list: every RCF looks it up, and hashing the whole list with SipHash
//! cost a twentieth of a keep-alive's work.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::topology::ClanIdx;

/// An AGL: C-LAN indices, most preferred first.
pub type Agl = Arc<[ClanIdx]>;

/// The distinct AGLs in use.
#[derive(Debug, Default, Clone)]
pub struct Agls {
    /// The lists, looked up by content for every full RRQ: C-LAN indices of the
    /// configuration, so a fixed foldhash will do.
    lists: HashSet<Agl, foldhash::fast::FixedState>,
    /// Encodings of lists (`SEQUENCE OF AlternateGK`), by the address of the list, which
    /// is kept beside its encoding (so that the address is not used again while the entry
    /// lives). Addresses come from the allocator, not from what peers send.
    encodings: HashMap<usize, (Agl, Box<[u8]>), foldhash::fast::FixedState>,
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
            self.encodings
                .retain(|_, (list, _)| Arc::strong_count(list) > 2);
            self.lists.retain(|list| Arc::strong_count(list) > 1);
            self.sweep_at = 2 * self.lists.len();
        }
        let shared: Agl = agl.into();
        self.lists.insert(shared.clone());
        shared
    }

    /// The encoding of `agl`, made by `encode` the first time it is asked for; `None` when
    /// `encode` cannot make it.
    pub fn encoded(
        &mut self,
        agl: &Agl,
        encode: impl FnOnce(&[ClanIdx]) -> Option<Vec<u8>>,
    ) -> Option<&[u8]> {
        match self.encodings.entry(address(agl)) {
            Entry::Occupied(entry) => Some(&entry.into_mut().1[..]),
            Entry::Vacant(entry) => {
                let octets = encode(agl)?;
                Some(&entry.insert((agl.clone(), octets.into())).1[..])
            }
        }
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

/// Where a list's entries are: the same for every clone of one shared list.
fn address(agl: &Agl) -> usize {
    Arc::as_ptr(agl).cast::<ClanIdx>() as usize
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
    fn a_list_is_encoded_once() {
        let mut agls = Agls::default();
        let list = agls.intern(&[4, 2]);
        let mut made = 0;
        for _ in 0..3 {
            let octets = agls.encoded(&list, |l| {
                made += 1;
                Some(l.iter().map(|&c| c as u8).collect())
            });
            assert_eq!(octets, Some(&[4u8, 2][..]));
        }
        assert_eq!(made, 1);
        let unencodable = agls.intern(&[9]);
        assert_eq!(agls.encoded(&unencodable, |_| None), None);
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
