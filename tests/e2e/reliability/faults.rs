//! Bad bundles and faulty data dirs: each is refused with an error naming the
//! cause, and the active bundle keeps serving, unchanged.
#![allow(clippy::unwrap_used)]

use std::io::Cursor;
use std::path::{Path, PathBuf};

use kgbox_bundle::sections::include_in_image;
use kgbox_bundle::writer::StoredSection;
use kgbox_bundle::{BundleReader, BundleWriter, Limits, TrustedKeys};
use kgbox_testkit::*;

/// Rebuilds a bundle from `bundle`'s sections, letting `edit` replace or add
/// stored sections, signed by `keys`.
fn rebuild(
    bundle: &[u8],
    keys: &Keys,
    edit: impl Fn(&str, &[u8]) -> Option<StoredSection>,
    extra: Vec<StoredSection>,
) -> Vec<u8> {
    let (manifest, sections) = sections_of(bundle);
    let mut w = BundleWriter::new(manifest);
    for (name, required, raw) in sections {
        let s = edit(&name, &raw)
            .unwrap_or_else(|| StoredSection::compress(&name, required, &raw, 3).unwrap());
        w.add_stored(s).unwrap();
    }
    for s in extra {
        w.add_stored(s).unwrap();
    }
    let mut out = Vec::new();
    w.write(&keys.key, &mut out).unwrap();
    out
}

