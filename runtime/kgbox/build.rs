//! Joins the web console (`src/http/console/`) into the one page `GET /`
//! serves: `index.html` with `console.css` and `console.js` put inline
//! where it links them, as a `<style>` and a `<script>` block. The page
//! then needs nothing from anywhere else, and the Content-Security-Policy
//! allows those two blocks by their hashes (`src/http/console.rs`).

use std::path::Path;

const DIR: &str = "src/http/console";

/// Each tag `index.html` links a file with, the file, and the element its
/// contents go into.
const INLINED: [(&str, &str, &str); 2] = [
    (
        r#"<link rel="stylesheet" href="console.css">"#,
        "console.css",
        "style",
    ),
    (
        r#"<script src="console.js"></script>"#,
        "console.js",
        "script",
    ),
];

fn read(file: &str) -> String {
    println!("cargo::rerun-if-changed={DIR}/{file}");
    let path = Path::new(DIR).join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn main() {
    let mut page = read("index.html");
    for (link, file, element) in INLINED {
        assert_eq!(
            page.matches(link).count(),
            1,
            "{DIR}/index.html must link {file} exactly once, as {link}"
        );
        let block = format!("<{element}>\n{}</{element}>", read(file));
        page = page.replacen(link, &block, 1);
    }
    let out =
        Path::new(&std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("console.html");
    std::fs::write(&out, page).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
