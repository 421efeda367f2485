//! The literal objects of an RDF file, held from the read until the name
//! predicates are chosen (`label_predicates.rs`): only then is it known
//! which literals name their subject, which are aliases, which are long
//! texts kept out of the graph and which become literal value nodes.
//!
//! Memory: 32 bytes per literal triple plus its value's text, once per
//! triple (one arena for all values). A graph of 10M literal triples of 20
//! bytes each holds about 520 MB here until the names are chosen; the
//! literal nodes that remain are then interned as today.

use std::collections::HashMap;

/// A literal longer than this (in characters) is a text, not a value.
pub const LONG_TEXT_CHARS: usize = 100;
/// A literal of more words than this is a text, not a value.
pub const LONG_TEXT_WORDS: usize = 12;

/// Predicates whose literals are descriptions and comments: kept out of the
/// question-answering graph whatever their length (the RDF statements keep
/// them for `/sparql`).
pub const TEXT_PREDICATES: &[&str] = &[
    "http://www.w3.org/2000/01/rdf-schema#comment",
    "http://purl.org/dc/elements/1.1/description",
    "http://purl.org/dc/terms/description",
    "http://purl.org/dc/terms/abstract",
    "http://schema.org/description",
    "https://schema.org/description",
    "http://www.w3.org/2004/02/skos/core#definition",
    "http://www.w3.org/2004/02/skos/core#note",
    "http://www.w3.org/2004/02/skos/core#scopeNote",
    "http://www.w3.org/2004/02/skos/core#editorialNote",
    "http://www.w3.org/2004/02/skos/core#historyNote",
    "http://www.w3.org/2004/02/skos/core#example",
    "http://dbpedia.org/ontology/abstract",
];

/// Predicates whose literal says what its subject is (a comment, a
/// definition): a predicate's own one is its relation's description.
pub const DEFINITION_PREDICATES: &[&str] = &[
    "http://www.w3.org/2000/01/rdf-schema#comment",
    "http://www.w3.org/2004/02/skos/core#definition",
    "http://purl.org/dc/terms/description",
    "http://purl.org/dc/elements/1.1/description",
    "http://schema.org/description",
    "https://schema.org/description",
];

/// Whether a literal value is a long text (a description, a comment), which
/// does not become a graph node.
pub fn is_long_text(value: &str) -> bool {
    value.chars().count() > LONG_TEXT_CHARS || value.split_whitespace().count() > LONG_TEXT_WORDS
}

/// Datatypes of string literals; any other datatype (numbers, dates) is a
/// value that never names an entity.
const STRING_DATATYPES: &[&str] = &[
    "http://www.w3.org/2001/XMLSchema#string",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString",
];

/// Whether a literal of `datatype` is a string.
pub fn is_string_datatype(datatype: &str) -> bool {
    STRING_DATATYPES.contains(&datatype)
}

const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
/// XSD's integer types (`xsd:integer` and those derived from it).
const INTEGER_TYPES: &[&str] = &[
    "integer",
    "long",
    "int",
    "short",
    "byte",
    "nonNegativeInteger",
    "positiveInteger",
    "nonPositiveInteger",
    "negativeInteger",
    "unsignedLong",
    "unsignedInt",
    "unsignedShort",
    "unsignedByte",
];

/// A number's or boolean's value in its canonical form, as SPARQL stores
/// print it (`"202.0"^^xsd:decimal` is `202`, `"007"^^xsd:integer` is `7`,
/// `"2.5E1"^^xsd:double` is `25`), so that an answer reads the same
/// whichever way the file spelt it. Any other literal, and a number that
/// does not parse, keeps its lexical form.
pub fn canonical_value<'a>(value: &'a str, datatype: &str) -> std::borrow::Cow<'a, str> {
    use oxsdatatypes::{Boolean, Decimal, Double, Float, Integer};
    use std::borrow::Cow;
    fn parsed<T: std::str::FromStr + std::fmt::Display>(value: &str) -> Option<String> {
        value.trim().parse::<T>().ok().map(|v| v.to_string())
    }
    let Some(local) = datatype.strip_prefix(XSD) else {
        return Cow::Borrowed(value);
    };
    let canonical = match local {
        "decimal" => parsed::<Decimal>(value),
        "double" => parsed::<Double>(value),
        "float" => parsed::<Float>(value),
        "boolean" => parsed::<Boolean>(value),
        t if INTEGER_TYPES.contains(&t) => parsed::<Integer>(value),
        _ => None,
    };
    match canonical {
        Some(c) if c != value => Cow::Owned(c),
        _ => Cow::Borrowed(value),
    }
}