/// `frames` zstd frames of 1 MiB of zeros each: 1 MiB per ~100 stored bytes.
fn zeros_bomb(frames: usize) -> Vec<u8> {
    let one = zstd::bulk::compress(&vec![0u8; 1 << 20], 3).unwrap();
    one.repeat(frames)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Installs `bundle` and expects a refusal whose message contains `needle`.
fn refused(device: &Device, bundle: &Path, needle: &str) {
    let o = device.install(bundle);
    let err = stderr(&o);
    assert!(!o.status.success(), "{} was installed", bundle.display());
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_bundles_are_refused_and_the_active_bundle_keeps_serving() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let keys = Keys::new(dir, "operator", 7);
    let stranger = Keys::new(dir, "stranger", 8);
    let tsv = small_tsv(dir);
    let v1 = dir.join("v1.kgb");
    let v2 = dir.join("v2.kgb");
    pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
    pack(&tsv, "films", "2.0.0", &keys, &v2, &[]);
    let good = read(&v2);

    let device = Device::new(
        &[&keys.public],
        "[limits]\nmax_section_bytes = 8388608\nmax_image_bytes = 16777216",
    );
    device.install_ok(&v1);
    let server = device.serve();
    let before = server.get_json("/v1/entities/Blade%20Runner");

    // Not a bundle at all.
    refused(
        &device,
        &write(dir, "text.kgb", b"head\trel\ttail\n"),
        "not a kgbox bundle",
    );
    refused(&device, &dir.join("missing.kgb"), "missing.kgb");

    // Truncated anywhere.
    for cut in [0, 5, 63, 64, 200, good.len() / 2, good.len() - 1] {
        refused(&device, &write(dir, "cut.kgb", &good[..cut]), "truncated");
    }

    // Unknown format version.
    let mut v = good.clone();
    v[8..10].copy_from_slice(&2u16.to_le_bytes());
    refused(
        &device,
        &write(dir, "v2fmt.kgb", &v),
        "unsupported bundle format version 2: it is newer",
    );
    v[8..10].copy_from_slice(&0u16.to_le_bytes());
    refused(
        &device,
        &write(dir, "v0fmt.kgb", &v),
        "version 0: it is older",
    );

    // An index built with another name normalizer.
    let other_norm = resign(&good, &keys, |m| {
        m.normalizer = "some-other-normalizer".into();
    });
    refused(
        &device,
        &write(dir, "norm.kgb", &other_norm),
        "normalizer `some-other-normalizer`",
    );

    // Wrong signature, untrusted key.
    let mut sig = good.clone();
    let prefix_len = BundleReader::open(Cursor::new(&good))
        .unwrap()
        .prefix()
        .bytes
        .len();
    sig[prefix_len - 10] ^= 0x40;
    refused(&device, &write(dir, "sig.kgb", &sig), "bad signature");
    let foreign = dir.join("foreign.kgb");
    pack(&tsv, "films", "2.0.0", &stranger, &foreign, &[]);
    refused(&device, &foreign, "not among the trusted keys");

    // Wrong `compatible` string.
    let other = dir.join("other.kgb");
    pack(
        &tsv,
        "films",
        "2.0.0",
        &keys,
        &other,
        &["--compatible", "thermostat-v9"],
    );
    refused(&device, &other, "compatible");

    // zstd bombs: a declared size over the limit, and a section that
    // decompresses far past its declared size.
    let declared = rebuild(
        &good,
        &keys,
        |name, _| {
            (name == "kg.index.postings").then(|| StoredSection {
                name: name.into(),
                required: true,
                compression: 1,
                stored: zeros_bomb(64),
                raw_len: 64 << 20,
                sha256_raw: [0; 32],
            })
        },
        vec![],
    );
    refused(
        &device,
        &write(dir, "bomb1.kgb", &declared),
        "over the limit",
    );
    let liar = rebuild(
        &good,
        &keys,
        |name, raw| {
            (name == "kg.index.postings").then(|| StoredSection {
                name: name.into(),
                required: true,
                compression: 1,
                stored: zeros_bomb(256),
                raw_len: raw.len() as u64,
                sha256_raw: [0; 32],
            })
        },
        vec![],
    );
    refused(
        &device,
        &write(dir, "bomb2.kgb", &liar),
        "decompression bomb",
    );

    // A required section from a newer format.
    let future = rebuild(
        &good,
        &keys,
        |_, _| None,
        vec![StoredSection::compress("kg.future.index", true, b"new", 3).unwrap()],
    );
    refused(
        &device,
        &write(dir, "future.kgb", &future),
        "not known to this runtime",
    );

    // Downgrade.
    let old = dir.join("old.kgb");
    pack(&tsv, "films", "0.9.0", &keys, &old, &[]);
    refused(&device, &old, "refusing to downgrade from 1.0.0 to 0.9.0");

    // A slot directory that cannot be written.
    let slot_b = device.data_dir.join("slots/b");
    let _ = std::fs::remove_dir_all(&slot_b);
    std::fs::write(&slot_b, b"in the way").unwrap();
    refused(&device, &v2, "not writable");
    std::fs::remove_file(&slot_b).unwrap();

    // Flipped bytes through the CLI (the library check below covers hundreds).
    for pos in [9, 70, prefix_len - 1, prefix_len + 3, good.len() - 2] {
        let mut f = good.clone();
        f[pos] ^= 0xff;
        let o = device.install(&write(dir, "flip.kgb", &f));
        assert!(!o.status.success(), "flip at {pos} was installed");
        assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
    }

    // Through all of it, the active bundle stayed and kept serving.
    assert_eq!(
        device.active(),
        Some(("a".into(), "films".into(), "1.0.0".into()))
    );
    assert_eq!(
        server.get_json("/v1/bundle")["manifest"]["version"],
        "1.0.0"
    );
    assert_eq!(server.get_json("/v1/entities/Blade%20Runner"), before);
    let o = device.kgbox(&["status", "--verify"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // And a good bundle still installs afterwards.
    device.install_ok(&v2);
    assert_eq!(device.active().unwrap().2, "2.0.0");
}

#[test]
fn every_flipped_byte_is_detected() {
    let work = tempfile::tempdir().unwrap();
    let keys = Keys::new(work.path(), "operator", 9);
    let bundle = work.path().join("b.kgb");
    pack(
        &small_tsv(work.path()),
        "films",
        "1.0.0",
        &keys,
        &bundle,
        &[],
    );
    let good = read(&bundle);
    let trusted = TrustedKeys::new(vec![keys.key.public()]);
    let check = |bytes: &[u8]| -> Result<(), String> {
        let mut r = BundleReader::open(Cursor::new(bytes)).map_err(|e| e.to_string())?;
        r.verify_all(&trusted, &Limits::default(), include_in_image)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    check(&good).unwrap();
    // Every byte of the prefix (header, table, manifest, signature) plus
    // evenly spread positions in the data: several hundred in all.
    let prefix_len = BundleReader::open(Cursor::new(&good))
        .unwrap()
        .prefix()
        .bytes
        .len();
    let step = ((good.len() - prefix_len) / 300).max(1);
    let positions: Vec<usize> = (0..prefix_len)
        .step_by(3)
        .chain((prefix_len..good.len()).step_by(step))
        .chain([good.len() - 1])
        .collect();
    assert!(positions.len() >= 300, "{}", positions.len());
    for &pos in &positions {
        for mask in [0x01u8, 0x80] {
            let mut bad = good.clone();
            bad[pos] ^= mask;
            let err = check(&bad).err();
            assert!(
                err.is_some(),
                "flip {mask:#x} at {pos} of {} went unnoticed",
                good.len()
            );
        }
    }
}

#[test]
fn unknown_optional_sections_are_skipped_and_downgrades_need_a_flag() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let keys = Keys::new(dir, "operator", 10);
    let tsv = small_tsv(dir);
    let v1 = dir.join("v1.kgb");
    pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
    let with_extra = rebuild(
        &read(&v1),
        &keys,
        |_, _| None,
        vec![StoredSection::compress("x.vendor.notes", false, b"ignored", 3).unwrap()],
    );
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&write(dir, "extra.kgb", &with_extra));
    let server = device.serve();
    assert_eq!(
        server.get_json("/v1/entities/Alien")["outgoing"]["total"],
        2
    );
    drop(server);

    let old = dir.join("old.kgb");
    pack(&tsv, "films", "0.5.0", &keys, &old, &[]);
    refused(&device, &old, "--allow-downgrade");
    let o = device.kgbox(&["install", "--allow-downgrade", old.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(device.active().unwrap().2, "0.5.0");
}

#[test]
fn unusable_data_dirs_and_configs_are_named() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let keys = Keys::new(dir, "operator", 11);
    let bundle = dir.join("b.kgb");
    pack(&small_tsv(dir), "films", "1.0.0", &keys, &bundle, &[]);

    // The data dir is a regular file.
    let device = Device::new(&[&keys.public], "");
    std::fs::write(&device.data_dir, b"not a directory").unwrap();
    refused(&device, &bundle, "not writable");
    assert_eq!(std::fs::read(&device.data_dir).unwrap(), b"not a directory");

    // A read-only data dir (permissions do not bind root, so only as a user).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let ro = Device::new(&[&keys.public], "");
        std::fs::create_dir_all(&ro.data_dir).unwrap();
        std::fs::set_permissions(&ro.data_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        refused(&ro, &bundle, "not writable");
    }

    // No trusted keys, a key file that is not a key.
    let none = Device::new(&[], "");
    refused(&none, &bundle, "no trusted keys");
    let junk = write(dir, "junk.pub", b"hello");
    let bad_key = Device::new(&[&junk], "");
    refused(&bad_key, &bundle, "junk.pub");
    // A secret key given where a public key belongs is named as such.
    let swapped = Device::new(&[&keys.secret], "");
    refused(&swapped, &bundle, "kgbox-ed25519-secret");

    // verify with --trust, and against the wrong key.
    let o = none.kgbox(&[
        "verify",
        bundle.to_str().unwrap(),
        "--trust",
        keys.public.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("OK: films 1.0.0"), "{}", stdout(&o));
    let other = Keys::new(dir, "other", 12);
    let o = none.kgbox(&[
        "verify",
        bundle.to_str().unwrap(),
        "--trust",
        other.public.to_str().unwrap(),
    ]);
    assert!(
        stderr(&o).contains("not among the trusted keys"),
        "{}",
        stderr(&o)
    );
}

/// A bundle signed by a trusted key whose sections are structurally bad
/// once decompressed (entity-name offsets that do not match the names):
/// `verify` refuses it as `install` does, and `PUT /v1/bundles` answers 4xx.
#[test]
fn structurally_bad_sections_are_refused_by_verify_install_and_put() {
    const TOKEN: &str = "structural-token";
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let keys = Keys::new(dir, "operator", 7);
    let tsv = small_tsv(dir);
    let v1 = dir.join("v1.kgb");
    let v2 = dir.join("v2.kgb");
    pack(&tsv, "films", "1.0.0", &keys, &v1, &[]);
    pack(&tsv, "films", "2.0.0", &keys, &v2, &[]);
    let lie = rebuild(
        &read(&v2),
        &keys,
        |name, raw| {
            (name == kgbox_bundle::sections::ENTITY_NAMES).then(|| {
                let mut longer = raw.to_vec();
                longer.extend_from_slice(&[b'x'; 4096]);
                StoredSection::compress(name, true, &longer, 3).unwrap()
            })
        },
        Vec::new(),
    );
    let lie = write(dir, "lie.kgb", &lie);
    let device = Device::new(&[&keys.public], "");
    device.install_ok(&v1);

    let o = device.kgbox(&["verify", lie.to_str().unwrap()]);
    assert!(!o.status.success(), "verify passed: {}", stdout(&o));
    let verify_err = stderr(&o);
    assert!(!verify_err.contains("panicked"), "{verify_err}");
    assert!(verify_err.contains("kg.entities.offsets"), "{verify_err}");
    refused(&device, &lie, "kg.entities.offsets");

    let server = device.serve_with_env(&[("KGBOX_ADMIN_TOKEN", TOKEN)]);
    let (status, v) = server.put_bytes("/v1/bundles", Some(TOKEN), &read(&lie));
    assert!((400..500).contains(&status), "{status}: {v}");
    assert_eq!(v["error"]["code"], "bundle_rejected", "{v}");
    // Still serving version 1, and a good bundle installs afterwards.
    assert_eq!(
        server.get_json("/v1/bundle")["manifest"]["version"],
        "1.0.0"
    );
    let (status, v) = server.put_bytes("/v1/bundles", Some(TOKEN), &read(&v2));
    assert_eq!(status, 200, "{v}");
}

/// A FIFO (or any non-regular file) given as the bundle is refused at
/// once by `verify` and `install`, never waited on.
#[test]
fn fifos_devices_directories_and_links_to_them_are_refused_at_once() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    let keys = Keys::new(dir, "operator", 7);
    let fifo = dir.join("bundle.kgb");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let device = Device::new(&[&keys.public], "");
    // Links to special files are refused as the files are.
    let link_to_fifo = dir.join("link-to-fifo.kgb");
    std::os::unix::fs::symlink(&fifo, &link_to_fifo).unwrap();
    let link_to_zero = dir.join("link-to-zero.kgb");
    std::os::unix::fs::symlink("/dev/zero", &link_to_zero).unwrap();
    let dev_zero = PathBuf::from("/dev/zero");
    for (cmd, path) in [
        ("verify", &fifo),
        ("install", &fifo),
        ("verify", &dir.to_path_buf()),
        ("install", &link_to_fifo),
        ("verify", &link_to_zero),
        ("install", &dev_zero),
    ] {
        let mut child = device
            .command(&[cmd, path.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("kgbox {cmd} on {} hangs", path.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(!status.success(), "kgbox {cmd} accepted {}", path.display());
        assert!(err.contains("not a regular file"), "{cmd}: {err}");
    }
}
