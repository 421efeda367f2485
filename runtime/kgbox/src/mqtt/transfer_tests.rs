//! Tests of the on-disk transfer state.
#![allow(clippy::unwrap_used)]
use super::*;

fn bits(len: u64, set: &[u64]) -> Bitmap {
    let mut b = Bitmap::new(len);
    for &i in set {
        b.set(i);
    }
    b
}

#[test]
fn missing_ranges() {
    assert_eq!(Bitmap::new(40).missing_ranges(64), vec![[0, 39]]);
    let b = bits(40, &(0..10).collect::<Vec<_>>());
    assert_eq!(b.missing_ranges(64), vec![[10, 39]]);
    assert_eq!(b.count(), 10);
    let b = bits(10, &[0, 3, 4, 9]);
    assert_eq!(b.missing_ranges(64), vec![[1, 2], [5, 8]]);
    let b = bits(
        130,
        &(0..130)
            .filter(|i| *i != 64 && *i != 129)
            .collect::<Vec<_>>(),
    );
    assert_eq!(b.missing_ranges(64), vec![[64, 64], [129, 129]]);
    let full = bits(70, &(0..70).collect::<Vec<_>>());
    assert!(full.is_complete());
    assert!(full.missing_ranges(64).is_empty());
    // Every other chunk: 500 ranges, cut to 64, the last reaching the end.
    let b = bits(1000, &(0..1000).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    let r = b.missing_ranges(MAX_RANGES);
    assert_eq!(r.len(), 64);
    assert_eq!(r[62], [124, 124]);
    assert_eq!(r[63], [126, 999]);
    assert!(!b.clone().set(1));
    assert!(!b.clone().set(5000));
}

#[test]
fn bitmap_hex_round_trip() {
    let b = bits(70, &[0, 1, 63, 64, 69]);
    let back = Bitmap::from_hex(70, &b.to_hex()).unwrap();
    assert_eq!(back, b);
    assert_eq!(back.count(), 5);
    assert!(Bitmap::from_hex(200, &b.to_hex()).is_none());
    assert!(
        Bitmap::from_hex(66, &b.to_hex()).is_none(),
        "bit 69 beyond 66"
    );
    assert!(Bitmap::from_hex(70, "zz").is_none());
}

fn manifest(size: u64, chunk: u64) -> Manifest {
    Manifest {
        transfer: "t1".into(),
        size,
        sha256: "ab".repeat(32),
        chunk_bytes: chunk,
        allow_downgrade: false,
    }
}

#[test]
fn manifest_checks() {
    let ok = |j: &str| Manifest::parse(j.as_bytes(), 1 << 20, 4096);
    let good = r#"{"transfer":"abc-1","size":5000,"sha256":"ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789","chunk_bytes":2048,"x":1}"#;
    let m = ok(good).unwrap();
    assert_eq!(m.chunks(), 3);
    assert_eq!(m.chunk_len(0), Some(2048));
    assert_eq!(m.chunk_len(2), Some(904));
    assert_eq!(m.chunk_len(3), None);
    assert_eq!(m.chunk_len(u64::MAX), None);
    assert!(m.sha256.starts_with("abcdef"));
    for (bad, why) in [
        ("nope", "not JSON"),
        (r#"{"transfer":"a"}"#, "missing field"),
        (&good.replace("abc-1", "a/b"), "transfer id"),
        (&good.replace("5000", "0"), "size 0"),
        (&good.replace("5000", "9999999"), "size 9999999"),
        (&good.replace("2048", "100"), "chunk_bytes 100"),
        (&good.replace("2048", "8192"), "chunk_bytes 8192"),
        (&good.replace("ABCDEF", "ABCDEG"), "sha256"),
    ] {
        let e = ok(bad).unwrap_err();
        assert!(e.error.contains(why), "{bad}: {e}");
    }
    assert_eq!(
        ok(&good.replace("5000", "0")).unwrap_err().transfer,
        "abc-1"
    );
    assert!(valid_transfer_id(&"a".repeat(64)));
    assert!(!valid_transfer_id(&"a".repeat(65)));
    assert!(!valid_transfer_id(""));
}

#[test]
fn resumes_from_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(2500, 1024);
    let (mut t, resumed) = Transfer::open(dir.path(), m.clone()).unwrap();
    assert!(!resumed);
    t.write_chunk(1, &[7u8; 1024]).unwrap();
    t.write_chunk(2, &[9u8; 452]).unwrap();
    let mut snap = t.snapshot(1);
    snap.write_tmp().unwrap();
    snap.commit().unwrap();
    drop(t);

    let (t, resumed) = Transfer::open(dir.path(), m.clone()).unwrap();
    assert!(resumed);
    assert_eq!(t.bitmap.count(), 2);
    assert_eq!(t.bitmap.missing_ranges(64), vec![[0, 0]]);
    let mut buf = [0u8; 4];
    t.file().read_exact_at(&mut buf, 2048).unwrap();
    assert_eq!(buf, [9u8; 4]);

    // Another manifest under the same id starts afresh.
    let mut other = m.clone();
    other.chunk_bytes = 2048;
    let (t, resumed) = Transfer::open(dir.path(), other).unwrap();
    assert!(!resumed);
    assert_eq!(t.bitmap.count(), 0);
    assert!(!record_path(dir.path(), "t1").exists());

    // A corrupt record starts afresh too.
    std::fs::write(record_path(dir.path(), "t1"), "{").unwrap();
    let (_, resumed) = Transfer::open(dir.path(), m).unwrap();
    assert!(!resumed);
}

#[test]
fn removes_only_transfer_files() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "a.part",
        "a.json",
        "a.json.3.tmp",
        "b.part",
        "upload-x.kgb",
        "c.txt",
    ] {
        std::fs::write(dir.path().join(name), "").unwrap();
    }
    assert_eq!(remove_files(dir.path(), |id| id != "b"), 3);
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["b.part", "c.txt", "upload-x.kgb"]);
    std::fs::write(dir.path().join("z.part.trash"), "").unwrap();
    let mut trash = trash_files(dir.path(), |id| id == "b");
    trash.sort();
    assert_eq!(
        trash,
        [
            dir.path().join("b.part.trash"),
            dir.path().join("z.part.trash")
        ]
    );
    assert!(free_bytes(dir.path()).unwrap() > 0);
}
