//! Ids as names, for what goes out to people and clients: answers, triples
//! and provenance paths. An id the bundle cannot name shows as `?`.

use kgbox_bundle::Kg;

use crate::exec::Triple;

/// An entity's name.
pub fn entity(kg: &Kg<'_>, id: u32) -> String {
    kg.entity_name(id).unwrap_or("?").to_string()
}

/// A triple as `[head, relation, tail]` names.
pub fn triple(kg: &Kg<'_>, t: &Triple) -> [String; 3] {
    [
        entity(kg, t[0]),
        kg.relation_name(t[1]).unwrap_or("?").to_string(),
        entity(kg, t[2]),
    ]
}

/// A provenance path as named triples.
pub fn path(kg: &Kg<'_>, p: &[Triple]) -> Vec<[String; 3]> {
    p.iter().map(|t| triple(kg, t)).collect()
}
