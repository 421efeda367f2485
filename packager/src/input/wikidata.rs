//! What Wikidata's direct-claim predicates (`wdt:P19`) mean, for graphs
//! that use them without their property labels: a name ("place_of_birth"
//! for `P19`), since the IRI's local part says nothing, and a relation
//! description in the forms the question synthesis reads ("the birth
//! place of a person"), written for this table.
//!
//! Only opaque predicates are described here. Predicates of vocabularies
//! whose local names are words (FOAF, Dublin Core, schema.org) keep their
//! names and no description: on the ISWC graph of `benches/owngraph`,
//! descriptions written for FOAF, Dublin Core and SWRC lowered Hits@1
//! (their nouns, "work", "paper", pulled questions to the wrong steps).
//! The graph's own description of a predicate (its `rdfs:comment`) and an
//! operator's `--relation-descriptions` file come first.

/// A well-known predicate: its name and description.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Known {
    pub name: &'static str,
    pub description: &'static str,
}

/// Wikidata's direct claims (`wdt:`): property, name, description.
const WIKIDATA_PREFIX: &str = "http://www.wikidata.org/prop/direct/";
const WIKIDATA: &[(&str, &str, &str)] = &[
    (
        "P6",
        "head_of_government",
        "the head of government of a place",
    ),
    ("P17", "country", "the country of a thing"),
    ("P19", "place_of_birth", "the birth place of a person"),
    ("P20", "place_of_death", "the death place of a person"),
    ("P21", "sex_or_gender", "the gender of a person"),
    ("P22", "father", "the father of a person"),
    ("P25", "mother", "the mother of a person"),
    ("P26", "spouse", "the spouse of a person"),
    (
        "P27",
        "country_of_citizenship",
        "the citizenship of a person",
    ),
    ("P30", "continent", "the continent of a place"),
    ("P31", "instance_of", "the class of an item"),
    ("P35", "head_of_state", "the head of state of a country"),
    ("P36", "capital", "the capital of a country"),
    (
        "P37",
        "official_language",
        "the official language of a country",
    ),
    ("P38", "currency", "the currency of a country"),
    ("P39", "position_held", "a position of a person"),
    ("P40", "child", "a child of a person"),
    ("P47", "shares_border_with", "a neighbour of a place"),
    ("P50", "author", "the author of a work"),
    ("P54", "member_of_sports_team", "the team of a player"),
    ("P57", "director", "the director of a film"),
    ("P58", "screenwriter", "the screenwriter of a film"),
    ("P69", "educated_at", "the school of a person"),
    ("P86", "composer", "the composer of a work"),
    ("P101", "field_of_work", "the field of a person"),
    (
        "P102",
        "member_of_political_party",
        "the party of a politician",
    ),
    ("P103", "native_language", "the native language of a person"),
    ("P106", "occupation", "the occupation of a person"),
    ("P108", "employer", "the employer of a person"),
    ("P112", "founded_by", "the founder of an organization"),
    ("P118", "league", "the league of a team"),
    ("P123", "publisher", "the publisher of a work"),
    ("P127", "owned_by", "the owner of a thing"),
    ("P131", "located_in", "the region of a place"),
    ("P136", "genre", "the genre of a work"),
    ("P140", "religion", "the religion of a person"),
    ("P144", "based_on", "the source work of a work"),
    ("P150", "contains", "a subdivision of a place"),
    ("P155", "follows", "the predecessor of a thing"),
    ("P156", "followed_by", "the successor of a thing"),
    (
        "P159",
        "headquarters_location",
        "the headquarters of an organization",
    ),
    ("P161", "cast_member", "an actor in a film"),
    ("P162", "producer", "the producer of a work"),
    ("P166", "award_received", "an award of a person"),
    ("P175", "performer", "the performer of a work"),
    ("P176", "manufacturer", "the manufacturer of a product"),
    ("P178", "developer", "the developer of a product"),
    ("P179", "part_of_the_series", "the series of a work"),
    (
        "P184",
        "doctoral_advisor",
        "the doctoral advisor of a person",
    ),
    ("P185", "doctoral_student", "a doctoral student of a person"),
    (
        "P206",
        "located_next_to_body_of_water",
        "the lake or sea of a place",
    ),
    ("P264", "record_label", "the record label of an artist"),
    (
        "P272",
        "production_company",
        "the production company of a film",
    ),
    ("P276", "location", "the location of a thing"),
    ("P279", "subclass_of", "the superclass of a class"),
    ("P286", "head_coach", "the head coach of a team"),
    (
        "P344",
        "director_of_photography",
        "the cinematographer of a film",
    ),
    ("P355", "subsidiary", "a subsidiary of an organization"),
    ("P361", "part_of", "the whole of a part"),
    (
        "P364",
        "original_language",
        "the original language of a work",
    ),
    ("P407", "language_of_work", "the language of a work"),
    ("P413", "position_played", "the position of a player"),
    (
        "P449",
        "original_broadcaster",
        "the broadcaster of a series",
    ),
    ("P452", "industry", "the industry of a company"),
    ("P463", "member_of", "an organization of a member"),
    (
        "P495",
        "country_of_origin",
        "the country of origin of a work",
    ),
    ("P527", "has_part", "a part of a whole"),
    ("P551", "residence", "the residence of a person"),
    ("P569", "date_of_birth", "the birth date of a person"),
    ("P570", "date_of_death", "the death date of a person"),
    ("P571", "inception", "the date a thing was founded"),
    ("P577", "publication_date", "the date a work was published"),
    ("P580", "start_time", "the start time of a thing"),
    ("P582", "end_time", "the end time of a thing"),
    ("P585", "point_in_time", "the date of an event"),
    ("P641", "sport", "the sport of a team"),
    ("P674", "characters", "a character in a work"),
    ("P710", "participant", "a participant in an event"),
    ("P734", "family_name", "the family name of a person"),
    ("P735", "given_name", "the given name of a person"),
    ("P737", "influenced_by", "an influence of a person"),
    (
        "P749",
        "parent_organization",
        "the parent organization of an organization",
    ),
    ("P750", "distributed_by", "the distributor of a work"),
    (
        "P793",
        "significant_event",
        "a significant event of a thing",
    ),
    ("P800", "notable_work", "a notable work of a person"),
    ("P840", "narrative_location", "the setting of a work"),
    ("P915", "filming_location", "the filming location of a film"),
    ("P921", "main_subject", "the main subject of a work"),
    ("P1040", "film_editor", "the editor of a film"),
    ("P1082", "population", "the population of a place"),
    ("P1303", "instrument", "an instrument of a musician"),
    ("P1344", "participant_in", "an event of a participant"),
    ("P1412", "languages_spoken", "a language of a person"),
    ("P1476", "title", "the title of a work"),
    ("P2046", "area", "the area of a place"),
    ("P2047", "duration", "the duration of a work"),
    ("P2048", "height", "the height of a thing"),
    ("P2067", "mass", "the mass of a thing"),
];

/// Every description of the table (for tests of how they read).
pub fn descriptions() -> impl Iterator<Item = &'static str> {
    WIKIDATA.iter().map(|&(_, _, d)| d)
}

/// The well-known predicate `iri`, if this table has it.
pub fn known(iri: &str) -> Option<Known> {
    let p = iri.strip_prefix(WIKIDATA_PREFIX)?;
    WIKIDATA
        .iter()
        .find(|(id, _, _)| *id == p)
        .map(|&(_, name, description)| Known { name, description })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wikidata_properties_have_names_and_descriptions() {
        let p19 = known("http://www.wikidata.org/prop/direct/P19");
        assert_eq!(p19.map(|k| k.name), Some("place_of_birth"));
        assert_eq!(
            p19.map(|k| k.description),
            Some("the birth place of a person")
        );
        assert_eq!(known("http://www.wikidata.org/prop/direct/P0"), None);
        assert_eq!(known("http://example.org/P19"), None);
        // A prefix alone is no predicate.
        assert_eq!(known("http://www.wikidata.org/prop/direct/"), None);
    }
}
