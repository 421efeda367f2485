//! Words of identifiers: relation and class names as people read them.

/// The words of an identifier: `directed_by`, `birthPlace`, `dc:title`,
/// `release-year` → `directed by`, `birth place`, `dc title`, `release year`.
/// A full IRI (a graph's name for a predicate whose local name another
/// predicate has too) reads as its local name:
/// `http://purl.org/dc/elements/1.1/subject` → `subject`.
pub fn split_words(name: &str) -> Vec<String> {
    let name = local_name(name);
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_numeric();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    words
}

/// The part of an IRI after its last `/` or `#` (trailing ones ignored);
/// anything else as it is.
fn local_name(name: &str) -> &str {
    if !name.contains("://") {
        return name;
    }
    let trimmed = name.trim_end_matches(['/', '#']);
    trimmed
        .rfind(['/', '#'])
        .map_or(trimmed, |i| &trimmed[i + 1..])
}

/// Nouns whose plural is the singular.
const INVARIANT: &[&str] = &["series", "species"];

/// A lower-case English noun in the singular, roughly: `starships` →
/// `starship`, `countries` → `country`; `class`, `species` and words of
/// three letters or fewer as they are.
pub fn singular(word: &str) -> String {
    if word.len() <= 3 || word.ends_with("ss") || INVARIANT.contains(&word) {
        return word.to_string();
    }
    if let Some(stem) = word.strip_suffix("ies").filter(|s| s.len() > 1) {
        return format!("{stem}y");
    }
    word.strip_suffix('s').unwrap_or(word).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nouns_in_the_singular() {
        assert_eq!(singular("starships"), "starship");
        assert_eq!(singular("countries"), "country");
        assert_eq!(singular("class"), "class");
        assert_eq!(singular("bus"), "bus");
        assert_eq!(singular("vehicle"), "vehicle");
        assert_eq!(singular("species"), "species");
        assert_eq!(singular("ties"), "tie");
        assert_eq!(singular("cars"), "car");
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(split_words("directed_by"), ["directed", "by"]);
        assert_eq!(split_words("birthPlace"), ["birth", "place"]);
        assert_eq!(split_words("dc:title"), ["dc", "title"]);
        assert_eq!(split_words("hasIMDBRating"), ["has", "imdbrating"]);
        assert_eq!(split_words("release-year2"), ["release", "year2"]);
        assert_eq!(
            split_words("http://purl.org/dc/elements/1.1/subject"),
            ["subject"]
        );
        assert_eq!(
            split_words("http://www.w3.org/2004/02/skos/core#prefLabel"),
            ["pref", "label"]
        );
        assert_eq!(split_words("http://example.org/vocab/"), ["vocab"]);
    }
}
