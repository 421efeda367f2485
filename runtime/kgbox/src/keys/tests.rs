#![allow(clippy::unwrap_used)]

use super::*;

fn key_with(secret_hex: char, text: &str) -> String {
    let (head, _) = text.rsplit_once('_').unwrap();
    format!("{head}_{}", secret_hex.to_string().repeat(64))
}

#[test]
fn a_key_is_checked_by_its_secret_and_stops_when_revoked() {
    let dir = tempfile::tempdir().unwrap();
    let ring = Keyring::open(dir.path()).unwrap();
    assert!(!ring.any_active());
    let (text, record) = add(dir.path(), "sales", vec![Scope::Read(None)], None).unwrap();
    assert!(text.starts_with(&format!("kgb_{}_", record.id)));
    assert_eq!(ring.check(&text).unwrap().name, "sales");
    assert!(ring.any_active());
    // The same id with another secret, a changed digit, garbage.
    let wrong = key_with('0', &text);
    assert_eq!(ring.check(&wrong).unwrap_err().0, Refusal::Unknown);
    assert_eq!(ring.check("kgb_nothex").unwrap_err().0, Refusal::Malformed);
    assert_eq!(ring.check("").unwrap_err().0, Refusal::Malformed);
    let other = format!("kgb_{}_{}", "a".repeat(12), "b".repeat(64));
    assert_eq!(
        ring.check(&other).unwrap_err(),
        (Refusal::Unknown, Some("a".repeat(12)))
    );
    // Revoked by name, while the ring is open: noticed at the next check.
    revoke(dir.path(), "sales").unwrap();
    assert_eq!(ring.check(&text).unwrap_err().0, Refusal::Revoked);
    assert!(!ring.any_active());
    // The file keeps no secret.
    let stored = std::fs::read_to_string(dir.path().join(KEYS_FILE)).unwrap();
    assert!(!stored.contains(text.rsplit_once('_').unwrap().1));
}

#[test]
fn names_and_scopes_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    assert!(add(dir.path(), " ", vec![Scope::Admin], None).is_err());
    assert!(add(dir.path(), "x", vec![], None).is_err());
    add(dir.path(), "x", vec![Scope::Admin], None).unwrap();
    let again = add(dir.path(), "x", vec![Scope::Admin], None).unwrap_err();
    assert!(again.to_string().contains("exists"), "{again}");
    assert!(revoke(dir.path(), "nobody").is_err());
    let (_, r) = add(
        dir.path(),
        "plant",
        vec!["read:plant".parse().unwrap()],
        None,
    )
    .unwrap();
    assert!(r.reads("plant") && !r.reads("office") && !r.is_admin());
    assert_eq!(list(dir.path()).unwrap().len(), 2);
}

#[test]
fn scopes_and_rates_parse_and_print() {
    for s in ["read", "read:plant-a", "admin"] {
        assert_eq!(s.parse::<Scope>().unwrap().to_string(), s);
    }
    for bad in ["write", "read:", "read:a b", ""] {
        assert!(bad.parse::<Scope>().is_err(), "{bad}");
    }
    for (s, per) in [("20/s", 1), ("600/min", 60), ("5/h", 3600)] {
        let r: Rate = s.parse().unwrap();
        assert_eq!(r.per.as_secs(), per);
        assert_eq!(r.to_string(), s);
    }
    for bad in ["0/s", "x/s", "5/day", "5", "-1/s"] {
        assert!(bad.parse::<Rate>().is_err(), "{bad}");
    }
}

#[test]
fn a_key_is_found_in_a_url() {
    let key = format!("kgb_{}_{}", "1".repeat(12), "f".repeat(64));
    assert!(Token::appears_in(&format!("query=x&api_key={key}")));
    assert!(Token::appears_in(&key));
    assert!(!Token::appears_in("query=kgb_123"));
    assert!(!Token::appears_in("query=SELECT"));
}

#[test]
fn a_damaged_key_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(KEYS_FILE), "{not json").unwrap();
    let err = Keyring::open(dir.path()).err().unwrap();
    assert!(err.to_string().contains("keys.json"), "{err}");
}

#[test]
fn an_id_wins_over_a_name_that_looks_like_one() {
    let dir = tempfile::tempdir().unwrap();
    let (_, first) = add(dir.path(), "first", vec![Scope::Admin], None).unwrap();
    // A key named after the first key's id.
    let (_, decoy) = add(dir.path(), &first.id, vec![Scope::Read(None)], None).unwrap();
    let revoked = revoke(dir.path(), &first.id).unwrap();
    assert_eq!(revoked.id, first.id);
    let keys = list(dir.path()).unwrap();
    let decoy_now = keys.iter().find(|k| k.id == decoy.id).unwrap();
    assert!(decoy_now.revoked.is_none(), "the decoy stays");
    assert!(first.reads_all() && decoy.reads_all());
    let (_, plant) = add(
        dir.path(),
        "plant",
        vec!["read:plant".parse().unwrap()],
        None,
    )
    .unwrap();
    assert!(!plant.reads_all());
}

#[test]
fn a_key_file_damaged_later_keeps_the_keys_read_before() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = add(dir.path(), "sales", vec![Scope::Read(None)], None).unwrap();
    let ring = Keyring::open(dir.path()).unwrap();
    assert!(ring.check(&text).is_ok());
    std::fs::write(dir.path().join(KEYS_FILE), "{damaged").unwrap();
    assert!(
        ring.check(&text).is_ok(),
        "the last keys read stay in force"
    );
    assert!(
        ring.check(&text).is_ok(),
        "and the file is not reread each time"
    );
    revoke(dir.path(), "sales").unwrap_err();
}
