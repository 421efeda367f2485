//! How the bundle's entities and relations appear in SPARQL: the source IRI
//! an RDF input gave them, else an IRI in kgbox's namespaces
//! (`{entity_ns}{percent-encoded name}`, `{relation_ns}{...}`); an entity
//! of an RDF bundle without a source IRI that is the head of no triple (it
//! came from a literal: a year, say) is that literal. One without an IRI
//! that heads triples (a blank node with edges) gets a kgbox IRI, since a
//! literal cannot be a subject. A literal whose value an entity's name
//! took is named `value (literal)` by the packager, with its value as an
//! alias ([`LITERAL_QUALIFIER`]); its term is the value.
//!
//! [`crate::render`] writes these terms, [`super::from_sparql`] reads them
//! back, so every rendered query is accepted again, and `kgbox-pack export`
//! writes the graph with them, so a store loaded with the export answers
//! the rendered queries.

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

/// The qualifier the packager gives a literal value whose plain name an
/// entity has: `Paris (literal)`, with the alias `Paris`.
pub const LITERAL_QUALIFIER: &str = "literal";

/// The value of a literal entity named `name`: the name, or, for
/// `value (literal)` with the alias `value`, the value.
fn literal_value<'a>(kg: &Kg<'a>, id: u32, name: &'a str) -> &'a str {
    let suffix = format!(" ({LITERAL_QUALIFIER})");
    match name.strip_suffix(&suffix) {
        Some(value) if kg.aliases(id).any(|a| a == value) => value,
        _ => name,
    }
}

/// Entity `id` as a SPARQL term; `None` for an id the bundle lacks.
pub fn entity_term(kg: &Kg<'_>, id: u32, ns: Namespaces<'_>) -> Option<EntityTerm> {
    let name = kg.entity_name(id)?;
    if let Some(iri) = kg.entity_iri(id) {
        return Some(EntityTerm::Iri(iri.to_string()));
    }
    if is_literal(kg, id) {
        return Some(EntityTerm::Literal(literal_value(kg, id, name).to_string()));
    }
    Some(EntityTerm::Iri(format!("{}{}", ns.entity, encode(name))))
}

/// Whether entity `id` (which has no source IRI) is written as a literal:
/// in a bundle with source IRIs, when it heads no triple.
fn is_literal(kg: &Kg<'_>, id: u32) -> bool {
    kg.has_iris() && kg.out.degree(id) == 0
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
pub fn entity_by_iri(kg: &Kg<'_>, iri: &str, ns: Namespaces<'_>) -> Option<u32> {
    if let Some(id) = kg.entity_by_iri(iri) {
        return Some(id);
    }
    let name = decode(iri.strip_prefix(ns.entity)?)?;
    kg.entity_id(&name)
}

/// The entity a literal is: one that [`entity_term`] writes as a literal
/// (no source IRI, heads no triple), by its name; in a bundle without
/// source IRIs, any entity by its name.
pub fn entity_by_literal(kg: &Kg<'_>, value: &str) -> Option<u32> {
    let literal =
        |id: &u32| !kg.has_iris() || (kg.entity_iri(*id).is_none() && is_literal(kg, *id));
    kg.entity_id(value).filter(literal).or_else(|| {
        let renamed = kg.entity_id(&format!("{value} ({LITERAL_QUALIFIER})"))?;
        (literal(&renamed) && kg.aliases(renamed).any(|a| a == value)).then_some(renamed)
    })
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
pub fn relation_by_iri(kg: &Kg<'_>, iri: &str, ns: Namespaces<'_>) -> Option<u32> {
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
