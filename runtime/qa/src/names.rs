//! Graph ids as names: a path's triples for answers, and as one line of
//! text for prompts. An id the bundle has no name for reads `?`.

use kgbox_bundle::Kg;
use kgbox_query::exec::Triple;

/// The triples of a path as names.
pub fn name_path(kg: &Kg<'_>, path: &[Triple]) -> Vec<[String; 3]> {
    path.iter()
        .map(|t| {
            let e = |id: u32| kg.entity_name(id).unwrap_or("?").to_string();
            [
                e(t[0]),
                kg.relation_name(t[1]).unwrap_or("?").to_string(),
                e(t[2]),
            ]
        })
        .collect()
}

/// A path as `head -[relation]-> tail; ...`.
pub fn path_text(kg: &Kg<'_>, path: &[Triple]) -> String {
    name_path(kg, path)
        .iter()
        .map(|[h, r, t]| format!("{h} -[{r}]-> {t}"))
        .collect::<Vec<_>>()
        .join("; ")
}
