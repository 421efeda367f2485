//! How the bundle's entities and relations appear in SPARQL: the source IRI
//! an RDF input gave them, else an IRI in kgbox's namespaces
//! (`{entity_ns}{percent-encoded name}`, `{relation_ns}{...}`); an entity
//! that came from an RDF literal (a year, say) is that literal.
//!
//! [`crate::render`] writes these terms and [`super::from_sparql`] reads
//! them back, so every rendered query is accepted again.

use kgbox_bundle::Kg;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but RFC 3986's unreserved characters is encoded.
const IRI_PART: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The namespaces of entities and relations without a source IRI
/// (`RenderOptions::namespaces`).
#[derive(Debug, Clone, Copy)]
pub struct Namespaces<'a> {
    pub entity: &'a str,
    pub relation: &'a str,
}

/// An entity as a SPARQL term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityTerm {
    Iri(String),
    Literal(String),
}

/// `s` percent-encoded for a path segment of an IRI.
pub fn encode(s: &str) -> String {
    utf8_percent_encode(s, IRI_PART).to_string()
}

/// `s` percent-decoded; `None` when the bytes are not UTF-8.
fn decode(s: &str) -> Option<String> {
    percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|c| c.into_owned())
}

/// Entity `id` as a SPARQL term; `None` for an id the bundle lacks.
pub fn entity_term(kg: &Kg<'_>, id: u32, ns: Namespaces<'_>) -> Option<EntityTerm> {
    let name = kg.entity_name(id)?;
    if let Some(iri) = kg.entity_iri(id) {
        return Some(EntityTerm::Iri(iri.to_string()));
    }
    if kg.has_iris() {
        return Some(EntityTerm::Literal(name.to_string()));
    }
    Some(EntityTerm::Iri(format!("{}{}", ns.entity, encode(name))))
}

/// Relation `id`'s predicate IRI; `None` for an id the bundle lacks.
pub fn relation_iri(kg: &Kg<'_>, id: u32, ns: Namespaces<'_>) -> Option<String> {
    if let Some(iri) = kg.relation_iri(id) {
        return Some(iri.to_string());
    }
    let name = kg.relation_name(id)?;
    Some(format!("{}{}", ns.relation, encode(name)))
}

/// The entity an IRI names: a source IRI, or one in kgbox's namespace.
pub(crate) fn entity_by_iri(kg: &Kg<'_>, iri: &str, ns: Namespaces<'_>) -> Option<u32> {
    if let Some(id) = kg.entity_by_iri(iri) {
        return Some(id);
    }
    let name = decode(iri.strip_prefix(ns.entity)?)?;
    kg.entity_id(&name)
}

/// The entity a literal is: one that came from a literal (it has no source
/// IRI), by its name.
pub(crate) fn entity_by_literal(kg: &Kg<'_>, value: &str) -> Option<u32> {
    kg.entity_id(value)
        .filter(|&id| !kg.has_iris() || kg.entity_iri(id).is_none())
}

/// The entities whose name or an alias is exactly `label`
/// (`?x rdfs:label "..."`).
pub(crate) fn entities_named(kg: &Kg<'_>, label: &str) -> Vec<u32> {
    let mut ids: Vec<u32> = kg
        .lookup_normalized(&kgbox_bundle::normalize::normalize(label))
        .into_iter()
        .map(|p| p.entity)
        .filter(|&id| kg.entity_name(id) == Some(label) || kg.aliases(id).any(|a| a == label))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// The relation a predicate IRI names.
pub(crate) fn relation_by_iri(kg: &Kg<'_>, iri: &str, ns: Namespaces<'_>) -> Option<u32> {
    if let Some(id) = kg.relation_by_iri(iri) {
        return Some(id);
    }
    let name = decode(iri.strip_prefix(ns.relation)?)?;
    kg.relation_id(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_and_decoded() {
        assert_eq!(encode("Blade Runner/2"), "Blade%20Runner%2F2");
        assert_eq!(encode("Amélie"), "Am%C3%A9lie");
        assert_eq!(decode("Am%C3%A9lie").as_deref(), Some("Amélie"));
        assert_eq!(decode("%FF"), None);
    }
}
