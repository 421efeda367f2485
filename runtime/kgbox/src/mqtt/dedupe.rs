//! Redelivered requests: the last `capacity` (response topic, correlation
//! data) keys, oldest forgotten first.

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;

/// A request's identity: where the reply goes and its correlation data.
pub(crate) type Key = (String, Bytes);

/// A bounded set of recently seen keys.
#[derive(Debug)]
pub(crate) struct Dedupe {
    capacity: usize,
    order: VecDeque<Key>,
    seen: HashSet<Key>,
}

impl Dedupe {
    pub(crate) fn new(capacity: usize) -> Dedupe {
        let capacity = capacity.max(1);
        Dedupe {
            capacity,
            order: VecDeque::with_capacity(capacity.min(4096)),
            seen: HashSet::with_capacity(capacity.min(4096)),
        }
    }

    /// Remembers `key`; `false` when it was seen recently (a repeat).
    pub(crate) fn insert(&mut self, key: Key) -> bool {
        if self.seen.contains(&key) {
            return false;
        }
        while self.order.len() >= self.capacity {
            match self.order.pop_front() {
                Some(old) => {
                    self.seen.remove(&old);
                }
                None => break,
            }
        }
        self.seen.insert(key.clone());
        self.order.push_back(key);
        true
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(topic: &str, c: &str) -> Key {
        (topic.to_string(), Bytes::copy_from_slice(c.as_bytes()))
    }

    #[test]
    fn repeats_are_refused() {
        let mut d = Dedupe::new(8);
        assert!(d.insert(key("r/1", "a")));
        assert!(!d.insert(key("r/1", "a")));
        // Same correlation data, another reply topic: a different request.
        assert!(d.insert(key("r/2", "a")));
        assert!(d.insert(key("r/1", "b")));
        assert!(!d.insert(key("r/2", "a")));
    }

    #[test]
    fn the_oldest_is_forgotten_first() {
        let mut d = Dedupe::new(3);
        for c in ["a", "b", "c"] {
            assert!(d.insert(key("r", c)));
        }
        assert!(d.insert(key("r", "d")));
        assert_eq!(d.len(), 3);
        // "a" was evicted, "b".."d" are remembered.
        assert!(!d.insert(key("r", "b")));
        assert!(!d.insert(key("r", "d")));
        assert!(d.insert(key("r", "a")));
        // Inserting "a" evicted "b".
        assert!(d.insert(key("r", "b")));
        assert_eq!(d.len(), 3);
    }

    #[test]
    fn capacity_zero_acts_as_one() {
        let mut d = Dedupe::new(0);
        assert!(d.insert(key("r", "a")));
        assert!(!d.insert(key("r", "a")));
        assert!(d.insert(key("r", "b")));
        assert!(d.insert(key("r", "a")));
    }
}