/// One literal triple as read.
#[derive(Debug, Clone, Copy)]
pub struct Literal {
    /// The subject's interned entity id.
    pub subject: u32,
    /// The predicate's id in the reading's predicate table.
    pub predicate: u32,
    /// The language's id in [`Literals::lang`] (0: none).
    lang: u32,
    /// A string literal (plain, `xsd:string` or with a language).
    pub string: bool,
    start: u64,
    len: u32,
}

/// The literal triples of one file, values in one arena.
#[derive(Default)]
pub struct Literals {
    text: String,
    items: Vec<Literal>,
    langs: Vec<String>,
    lang_ids: HashMap<String, u32>,
}

impl Literals {
    pub fn push(&mut self, subject: u32, predicate: u32, value: &str, lang: &str, string: bool) {
        let lang = self.lang_id(lang);
        let start = self.text.len() as u64;
        // A value over 4 GiB is cut at a character boundary.
        let mut len = value.len().min(u32::MAX as usize);
        while !value.is_char_boundary(len) {
            len -= 1;
        }
        self.text.push_str(&value[..len]);
        self.items.push(Literal {
            subject,
            predicate,
            lang,
            string,
            start,
            len: len as u32,
        });
    }

    fn lang_id(&mut self, lang: &str) -> u32 {
        if lang.is_empty() {
            return 0;
        }
        if self.langs.is_empty() {
            self.langs.push(String::new());
        }
        if let Some(&id) = self.lang_ids.get(lang) {
            return id;
        }
        let id = self.langs.len() as u32;
        self.langs.push(lang.to_string());
        self.lang_ids.insert(lang.to_string(), id);
        id
    }

    pub fn value(&self, l: &Literal) -> &str {
        let start = l.start as usize;
        self.text
            .get(start..start + l.len as usize)
            .unwrap_or_default()
    }

    pub fn lang(&self, l: &Literal) -> &str {
        self.langs
            .get(l.lang as usize)
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// The language id, for grouping.
    pub fn lang_key(&self, l: &Literal) -> u32 {
        l.lang
    }

    pub fn items(&self) -> &[Literal] {
        &self.items
    }

    /// Orders the literals by predicate, subject and language (the order
    /// of the triples does not matter to the bundle).
    pub fn sort(&mut self) {
        self.items
            .sort_unstable_by_key(|l| (l.predicate, l.subject, l.lang, l.start));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_languages_come_back() {
        let mut l = Literals::default();
        l.push(3, 1, "Alien", "en", true);
        l.push(2, 1, "1979", "", false);
        l.push(3, 0, "Alien, le huitième passager", "fr", true);
        l.sort();
        let got: Vec<(u32, &str, &str)> = l
            .items()
            .iter()
            .map(|x| (x.subject, l.value(x), l.lang(x)))
            .collect();
        assert_eq!(
            got,
            [
                (3, "Alien, le huitième passager", "fr"),
                (2, "1979", ""),
                (3, "Alien", "en")
            ]
        );
    }

    #[test]
    fn numbers_read_as_sparql_stores_print_them() {
        let xsd = |t: &str| format!("{XSD}{t}");
        for (value, datatype, want) in [
            ("202.0", "decimal", "202"),
            ("202.50", "decimal", "202.5"),
            ("007", "integer", "7"),
            ("+5", "nonNegativeInteger", "5"),
            ("2.5E1", "double", "25"),
            ("1.0e0", "float", "1"),
            ("1", "boolean", "true"),
            // Not numbers, or not parsable: as written.
            ("1977-05-25", "date", "1977-05-25"),
            ("12 parsecs", "decimal", "12 parsecs"),
            ("202.0", "string", "202.0"),
        ] {
            assert_eq!(
                canonical_value(value, &xsd(datatype)),
                want,
                "{value} {datatype}"
            );
        }
        assert_eq!(
            canonical_value("202.0", "http://example.org/length"),
            "202.0"
        );
    }

    #[test]
    fn long_texts() {
        assert!(!is_long_text("Blade Runner"));
        assert!(!is_long_text("1982-06-25"));
        assert!(is_long_text(&"a".repeat(101)));
        assert!(is_long_text(
            "one two three four five six seven eight nine ten eleven twelve thirteen"
        ));
    }
}
