//! Every error class's code has its section in the troubleshooting page that its help
//! points to.

const PAGE: &str = include_str!("../../../docs/troubleshooting.md");
const SOURCES: [&str; 5] = [
    include_str!("../src/error.rs"),
    include_str!("../src/io/mod.rs"),
    include_str!("../src/schedule/parse.rs"),
    include_str!("../src/spf/mod.rs"),
    include_str!("../src/affine/mod.rs"),
];

#[test]
fn every_error_code_has_a_troubleshooting_section() {
    let mut codes: Vec<&str> = Vec::new();
    for source in SOURCES {
        for (at, _) in source.match_indices("sparsec::") {
            let code: &str = source[at..]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == ':' || c == '_'))
                .next()
                .unwrap();
            // Paths such as `sparsec::notation::parse` in doc comments are not codes.
            let quoted = source[..at].ends_with('"') || source[..at].ends_with("code(");
            if quoted && !codes.contains(&code) {
                codes.push(code);
            }
        }
    }
    assert!(codes.len() >= 12, "{codes:?}");
    for code in codes {
        assert!(
            PAGE.contains(&format!("\n## {code}\n")),
            "docs/troubleshooting.md has no section `## {code}`"
        );
    }
}
