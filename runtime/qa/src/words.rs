//! Words of identifiers: relation and class names as people read them.

/// The words of an identifier: `directed_by`, `birthPlace`, `dc:title`,
/// `release-year` → `directed by`, `birth place`, `dc title`, `release year`.
pub fn split_words(name: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words() {
        assert_eq!(split_words("directed_by"), ["directed", "by"]);
        assert_eq!(split_words("birthPlace"), ["birth", "place"]);
        assert_eq!(split_words("dc:title"), ["dc", "title"]);
        assert_eq!(split_words("hasIMDBRating"), ["has", "imdbrating"]);
        assert_eq!(split_words("release-year2"), ["release", "year2"]);
    }
}
