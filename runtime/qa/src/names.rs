//! Graph ids as names: a path's triples for answers, and as one line of
//! text for prompts. An id the bundle has no name for reads `?`.

use kgbox_bundle::Kg;
use kgbox_query::exec::Triple;

/// The triples of a path as names.
pub fn name_path(kg: &Kg<'_>, path: &[Triple]) -> Vec<[String; 3]> {
    kgbox_query::names::path(kg, path)
}

/// A path as `head -[relation]-> tail; ...`.
pub fn path_text(kg: &Kg<'_>, path: &[Triple]) -> String {
    name_path(kg, path)
        .iter()
        .map(|[h, r, t]| format!("{h} -[{r}]-> {t}"))
        .collect::<Vec<_>>()
        .join("; ")
}
