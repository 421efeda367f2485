//! How the entity index's fst values and postings are tagged.

/// Postings with this bit set come from an alias, not the entity's name.
pub const POSTING_ALIAS: u32 = 1 << 31;
/// fst values at or above this point into the postings array.
pub const POSTINGS_LIST: u64 = 1 << 32;
